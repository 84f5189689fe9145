/**
 * Element-wise kernels: binary ops with broadcasting, unary ops, affine (x*scale + shift), clamp, where.
 *
 * Scheme: one invocation per element, or per 4 elements (vec4 loads and stores: on lavapipe every
 * storage-buffer load is a per-lane scalar load, so a vec4 load moves 4x the data for the same cost).
 * A contiguous tensor of n elements runs as a vec4 "body" over the first floor(n/4)*4 elements and a scalar
 * "tail" over the last n % 4. Binary ops first merge dimensions that are contiguous for every operand and
 * drop size-1 dimensions. Then:
 * - fast kernel: each operand is the output's layout, a scalar, a row broadcast (index i % L) or a column
 *   broadcast (index i / L); no per-dimension index arithmetic; vec4 unless a row/column splits a vec4;
 * - strided kernel: specialised on the rank, decomposes each output index into coordinates (div/mod per
 *   dimension, which lavapipe scalarises); on vec4s when the innermost dimension is a multiple of 4 and
 *   each operand reads it contiguously or broadcasts it (e.g. [B, T, C] + [B, 1, C]).
 * Outputs must not alias inputs: WebGPU rejects a buffer bound read-only and writable in one dispatch.
 *
 * This file also exports the small dispatch helpers the other kernel families share (workgroup counts,
 * uniform packing, dimension merging, NaN-safe WGSL functions).
 */
import type { FloatDType } from "../core/dtype.js";
import type { BinaryOp, UnaryOp } from "../core/ops.js";
import { type Binding, type GpuContext, grid } from "../gpu/context.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

// ---------------------------------------------------------------------------------------------------
// Shared helpers

/** Invocations per workgroup of the 1-D kernels. */
export const WORKGROUP_SIZE = 256;

/** Kernels index at most this many dimensions (two vec4<u32> of shape/strides in the uniform block). */
export const MAX_RANK = 8;

/** Workgroup counts for a 1-D kernel of `invocations` threads, split over x and y past 65535 workgroups. */
export function workgroupsFor(invocations: number, workgroupSize = WORKGROUP_SIZE): [number, number] {
  return grid(Math.ceil(invocations / workgroupSize));
}

/** WGSL: the entry point of a 1-D kernel dispatched with `workgroupsFor`, defining its flat index `i`. */
export function flatMain(workgroupSize = WORKGROUP_SIZE): string {
  return `@compute @workgroup_size(${workgroupSize})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = gid.x + gid.y * groups.x * ${workgroupSize}u;`;
}

const bitsView = new DataView(new ArrayBuffer(4));

/** The bit pattern of `value` as an f32, for uniform blocks packed as u32 words. */
export function f32Bits(value: number): number {
  bitsView.setFloat32(0, value, true);
  return bitsView.getUint32(0, true);
}

/** A uniform block of u32 words (pass floats through `f32Bits`, negative ints through `>>> 0`). */
export function uniforms(...words: number[]): Uint32Array {
  const block = new Uint32Array(words.length);
  for (let k = 0; k < words.length; k++) {
    const word = words[k]!;
    if (!Number.isInteger(word) || word < 0 || word > 0xffffffff) {
      throw new RangeError(`uniform word ${k} is ${word}: expected a u32`);
    }
    block[k] = word;
  }
  return block;
}

/** `shape` (or strides) padded to MAX_RANK words, for `array<vec4u, 2>` uniform fields. */
export function rankWords(values: readonly number[]): number[] {
  const words = new Array<number>(MAX_RANK).fill(0);
  values.forEach((v, d) => {
    words[d] = v;
  });
  return words;
}

/**
 * WGSL helpers that do not depend on the compiler honouring NaN: lavapipe folds `x != x` to false, so
 * NaN and infinity are recognised from bit patterns, and made at run time from private variables (a
 * constant NaN is a shader-creation error).
 */
export const FLOAT_BITS_WGSL = /* wgsl */ `
var<private> NAN_BITS: u32 = 0x7fc00000u;
var<private> INF_BITS: u32 = 0x7f800000u;
fn isNan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn isFinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn nan() -> f32 { return bitcast<f32>(NAN_BITS); }
fn infinity() -> f32 { return bitcast<f32>(INF_BITS); }
`;

/** Row-major (contiguous) element strides of `shape`. */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= shape[d]!;
  }
  return strides;
}

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((product, size) => product * size, 1);
}

/**
 * The same iteration space with fewer dimensions: size-1 dimensions dropped, and neighbours merged where
 * every operand's strides allow (stride[d] == stride[d+1] * shape[d+1], which includes broadcast pairs).
 * Row-major order of the elements is unchanged.
 */
export function simplifyDims(
  shape: readonly number[],
  stridesPerOperand: readonly (readonly number[])[],
): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const outStrides: number[][] = stridesPerOperand.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    const size = shape[d]!;
    if (size === 1) continue;
    const last = outShape.length - 1;
    const mergeable =
      last >= 0 && stridesPerOperand.every((strides, k) => outStrides[k]![last] === strides[d]! * size);
    if (mergeable) {
      outShape[last] = outShape[last]! * size;
      stridesPerOperand.forEach((strides, k) => {
        outStrides[k]![last] = strides[d]!;
      });
    } else {
      outShape.push(size);
      stridesPerOperand.forEach((strides, k) => {
        outStrides[k]!.push(strides[d]!);
      });
    }
  }
  return { shape: outShape, strides: outStrides };
}

/** Throws unless `shape` and each strides array are lists of non-negative integers of the same length. */
export function checkShape(
  what: string,
  shape: readonly number[],
  strides: Record<string, readonly number[]> = {},
): void {
  const isCount = (v: number) => Number.isInteger(v) && v >= 0;
  if (!shape.every(isCount))
    throw new RangeError(`${what}: shape [${shape}] must hold non-negative integers`);
  for (const [name, values] of Object.entries(strides)) {
    if (values.length !== shape.length) {
      throw new RangeError(`${what}: ${name} has ${values.length} entries for a ${shape.length}-d shape`);
    }
    if (!values.every(isCount)) {
      throw new RangeError(`${what}: ${name} [${values}] must hold non-negative integers`);
    }
  }
}

export function checkCount(what: string, n: number): void {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${what}: n = ${n} must be a non-negative integer`);
}

/** WGSL type of `width` elements of `scalar`. */
export function vectorOf(scalar: "f32" | "i32" | "u32" | "f16", width: 1 | 4): string {
  return width === 4 ? `vec4<${scalar}>` : scalar;
}

/** How floats are stored in a kernel's buffers: kernels compute in f32 and convert at loads and stores. */
export type FloatStorage = FloatDType;

/** Bytes one element of `storage` takes in a buffer. */
export const storageBytes = (storage: FloatStorage): number => (storage === "f16" ? 2 : 4);

/** WGSL prefix enabling f16 where any of the storages needs it. */
export const enableFor = (...storages: ("f32" | "i32" | "f16")[]): string =>
  storages.includes("f16") ? "enable f16;\n" : "";

/** WGSL: `expr` (read from `storage`) as f32 of `width`. */
export const loadF32 = (storage: FloatStorage, width: 1 | 4, expr: string): string =>
  storage === "f32" ? expr : `${vectorOf("f32", width)}(${expr})`;

/** WGSL: the f32 `expr` of `width` converted for storing into `storage`. */
export const storeAs = (storage: FloatStorage, width: 1 | 4, expr: string): string =>
  storage === "f32" ? expr : `${vectorOf(storage, width)}(${expr})`;

/**
 * WGSL expression applying a scalar expression per component: `expr("")` for width 1, and
 * `vec4<scalar>(expr(".x"), ..., expr(".w"))` for width 4.
 */
export function perComponent(scalar: string, width: 1 | 4, expr: (component: string) => string): string {
  if (width === 1) return expr("");
  return `vec4<${scalar}>(${[".x", ".y", ".z", ".w"].map(expr).join(", ")})`;
}

/**
 * Record a kernel over n contiguous elements as a vec4 body (floor(n/4) quads, from element 0) and a
 * scalar tail (the last n % 4 elements). `record(width, start, count)` records one dispatch of `count`
 * invocations beginning at item `start` (in quads for width 4, elements for width 1).
 */
export function recordBodyAndTail(
  n: number,
  record: (width: 1 | 4, start: number, count: number) => void,
): void {
  const quads = Math.floor(n / 4);
  if (quads > 0) record(4, 0, quads);
  if (n > quads * 4) record(1, quads * 4, n - quads * 4);
}

// ---------------------------------------------------------------------------------------------------
// Binary ops

const BINARY_WGSL: Record<BinaryOp, string> = {
  add: "a + b",
  sub: "a - b",
  mul: "a * b",
  div: "a / b",
  // WGSL leaves max/min of NaN to the implementation; PyTorch propagates NaN.
  max: "select(max(a, b), a + b, isNan(a) || isNan(b))",
  min: "select(min(a, b), a + b, isNan(a) || isNan(b))",
  pow: "powReal(a, b)",
  gt: "select(0.0, 1.0, a > b)",
  ge: "select(0.0, 1.0, a >= b)",
  lt: "select(0.0, 1.0, a < b)",
  le: "select(0.0, 1.0, a <= b)",
  eq: "select(0.0, 1.0, a == b)",
};

/**
 * pow as Math.pow: WGSL's pow(a, b) is exp2(b * log2(a)), undefined for a <= 0, where an integer exponent
 * (or a zero base) still has a real answer.
 */
const POW_WGSL = /* wgsl */ `
fn powReal(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (isNan(a) || isNan(b)) { return nan(); }
  let negativeBase = (bitcast<u32>(a) & 0x80000000u) != 0u; // -0 included: (-0)^-1 is -inf
  let integral = b == trunc(b);
  let odd = integral && trunc(b * 0.5) != b * 0.5;
  if (negativeBase && !integral && a != 0.0) { return nan(); }
  let magnitude = select(pow(abs(a), b), select(0.0, infinity(), b < 0.0), a == 0.0);
  return select(magnitude, -magnitude, negativeBase && odd);
}
`;

/** How an operand of a binary op is indexed from the flat output index `e` in the fast kernel. */
export type Access =
  | { kind: "same" } // e
  | { kind: "scalar" } // 0
  | { kind: "row"; length: number } // e % length
  | { kind: "column"; length: number }; // e / length

/** Whether dimensions [0, end) are row-major contiguous by themselves (the last of them has stride 1). */
function isPrefixContiguous(shape: number[], strides: number[], end: number): boolean {
  let expected = 1;
  for (let d = end - 1; d >= 0; d--) {
    if (strides[d] !== expected) return false;
    expected *= shape[d]!;
  }
  return true;
}

/** The fast-kernel access pattern of an operand with these (simplified) strides, if it has one. */
function classifyAccess(shape: number[], strides: number[]): Access | undefined {
  const rank = shape.length;
  if (isPrefixContiguous(shape, strides, rank)) return { kind: "same" };
  if (strides.every((s) => s === 0)) return { kind: "scalar" };
  for (let split = 1; split < rank; split++) {
    const tail = shape.slice(split);
    const tailSize = elementCount(tail);
    const head = strides.slice(0, split);
    const rest = strides.slice(split);
    if (head.every((s) => s === 0) && isPrefixContiguous(tail, rest, tail.length)) {
      return { kind: "row", length: tailSize };
    }
    if (rest.every((s) => s === 0) && isPrefixContiguous(shape, strides, split)) {
      return { kind: "column", length: tailSize };
    }
  }
  return undefined;
}

/** Whether a vec4 body can read this operand: rows and columns must not split a quad. */
function quadFriendly(access: Access): boolean {
  return access.kind === "same" || access.kind === "scalar" || access.length % 4 === 0;
}

/** The binding declaration and per-item load of one operand of the fast binary kernel. */
function fastOperand(
  name: string,
  binding: number,
  access: Access,
  width: 1 | 4,
  storage: FloatStorage,
): { decl: string; load: string } {
  // Quad-wise operands (same layout, rows) bind as vec4; broadcast ones as scalars read once per item.
  const vectorLoad = width === 4 && (access.kind === "same" || access.kind === "row");
  const type = vectorOf(storage, vectorLoad ? 4 : 1);
  const decl = `@group(0) @binding(${binding}) var<storage, read> ${name}: array<${type}>;`;
  const item = "params.start + i"; // quad index (width 4) or element index (width 1)
  const element = width === 4 ? `(${item}) * 4u` : item;
  const lengthField = `params.${name}Length`;
  let index: string;
  switch (access.kind) {
    case "same":
      index = item;
      break;
    case "scalar":
      index = "0u";
      break;
    case "row":
      index = width === 4 ? `(${item}) % (${lengthField} / 4u)` : `(${item}) % ${lengthField}`;
      break;
    case "column":
      index = `(${element}) / ${lengthField}`;
      break;
  }
  return { decl, load: `let ${name}Item = ${loadF32(storage, vectorLoad ? 4 : 1, `${name}[${index}]`)};` };
}

function buildFastBinaryCode(
  op: BinaryOp,
  aAccess: Access,
  bAccess: Access,
  width: 1 | 4,
  storage: FloatStorage,
): string {
  const a = fastOperand("a", 0, aAccess, width, storage);
  const b = fastOperand("b", 1, bAccess, width, storage);
  const component = (access: Access) => (c: string) =>
    width === 4 && (access.kind === "same" || access.kind === "row") ? c : "";
  const ca = component(aAccess);
  const cb = component(bAccess);
  return /* wgsl */ `${enableFor(storage)}
${FLOAT_BITS_WGSL}
${op === "pow" ? POW_WGSL : ""}
${a.decl}
${b.decl}
@group(0) @binding(2) var<storage, read_write> out: array<${vectorOf(storage, width)}>;
struct Params { count: u32, start: u32, aLength: u32, bLength: u32 }
@group(0) @binding(3) var<uniform> params: Params;

fn apply(a: f32, b: f32) -> f32 { return ${BINARY_WGSL[op]}; }

${flatMain()}
  if (i >= params.count) { return; }
  ${a.load}
  ${b.load}
  out[params.start + i] = ${storeAs(
    storage,
    width,
    perComponent("f32", width, (c) => `apply(aItem${ca(c)}, bItem${cb(c)})`),
  )};
}`;
}

/**
 * The strided kernel's view of an operand: with width 4, a "vector" operand (innermost stride 1) is read
 * as vec4s, strides counted in vec4s; a "splat" operand (innermost stride 0) reads one f32 for all 4 lanes
 * of the vec4, strides counted in elements.
 */
export type StridedOperand = "scalar-read" | "vector" | "splat";

function buildStridedBinaryCode(
  op: BinaryOp,
  rank: number,
  width: 1 | 4,
  kinds: [StridedOperand, StridedOperand],
  storage: FloatStorage,
): string {
  const steps: string[] = [];
  for (let d = rank - 1; d >= 0; d--) {
    const at = `[${d >> 2}][${d & 3}]`;
    const coord = d === 0 ? "rest" : `rest % params.shape${at}`;
    steps.push(`  { let c = ${coord};
    ia += c * params.aStrides${at};
    ib += c * params.bStrides${at};${d > 0 ? `\n    rest = rest / params.shape${at};` : ""} }`);
  }
  const widthOf = (kind: StridedOperand) => (kind === "vector" ? 4 : 1);
  const component = (kind: StridedOperand) => (c: string) => (kind === "vector" ? c : "");
  const [ca, cb] = [component(kinds[0]), component(kinds[1])];
  return /* wgsl */ `${enableFor(storage)}
${FLOAT_BITS_WGSL}
${op === "pow" ? POW_WGSL : ""}
@group(0) @binding(0) var<storage, read> a: array<${vectorOf(storage, widthOf(kinds[0]))}>;
@group(0) @binding(1) var<storage, read> b: array<${vectorOf(storage, widthOf(kinds[1]))}>;
@group(0) @binding(2) var<storage, read_write> out: array<${vectorOf(storage, width)}>;
struct Params { count: u32, rank: u32, pad0: u32, pad1: u32,
  shape: array<vec4u, 2>, aStrides: array<vec4u, 2>, bStrides: array<vec4u, 2> }
@group(0) @binding(3) var<uniform> params: Params;

fn apply(a: f32, b: f32) -> f32 { return ${BINARY_WGSL[op]}; }

${flatMain()}
  if (i >= params.count) { return; }
  var rest = i;
  var ia = 0u;
  var ib = 0u;
${steps.join("\n")}
  let aItem = ${loadF32(storage, widthOf(kinds[0]), "a[ia]")};
  let bItem = ${loadF32(storage, widthOf(kinds[1]), "b[ib]")};
  out[i] = ${storeAs(
    storage,
    width,
    perComponent("f32", width, (c) => `apply(aItem${ca(c)}, bItem${cb(c)})`),
  )};
}`;
}

/**
 * The strided plan on vec4s when the innermost dimension has a multiple of 4 elements and each operand
 * reads it contiguously (its other strides then multiples of 4) or broadcasts it (stride 0).
 */
function vectorizeStrided(
  shape: number[],
  operands: [number[], number[]],
): { shape: number[]; strides: [number[], number[]]; kinds: [StridedOperand, StridedOperand] } | undefined {
  const last = shape.length - 1;
  if (last < 0 || shape[last]! % 4 !== 0) return undefined;
  const kinds: StridedOperand[] = [];
  const strides: number[][] = [];
  for (const operand of operands) {
    if (operand[last] === 0) {
      kinds.push("splat");
      strides.push(operand);
    } else if (operand[last] === 1 && operand.every((s, d) => d === last || s % 4 === 0)) {
      kinds.push("vector");
      strides.push(operand.map((s, d) => (d === last ? 1 : s / 4)));
    } else {
      return undefined;
    }
  }
  return {
    shape: shape.map((size, d) => (d === last ? size / 4 : size)),
    strides: strides as [number[], number[]],
    kinds: kinds as [StridedOperand, StridedOperand],
  };
}

function accessLength(access: Access): number {
  return access.kind === "row" || access.kind === "column" ? access.length : 0;
}

/** How `binary` will run for these operands: which kernel, over which simplified dimensions. */
export type BinaryPlan =
  | { kernel: "fast"; a: Access; b: Access; vectorized: boolean }
  /** Over the simplified dimensions; with width 4, in vec4 units of the innermost dimension. */
  | {
      kernel: "strided";
      width: 1 | 4;
      shape: number[];
      aStrides: number[];
      bStrides: number[];
      kinds: [StridedOperand, StridedOperand];
    };

export function planBinary(
  shape: readonly number[],
  aStrides: readonly number[],
  bStrides: readonly number[],
): BinaryPlan {
  checkShape("binary", shape, { aStrides, bStrides });
  const simple = simplifyDims(shape, [contiguousStrides(shape), aStrides, bStrides]);
  const [, a, b] = simple.strides as [number[], number[], number[]];
  if (simple.shape.length > MAX_RANK) {
    throw new RangeError(`binary: shape [${shape}] has more than ${MAX_RANK} non-mergeable dimensions`);
  }
  const aAccess = classifyAccess(simple.shape, a);
  const bAccess = classifyAccess(simple.shape, b);
  if (aAccess && bAccess) {
    return {
      kernel: "fast",
      a: aAccess,
      b: bAccess,
      vectorized: quadFriendly(aAccess) && quadFriendly(bAccess),
    };
  }
  const quads = vectorizeStrided(simple.shape, [a, b]);
  if (quads) {
    const [aQuads, bQuads] = quads.strides;
    return {
      kernel: "strided",
      width: 4,
      shape: quads.shape,
      aStrides: aQuads,
      bStrides: bQuads,
      kinds: quads.kinds,
    };
  }
  const kinds: [StridedOperand, StridedOperand] = ["scalar-read", "scalar-read"];
  return { kernel: "strided", width: 1, shape: simple.shape, aStrides: a, bStrides: b, kinds };
}

/**
 * out[i] = a[i·aStrides] op b[i·bStrides] for every index i of `shape` (out is contiguous). A stride of 0
 * broadcasts. Comparisons give 1.0 or 0.0; max and min propagate NaN; pow follows Math.pow. With
 * dtype "f16" all three buffers hold halves (computed in f32, rounded on store).
 */
export function binary(
  ctx: GpuContext,
  args: {
    op: BinaryOp;
    a: Binding;
    b: Binding;
    out: Binding;
    shape: readonly number[];
    aStrides: readonly number[];
    bStrides: readonly number[];
    dtype?: FloatStorage;
  },
): void {
  const { op } = args;
  const storage = args.dtype ?? "f32";
  if (!(op in BINARY_WGSL)) throw new RangeError(`binary: unknown op "${op}"`);
  const plan = planBinary(args.shape, args.aStrides, args.bStrides);
  const n = elementCount(args.shape);
  if (n === 0) return;
  const bindings = [args.a, args.b, args.out];
  if (plan.kernel === "fast") {
    const record = (width: 1 | 4, start: number, count: number) => {
      const pipeline = ctx.pipeline(
        `binary ${op} ${storage}`,
        fastBinaryCode(op, plan.a, plan.b, width, storage),
      );
      const params = uniforms(count, start, accessLength(plan.a), accessLength(plan.b));
      ctx.dispatch(pipeline, bindings, params, workgroupsFor(count));
    };
    if (plan.vectorized) recordBodyAndTail(n, record);
    else record(1, 0, n);
    return;
  }
  const rank = plan.shape.length;
  const count = elementCount(plan.shape);
  const code = stridedBinaryCode(op, rank, plan.width, plan.kinds, storage);
  const pipeline = ctx.pipeline(`binary ${op} strided ${storage}`, code);
  const params = uniforms(
    count,
    rank,
    0,
    0,
    ...rankWords(plan.shape),
    ...rankWords(plan.aStrides),
    ...rankWords(plan.bStrides),
  );
  ctx.dispatch(pipeline, bindings, params, workgroupsFor(count));
}

// ---------------------------------------------------------------------------------------------------
// Unary ops

const UNARY_WGSL: Record<UnaryOp, string> = {
  neg: "-x",
  exp: "exp(x)",
  log: "log(x)",
  sqrt: "sqrt(x)",
  rsqrt: "inverseSqrt(x)",
  abs: "abs(x)",
  tanh: "tanhStable(x)",
  // exp(-x) overflows to inf for x < -88, giving the right limit 0 (and -0 for silu).
  sigmoid: "1.0 / (1.0 + exp(-x))",
  silu: "x / (1.0 + exp(-x))",
  relu: "select(x, 0.0, x < 0.0)",
  square: "x * x",
  reciprocal: "1.0 / x",
  sin: "sin(reduceAngle(x))",
  cos: "cos(reduceAngle(x))",
  sign: "sign(x)",
};

const UNARY_HELPERS_WGSL = /* wgsl */ `
// tanh without the inf/inf of (e^2x - 1)/(e^2x + 1): a series near 0 (where 1 - e loses digits), else
// (1 - e^-2|x|)/(1 + e^-2|x|) with the sign put back.
fn tanhStable(x: f32) -> f32 {
  let ax = abs(x);
  let x2 = x * x;
  let series = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))));
  let e = exp(-2.0 * ax);
  let far = (1.0 - e) / (1.0 + e);
  return select(select(far, -far, x < 0.0), series, ax < 0.125);
}

// WGSL only bounds sin/cos error on [-pi, pi]: subtract the nearest multiple of 2*pi first, in two parts
// (6.28125 has few mantissa bits, so k * 6.28125 is exact for |k| < 2^16).
fn reduceAngle(x: f32) -> f32 {
  let k = round(x * 0.15915494309189535);
  return (x - k * 6.28125) - k * 0.0019353071795864769;
}
`;

function buildUnaryCode(op: UnaryOp, width: 1 | 4, storage: FloatStorage): string {
  return /* wgsl */ `${enableFor(storage)}
${FLOAT_BITS_WGSL}
${UNARY_HELPERS_WGSL}
@group(0) @binding(0) var<storage, read> x: array<${vectorOf(storage, width)}>;
@group(0) @binding(1) var<storage, read_write> out: array<${vectorOf(storage, width)}>;
struct Params { count: u32, start: u32 }
@group(0) @binding(2) var<uniform> params: Params;

fn apply(x: f32) -> f32 { return ${UNARY_WGSL[op]}; }

${flatMain()}
  if (i >= params.count) { return; }
  let item = ${loadF32(storage, width, "x[params.start + i]")};
  out[params.start + i] = ${storeAs(
    storage,
    width,
    perComponent("f32", width, (c) => `apply(item${c})`),
  )};
}`;
}

/** out[i] = op(x[i]) for i < n (x and out f16 with dtype "f16": computed in f32). */
export function unary(
  ctx: GpuContext,
  args: { op: UnaryOp; x: Binding; out: Binding; n: number; dtype?: FloatStorage },
): void {
  const { op, n } = args;
  const storage = args.dtype ?? "f32";
  if (!(op in UNARY_WGSL)) throw new RangeError(`unary: unknown op "${op}"`);
  checkCount("unary", n);
  recordBodyAndTail(n, (width, start, count) => {
    const pipeline = ctx.pipeline(`unary ${op} ${storage}`, unaryCode(op, width, storage));
    ctx.dispatch(pipeline, [args.x, args.out], uniforms(count, start), workgroupsFor(count));
  });
}

// ---------------------------------------------------------------------------------------------------
// affine, clamp, where

function buildAffineCode(width: 1 | 4, storage: FloatStorage): string {
  const type = vectorOf(storage, width);
  return /* wgsl */ `${enableFor(storage)}
@group(0) @binding(0) var<storage, read> x: array<${type}>;
@group(0) @binding(1) var<storage, read_write> out: array<${type}>;
struct Params { count: u32, start: u32, scale: f32, shift: f32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  out[params.start + i] = ${storeAs(storage, width, `${loadF32(storage, width, "x[params.start + i]")} * params.scale + params.shift`)};
}`;
}

/** out[i] = x[i] * scale + shift for i < n (scale by a scalar, add a scalar, or both; f16 computes in f32). */
export function affine(
  ctx: GpuContext,
  args: { x: Binding; out: Binding; n: number; scale: number; shift: number; dtype?: FloatStorage },
): void {
  checkCount("affine", args.n);
  const storage = args.dtype ?? "f32";
  recordBodyAndTail(args.n, (width, start, count) => {
    const params = uniforms(count, start, f32Bits(args.scale), f32Bits(args.shift));
    const pipeline = ctx.pipeline(`affine ${storage}`, affineCode(width, storage));
    ctx.dispatch(pipeline, [args.x, args.out], params, workgroupsFor(count));
  });
}

function buildClampCode(width: 1 | 4): string {
  const type = vectorOf("f32", width);
  return /* wgsl */ `
${FLOAT_BITS_WGSL}
@group(0) @binding(0) var<storage, read> x: array<${type}>;
@group(0) @binding(1) var<storage, read_write> out: array<${type}>;
struct Params { count: u32, start: u32, low: f32, high: f32 }
@group(0) @binding(2) var<uniform> params: Params;

// min(max(...)) rather than clamp(): low > high is allowed and gives high, as in PyTorch; NaN stays NaN.
fn apply(x: f32) -> f32 { return select(min(max(x, params.low), params.high), x, isNan(x)); }

${flatMain()}
  if (i >= params.count) { return; }
  let item = x[params.start + i];
  out[params.start + i] = ${perComponent("f32", width, (c) => `apply(item${c})`)};
}`;
}

/** out[i] = min(max(x[i], min), max) for i < n (NaN stays NaN). */
export function clamp(
  ctx: GpuContext,
  args: { x: Binding; out: Binding; n: number; min: number; max: number },
): void {
  checkCount("clamp", args.n);
  recordBodyAndTail(args.n, (width, start, count) => {
    const params = uniforms(count, start, f32Bits(args.min), f32Bits(args.max));
    ctx.dispatch(ctx.pipeline("clamp", clampCode(width)), [args.x, args.out], params, workgroupsFor(count));
  });
}

function buildWhereCode(width: 1 | 4): string {
  const type = vectorOf("f32", width);
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> cond: array<${type}>;
@group(0) @binding(1) var<storage, read> a: array<${type}>;
@group(0) @binding(2) var<storage, read> b: array<${type}>;
@group(0) @binding(3) var<storage, read_write> out: array<${type}>;
struct Params { count: u32, start: u32 }
@group(0) @binding(4) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  let j = params.start + i;
  out[j] = select(b[j], a[j], cond[j] != ${type}(0.0));
}`;
}

/** out[i] = cond[i] != 0 ? a[i] : b[i] for i < n (all four of n elements). */
export function where(
  ctx: GpuContext,
  args: { cond: Binding; a: Binding; b: Binding; out: Binding; n: number },
): void {
  checkCount("where", args.n);
  recordBodyAndTail(args.n, (width, start, count) => {
    ctx.dispatch(
      ctx.pipeline("where", whereCode(width)),
      [args.cond, args.a, args.b, args.out],
      uniforms(count, start),
      workgroupsFor(count),
    );
  });
}

// The kernels' WGSL, built once per distinct parameters.
const fastBinaryCode = cachedBuilder(buildFastBinaryCode);
const stridedBinaryCode = cachedBuilder(buildStridedBinaryCode);
const unaryCode = cachedBuilder(buildUnaryCode);
const affineCode = cachedBuilder(buildAffineCode);
const clampCode = cachedBuilder(buildClampCode);
const whereCode = cachedBuilder(buildWhereCode);
