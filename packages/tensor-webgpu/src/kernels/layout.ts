/**
 * Layout kernels: fill, strided copies (transpose, permute, slice, concat, broadcast-expand all become one
 * strided copy into a contiguous or strided destination), dtype casts, and f16 storage (two halves per u32).
 *
 * Scheme: copies move 32-bit words, so f32 and i32 share every kernel. A strided copy first merges
 * dimensions contiguous in both source and destination and drops size-1 ones; then the cheapest of:
 * - both sides contiguous: a buffer-to-buffer copy (a memcpy, no shader);
 * - a (batched) 2-d transpose with every extent and stride a multiple of 4: each invocation loads a 4x4
 *   block as 4 vec4 columns and stores it as 4 vec4 rows (4x fewer loads than one element per lane);
 * - the innermost dimension contiguous on both sides with sizes, strides and offsets multiples of 4: the
 *   general kernel on vec4 words;
 * - the general kernel (one word per invocation, its index decomposed into coordinates, rank baked in).
 */

import { type DType, dtypeBytes } from "../core/dtype.js";
import { float32ToFloat16Bits } from "../core/half-float.js";
import type { Binding, GpuContext } from "../gpu/context.js";
import {
  checkCount,
  checkShape,
  contiguousStrides,
  elementCount,
  enableFor,
  FLOAT_BITS_WGSL,
  f32Bits,
  flatMain,
  MAX_RANK,
  perComponent,
  rankWords,
  recordBodyAndTail,
  simplifyDims,
  uniforms,
  vectorOf,
  workgroupsFor,
} from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

export type { DType, FloatDType } from "../core/dtype.js";
export { dtypeBytes } from "../core/dtype.js";

// ---------------------------------------------------------------------------------------------------
// fill

function buildFillCode(width: 1 | 4): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> out: array<${vectorOf("u32", width)}>;
struct Params { count: u32, start: u32, bits: u32 }
@group(0) @binding(1) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  out[params.start + i] = ${vectorOf("u32", width)}(params.bits);
}`;
}

/**
 * out[i] = value for i < n, stored as f32 (default), i32 (value must then be a 32-bit integer) or f16
 * (rounded to nearest even; written as whole words of two halves, so with odd n the half after the last
 * element, inside the same word, is written too).
 */
export function fill(ctx: GpuContext, args: { out: Binding; n: number; value: number; dtype?: DType }): void {
  checkCount("fill", args.n);
  const dtype = args.dtype ?? "f32";
  if (dtype === "f16") {
    const half = float32ToFloat16Bits(args.value);
    fill(ctx, { out: args.out, n: Math.ceil(args.n / 2), value: half | (half << 16) | 0, dtype: "i32" });
    return;
  }
  let bits: number;
  if (dtype === "i32") {
    if (!Number.isInteger(args.value) || args.value < -(2 ** 31) || args.value >= 2 ** 31) {
      throw new RangeError(`fill: ${args.value} is not an i32`);
    }
    bits = args.value >>> 0;
  } else {
    bits = f32Bits(args.value);
  }
  recordBodyAndTail(args.n, (width, start, count) => {
    ctx.dispatch(
      ctx.pipeline("fill", fillCode(width)),
      [args.out],
      uniforms(count, start, bits),
      workgroupsFor(count),
    );
  });
}

// ---------------------------------------------------------------------------------------------------
// stridedCopy and permute

/** A binding as (buffer, byte offset), for buffer-to-buffer copies. */
function bufferOf(binding: Binding): { buffer: GPUBuffer; offset: number } {
  return "buffer" in binding
    ? { buffer: binding.buffer, offset: binding.offset ?? 0 }
    : { buffer: binding, offset: 0 };
}

/** The WGSL scalar a copy moves: 32-bit words for f32 and i32, halves for f16. */
const copyScalar = (dtype: DType) => (dtype === "f16" ? "f16" : "u32");

function buildGeneralCopyCode(rank: number, width: 1 | 4, dtype: DType): string {
  const type = vectorOf(copyScalar(dtype), width);
  const steps: string[] = [];
  for (let d = rank - 1; d >= 0; d--) {
    const at = `[${d >> 2}][${d & 3}]`;
    const coord = d === 0 ? "rest" : `rest % params.shape${at}`;
    steps.push(`  { let c = ${coord};
    source += c * params.xStrides${at};
    dest += c * params.outStrides${at};${d > 0 ? `\n    rest = rest / params.shape${at};` : ""} }`);
  }
  return /* wgsl */ `${enableFor(dtype)}
@group(0) @binding(0) var<storage, read> x: array<${type}>;
@group(0) @binding(1) var<storage, read_write> out: array<${type}>;
struct Params { count: u32, xOffset: u32, outOffset: u32, pad: u32,
  shape: array<vec4u, 2>, xStrides: array<vec4u, 2>, outStrides: array<vec4u, 2> }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  var rest = i;
  var source = params.xOffset;
  var dest = params.outOffset;
${steps.join("\n")}
  out[dest] = x[source];
}`;
}

/**
 * A batched transpose, out[b][r][c] = x[b][c][r]: each invocation moves one 4x4 block, loading 4 vec4
 * columns of x (contiguous along r) and storing 4 vec4 rows of out (contiguous along c). Consecutive
 * invocations walk r, so their loads are consecutive.
 */
const buildTransposeCode = (dtype: DType) => /* wgsl */ `${enableFor(dtype)}
@group(0) @binding(0) var<storage, read> x: array<vec4<${copyScalar(dtype)}>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<${copyScalar(dtype)}>>;
// Extents in elements (rows, cols multiples of 4); strides and offsets in vec4s.
struct Params { count: u32, rowQuads: u32, colQuads: u32, xOffset: u32, outOffset: u32,
  xBatchStride: u32, xColStride: u32, outBatchStride: u32, outRowStride: u32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  let rq = i % params.rowQuads;
  let cq = (i / params.rowQuads) % params.colQuads;
  let b = i / (params.rowQuads * params.colQuads);
  let source = params.xOffset + b * params.xBatchStride + cq * 4u * params.xColStride + rq;
  let c0 = x[source];
  let c1 = x[source + params.xColStride];
  let c2 = x[source + 2u * params.xColStride];
  let c3 = x[source + 3u * params.xColStride];
  let dest = params.outOffset + b * params.outBatchStride + rq * 4u * params.outRowStride + cq;
  out[dest] = vec4(c0.x, c1.x, c2.x, c3.x);
  out[dest + params.outRowStride] = vec4(c0.y, c1.y, c2.y, c3.y);
  out[dest + 2u * params.outRowStride] = vec4(c0.z, c1.z, c2.z, c3.z);
  out[dest + 3u * params.outRowStride] = vec4(c0.w, c1.w, c2.w, c3.w);
}`;

/** How `stridedCopy` will run, over the simplified dimensions. */
export type CopyPlan =
  | { kernel: "buffer-copy" }
  | { kernel: "transpose4x4"; transpose: TransposeView }
  /** `words` is the copy in units of `width` elements. */
  | { kernel: "strided"; width: 1 | 4; words: CopyLayout };

export interface CopyLayout {
  shape: number[];
  xStrides: number[];
  outStrides: number[];
  xOffset: number;
  outOffset: number;
}

const multipleOf4 = (v: number) => v % 4 === 0;

/** A batched transpose out[b][r][c] = x[b][c][r]: extents in elements, strides in elements. */
export interface TransposeView {
  batch: number;
  rows: number;
  cols: number;
  xBatch: number;
  xCol: number;
  outBatch: number;
  outRow: number;
}

/** The batched-transpose view of a copy ([batch,] rows, cols with x contiguous along rows), if it is one. */
function asTranspose(layout: CopyLayout): TransposeView | undefined {
  const { shape, xStrides, outStrides } = layout;
  const rank = shape.length;
  if (rank !== 2 && rank !== 3) return undefined;
  const [rows, cols] = [shape[rank - 2]!, shape[rank - 1]!];
  const batchStrides = rank === 3 ? [xStrides[0]!, outStrides[0]!] : [];
  const layoutFits =
    xStrides[rank - 2] === 1 &&
    outStrides[rank - 1] === 1 &&
    [
      rows,
      cols,
      xStrides[rank - 1]!,
      outStrides[rank - 2]!,
      layout.xOffset,
      layout.outOffset,
      ...batchStrides,
    ].every(multipleOf4);
  if (!layoutFits) return undefined;
  return {
    batch: rank === 3 ? shape[0]! : 1,
    rows,
    cols,
    xBatch: rank === 3 ? xStrides[0]! : 0,
    xCol: xStrides[rank - 1]!,
    outBatch: rank === 3 ? outStrides[0]! : 0,
    outRow: outStrides[rank - 2]!,
  };
}

/** The same copy on vec4 words, when the innermost dimension is contiguous on both sides and aligned. */
function asQuads(layout: CopyLayout): CopyLayout | undefined {
  const { shape, xStrides, outStrides } = layout;
  const last = shape.length - 1;
  if (last < 0 || xStrides[last] !== 1 || outStrides[last] !== 1 || !multipleOf4(shape[last]!))
    return undefined;
  const outer = [...xStrides.slice(0, last), ...outStrides.slice(0, last), layout.xOffset, layout.outOffset];
  if (!outer.every(multipleOf4)) return undefined;
  const quarter = (values: number[]) => values.map((v, d) => (d === last ? v : v / 4));
  return {
    shape: shape.map((v, d) => (d === last ? v / 4 : v)),
    xStrides: quarter(xStrides),
    outStrides: quarter(outStrides),
    xOffset: layout.xOffset / 4,
    outOffset: layout.outOffset / 4,
  };
}

function simplifyCopy(args: {
  shape: readonly number[];
  xStrides: readonly number[];
  outStrides?: readonly number[];
  xOffset?: number;
  outOffset?: number;
}): CopyLayout {
  const outStrides = args.outStrides ?? contiguousStrides(args.shape);
  checkShape("stridedCopy", args.shape, { xStrides: args.xStrides, outStrides });
  const xOffset = args.xOffset ?? 0;
  const outOffset = args.outOffset ?? 0;
  for (const [name, v] of [
    ["xOffset", xOffset],
    ["outOffset", outOffset],
  ] as const) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`stridedCopy: ${name} = ${v} must be >= 0`);
  }
  const simple = simplifyDims(args.shape, [args.xStrides, outStrides]);
  if (simple.shape.length > MAX_RANK) {
    throw new RangeError(
      `stridedCopy: shape [${args.shape}] has more than ${MAX_RANK} non-mergeable dimensions`,
    );
  }
  return {
    shape: simple.shape,
    xStrides: simple.strides[0]!,
    outStrides: simple.strides[1]!,
    xOffset,
    outOffset,
  };
}

function planFor(layout: CopyLayout): CopyPlan {
  const rank = layout.shape.length;
  if (rank === 0 || (rank === 1 && layout.xStrides[0] === 1 && layout.outStrides[0] === 1)) {
    return { kernel: "buffer-copy" };
  }
  const transpose = asTranspose(layout);
  if (transpose) return { kernel: "transpose4x4", transpose };
  const quads = asQuads(layout);
  return quads
    ? { kernel: "strided", width: 4, words: quads }
    : { kernel: "strided", width: 1, words: layout };
}

/** Which kernel `stridedCopy` picks for these arguments. */
export function planStridedCopy(args: {
  shape: readonly number[];
  xStrides: readonly number[];
  outStrides?: readonly number[];
  xOffset?: number;
  outOffset?: number;
}): CopyPlan {
  return planFor(simplifyCopy(args));
}

/**
 * out[outOffset + Σ idx·outStrides] = x[xOffset + Σ idx·xStrides] for every index idx of `shape` (strides
 * and offsets in elements; outStrides default to contiguous). Covers transpose/permute (permuted
 * xStrides), slice/narrow (xOffset and strides), concat (outOffset and outStrides of the whole output) and
 * expand (stride 0). x and out must be different buffers; f32 and i32 copy alike, f16 (dtype "f16")
 * moves halves.
 */
export function stridedCopy(
  ctx: GpuContext,
  args: {
    x: Binding;
    out: Binding;
    shape: readonly number[];
    xStrides: readonly number[];
    xOffset?: number;
    outStrides?: readonly number[];
    outOffset?: number;
    dtype?: DType;
  },
): void {
  const layout = simplifyCopy(args);
  const n = elementCount(layout.shape);
  if (n === 0) return;
  const source = bufferOf(args.x);
  const target = bufferOf(args.out);
  if (source.buffer === target.buffer)
    throw new RangeError("stridedCopy: x and out must be different buffers");
  const dtype = args.dtype ?? "f32";
  const bytes = dtypeBytes(dtype);
  let plan = planFor(layout);
  // Buffer copies move whole 4-byte words: halves at odd offsets or counts go through the kernel.
  if (
    plan.kernel === "buffer-copy" &&
    bytes === 2 &&
    [layout.xOffset, layout.outOffset, n].some((v) => v % 2)
  )
    plan = { kernel: "strided", width: 1, words: { ...layout, shape: [n], xStrides: [1], outStrides: [1] } };
  if (plan.kernel === "buffer-copy") {
    ctx.copy(
      source.buffer,
      source.offset + layout.xOffset * bytes,
      target.buffer,
      target.offset + layout.outOffset * bytes,
      n * bytes,
    );
    return;
  }
  if (plan.kernel === "transpose4x4") {
    const { transpose } = plan;
    const { batch, rows, cols } = transpose;
    const count = batch * (rows / 4) * (cols / 4);
    const params = uniforms(
      count,
      rows / 4,
      cols / 4,
      layout.xOffset / 4,
      layout.outOffset / 4,
      transpose.xBatch / 4,
      transpose.xCol / 4,
      transpose.outBatch / 4,
      transpose.outRow / 4,
    );
    ctx.dispatch(
      ctx.pipeline(`transpose 4x4 ${dtype}`, transposeCode(dtype)),
      [args.x, args.out],
      params,
      workgroupsFor(count),
    );
    return;
  }
  const { words } = plan;
  const count = elementCount(words.shape);
  const params = uniforms(
    count,
    words.xOffset,
    words.outOffset,
    0,
    ...rankWords(words.shape),
    ...rankWords(words.xStrides),
    ...rankWords(words.outStrides),
  );
  const rank = words.shape.length;
  const pipeline = ctx.pipeline(
    `strided copy rank ${rank} ${dtype}`,
    generalCopyCode(rank, plan.width, dtype),
  );
  ctx.dispatch(pipeline, [args.x, args.out], params, workgroupsFor(count));
}

/** out = x permuted: out's dimension d is x's dimension perm[d] (x contiguous of shape `shape`). */
export function permute(
  ctx: GpuContext,
  args: { x: Binding; out: Binding; shape: readonly number[]; perm: readonly number[]; dtype?: DType },
): void {
  const { shape, perm } = args;
  const sorted = [...perm].sort((p, q) => p - q);
  if (perm.length !== shape.length || sorted.some((p, d) => p !== d)) {
    throw new RangeError(`permute: [${perm}] is not a permutation of ${shape.length} dimensions`);
  }
  const strides = contiguousStrides(shape);
  stridedCopy(ctx, {
    x: args.x,
    out: args.out,
    shape: perm.map((p) => shape[p]!),
    xStrides: perm.map((p) => strides[p]!),
    dtype: args.dtype,
  });
}

// ---------------------------------------------------------------------------------------------------
// cast

const CAST_WGSL = {
  // Truncation toward zero, saturating at the i32 range, NaN -> 0 (WGSL leaves the edges to the device).
  f32ToI32: /* wgsl */ `
fn convert(v: f32) -> i32 {
  if (isNan(v)) { return 0; }
  if (v >= 2147483648.0) { return 2147483647; }
  if (v <= -2147483648.0) { return -2147483647 - 1; }
  return i32(v);
}`,
  i32ToF32: "fn convert(v: i32) -> f32 { return f32(v); }",
};

function buildCastCode(from: DType, to: DType, width: 1 | 4): string {
  return /* wgsl */ `
${FLOAT_BITS_WGSL}
${from === "f32" ? CAST_WGSL.f32ToI32 : CAST_WGSL.i32ToF32}
@group(0) @binding(0) var<storage, read> x: array<${vectorOf(from, width)}>;
@group(0) @binding(1) var<storage, read_write> out: array<${vectorOf(to, width)}>;
struct Params { count: u32, start: u32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  let item = x[params.start + i];
  out[params.start + i] = ${perComponent(to, width, (c) => `convert(item${c})`)};
}`;
}

/**
 * out[i] = x[i] converted: f32 -> i32 truncates toward zero (saturating, NaN -> 0); i32 -> f32 rounds;
 * f32 -> f16 rounds to nearest even (overflow to infinity), f16 -> f32 is exact. i32 <-> f16 is not a
 * cast of its own: go through f32.
 */
export function cast(
  ctx: GpuContext,
  args: { x: Binding; out: Binding; n: number; from: DType; to: DType },
): void {
  const { from, to, n } = args;
  checkCount("cast", n);
  for (const t of [from, to])
    if (t !== "f32" && t !== "i32" && t !== "f16") throw new RangeError(`cast: unknown dtype "${t}"`);
  if (from === to) {
    stridedCopy(ctx, { x: args.x, out: args.out, shape: [n], xStrides: [1], dtype: from });
    return;
  }
  if (from === "f16" || to === "f16") {
    if (from === "i32" || to === "i32") throw new RangeError(`cast: ${from} -> ${to} must go through f32`);
    // The f16 storage is packF16's layout; pack2x16float needs no shader-f16.
    if (to === "f16") packF16(ctx, { x: args.x, out: args.out, n });
    else unpackF16(ctx, { x: args.x, out: args.out, n });
    return;
  }
  recordBodyAndTail(n, (width, start, count) => {
    const pipeline = ctx.pipeline(`cast ${from}->${to}`, castCode(from, to, width));
    ctx.dispatch(pipeline, [args.x, args.out], uniforms(count, start), workgroupsFor(count));
  });
}

// ---------------------------------------------------------------------------------------------------
// f16 storage

/**
 * f32 -> binary16 with round-to-nearest-even through pack2x16float. WGSL leaves pack2x16float of values
 * outside the finite f16 range indeterminate, so those lanes are handled here: NaN -> quiet NaN (sign
 * kept), |x| >= 65520 (which rounds past the largest half, 65504) -> infinity; the rest are clamped to
 * +-65504 first (values in (65504, 65520) round to 65504).
 */
const PACK_F16_CODE = /* wgsl */ `
${FLOAT_BITS_WGSL}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
struct Params { words: u32, n: u32 }
@group(0) @binding(2) var<uniform> params: Params;

fn overflows(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) >= 0x477ff000u; } // |v| >= 65520, inf, NaN
fn overflowHalf(v: f32) -> u32 {
  let sign = (bitcast<u32>(v) >> 16u) & 0x8000u;
  return sign | select(0x7c00u, 0x7e00u, isNan(v));
}

${flatMain()}
  if (i >= params.words) { return; }
  let lo = x[2u * i];
  var hi = 0.0;
  if (2u * i + 1u < params.n) { hi = x[2u * i + 1u]; }
  let pair = vec2<f32>(select(lo, 0.0, overflows(lo)), select(hi, 0.0, overflows(hi)));
  let packed = pack2x16float(clamp(pair, vec2<f32>(-65504.0), vec2<f32>(65504.0)));
  let loHalf = select(packed & 0xffffu, overflowHalf(lo), overflows(lo));
  let hiHalf = select(packed >> 16u, overflowHalf(hi), overflows(hi));
  out[i] = loHalf | (hiHalf << 16u);
}`;

/**
 * Store n f32 values as halves: word i holds element 2i in its low 16 bits and element 2i+1 in its high
 * bits (0 when n is odd). out needs ceil(n/2) words.
 */
export function packF16(ctx: GpuContext, args: { x: Binding; out: Binding; n: number }): void {
  checkCount("packF16", args.n);
  const words = Math.ceil(args.n / 2);
  if (words === 0) return;
  ctx.dispatch(
    ctx.pipeline("pack f16", PACK_F16_CODE),
    [args.x, args.out],
    uniforms(words, args.n),
    workgroupsFor(words),
  );
}

const UNPACK_F16_CODE = /* wgsl */ `
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
struct Params { words: u32, n: u32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.words) { return; }
  let pair = unpack2x16float(x[i]);
  out[2u * i] = pair.x;
  if (2u * i + 1u < params.n) { out[2u * i + 1u] = pair.y; }
}`;

/** The inverse of packF16: n f32 values from ceil(n/2) words of halves (exact: every half is an f32). */
export function unpackF16(ctx: GpuContext, args: { x: Binding; out: Binding; n: number }): void {
  checkCount("unpackF16", args.n);
  const words = Math.ceil(args.n / 2);
  if (words === 0) return;
  ctx.dispatch(
    ctx.pipeline("unpack f16", UNPACK_F16_CODE),
    [args.x, args.out],
    uniforms(words, args.n),
    workgroupsFor(words),
  );
}

// The kernels' WGSL, built once per distinct parameters.
const fillCode = cachedBuilder(buildFillCode);
const generalCopyCode = cachedBuilder(buildGeneralCopyCode);
const castCode = cachedBuilder(buildCastCode);
const transposeCode = cachedBuilder(buildTransposeCode);
