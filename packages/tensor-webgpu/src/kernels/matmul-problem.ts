/**
 * A matmul problem as every variant of matmul.ts sees it: its arguments, their checked description, and
 * how it is cut into chunks that each fit one storage binding, scratch texture and dispatch (over batch, m,
 * n and k; k-chunks after the first accumulate). Also what the storage-buffer kernels share: binding
 * windows, the Params block and its packing, the store epilogue (alpha, bias, addend, accumulate) and
 * the dispatch of a pipeline over the chunks.
 */
import type { Binding, GpuContext } from "../gpu/context.js";
import { bindingWindow } from "./binding-windows.js";
import { enableFor, type FloatStorage } from "./elementwise.js";
import type { MatmulShape, MatmulVariant } from "./matmul-choices.js";
import { type BlockedTile, type MatrixTile, storedIndex } from "./matmul-gpu.js";
import { wgslCache } from "./wgsl/code-cache.js";

/** Bytes of one scratch texture at most; operands that need more are split into chunks. */
export const TEX_MAX_BYTES = 64 * 1024 * 1024;

export interface MatmulArgs {
  a: GPUBuffer;
  b: GPUBuffer;
  out: GPUBuffer;
  batch: number;
  m: number;
  n: number;
  k: number;
  /** A stored as [k, m] per batch instead of [m, k]. */
  transA?: boolean;
  /** B stored as [n, k] per batch instead of [k, n] (linear layers: x · Wᵀ with W [out, in]). */
  transB?: boolean;
  /** Elements between batches of A; default m·k; 0 = one A for all batches. */
  aBatchStride?: number;
  /** Elements between batches of B; default k·n; 0 = one B for all batches (the usual case for weights). */
  bBatchStride?: number;
  /** out += result instead of out = result. */
  accumulate?: boolean;
  /** The result is scaled by alpha (default 1). */
  alpha?: number;
  /** Force a variant (tests, benchmarks); by default `matmulVariant` chooses. */
  variant?: MatmulVariant;
  /** Added to every row of the result after alpha: bias[n], of the result's element type. */
  bias?: GPUBuffer;
  /** Added to the result after alpha: [batch, m, n] in out's layout (a residual), of its element type. */
  addend?: GPUBuffer;
  /** The "blocked" and "blocked-wide" variants' output tile and k-step (default 128 x 128, k-step 8). */
  blockedTile?: BlockedTile;
  /** The "subgroup-matrix-direct" and "subgroup-matrix-pipelined" variants' square output tile (default 128). */
  matrixTile?: MatrixTile;
  /** The "subgroup-matrix-direct" variant loads each k-step's fragments one step ahead (default false). */
  directPrefetch?: boolean;
  /** With variant "subgroup-matrix-pipelined": stage through 16-byte stores (needs WGSL's buffer_view). */
  wideStores?: boolean;
  /** With variant "subgroup-matrix-pipelined": stage halves in a per-lane order that spreads them over the banks. */
  rotatedStores?: boolean;
  /**
   * Element type of a, b and out (default f32). With "f16" (needs shader-f16) the operands are read as
   * halves and converted, products accumulate in f32, and the result is rounded to f16 once on store.
   */
  dtype?: FloatStorage;
}

export interface Problem extends MatmulShape {
  aBatchStride: number;
  bBatchStride: number;
  accumulate: boolean;
  alpha: number;
  /** Bytes per element of a, b and out. */
  bytes: number;
}

/** A piece of the problem: batches [batch0, batch0 + batches), rows [m0, m0 + m), columns, and k range. */
export interface Chunk {
  batch0: number;
  batches: number;
  m0: number;
  m: number;
  n0: number;
  n: number;
  k0: number;
  k: number;
}

export type Axis = "batch" | "m" | "n" | "k";

/** Lower limits to pretend, so tests can exercise chunking on small problems. */
export interface MatmulTestLimits {
  bindingBytes?: number;
  textureDimension?: number;
  textureBytes?: number;
  workgroupsPerDimension?: number;
}

let testLimits: MatmulTestLimits = {};

/** Pretend the device's limits are lower (to test chunking on small problems); no argument restores them. */
export function limitMatmulForTesting(limits: MatmulTestLimits = {}): void {
  testLimits = limits;
}

export function limits(ctx: GpuContext) {
  const device = ctx.device.limits;
  return {
    // Leave room for the misalignment a binding window may start with.
    bindingBytes:
      Math.min(device.maxStorageBufferBindingSize, testLimits.bindingBytes ?? Number.POSITIVE_INFINITY) -
      device.minStorageBufferOffsetAlignment,
    textureDimension: Math.min(
      device.maxTextureDimension2D,
      testLimits.textureDimension ?? Number.POSITIVE_INFINITY,
    ),
    textureBytes: Math.min(TEX_MAX_BYTES, testLimits.textureBytes ?? Number.POSITIVE_INFINITY),
    workgroups: Math.min(
      device.maxComputeWorkgroupsPerDimension,
      testLimits.workgroupsPerDimension ?? Number.POSITIVE_INFINITY,
    ),
  };
}

/** Element ranges [start, end) of each buffer that a chunk touches. */
export function spans(
  p: Problem,
  c: Chunk,
): { a: [number, number]; b: [number, number]; out: [number, number] } {
  const lastBatch = c.batches - 1;
  const aStart = c.batch0 * p.aBatchStride + (p.transA ? c.k0 * p.m + c.m0 : c.m0 * p.k + c.k0);
  const aLast = p.transA ? (c.k - 1) * p.m + (c.m - 1) : (c.m - 1) * p.k + (c.k - 1);
  const bStart = c.batch0 * p.bBatchStride + (p.transB ? c.n0 * p.k + c.k0 : c.k0 * p.n + c.n0);
  const bLast = p.transB ? (c.n - 1) * p.k + (c.k - 1) : (c.k - 1) * p.n + (c.n - 1);
  const outStart = (c.batch0 * p.m + c.m0) * p.n + c.n0;
  const outLast = lastBatch * p.m * p.n + (c.m - 1) * p.n + (c.n - 1);
  return {
    a: [aStart, aStart + lastBatch * p.aBatchStride + aLast + 1],
    b: [bStart, bStart + lastBatch * p.bBatchStride + bLast + 1],
    out: [outStart, outStart + outLast + 1],
  };
}

/** The axis to split along so that `c` fits the binding limit, or undefined when it fits. */
export function bindingOverflow(ctx: GpuContext, p: Problem, c: Chunk): Axis | undefined {
  const limit = limits(ctx).bindingBytes;
  const s = spans(p, c);
  const over = (span: [number, number]) => (span[1] - span[0]) * p.bytes > limit;
  if (c.batches > 1 && (over(s.a) || over(s.b) || over(s.out))) return "batch";
  if (over(s.out)) return c.m > 1 ? "m" : "n";
  if (over(s.a)) return p.transA ? (c.k > 1 ? "k" : "m") : c.m > 1 ? "m" : "k";
  if (over(s.b)) return p.transB ? (c.n > 1 ? "n" : "k") : c.k > 1 ? "k" : "n";
  return undefined;
}

/** Halve `c` along `axis`, at a multiple of 64 where possible so tiles stay whole. */
export function split(c: Chunk, axis: Axis): [Chunk, Chunk] {
  const size = axis === "batch" ? c.batches : c[axis];
  if (size < 2) throw new RangeError(`matmul: cannot split a chunk of ${axis} = ${size} further`);
  const half = size > 128 && axis !== "batch" ? Math.ceil(size / 2 / 64) * 64 : Math.ceil(size / 2);
  if (axis === "batch") {
    return [
      { ...c, batches: half },
      { ...c, batch0: c.batch0 + half, batches: c.batches - half },
    ];
  }
  const origin = axis === "m" ? "m0" : axis === "n" ? "n0" : "k0";
  return [
    { ...c, [axis]: half },
    { ...c, [origin]: c[origin] + half, [axis]: size - half },
  ];
}

/**
 * Chunks covering the problem, each passing `overflow`, depth first: for every output element the chunk
 * with k0 = 0 (which overwrites unless accumulating) comes before the chunks that add to it.
 */
export function plan(p: Problem, overflow: (c: Chunk) => Axis | undefined): Chunk[] {
  const whole: Chunk = { batch0: 0, batches: p.batch, m0: 0, m: p.m, n0: 0, n: p.n, k0: 0, k: p.k };
  const result: Chunk[] = [];
  const visit = (c: Chunk, depth: number) => {
    const axis = overflow(c);
    if (axis === undefined) {
      result.push(c);
      return;
    }
    if (depth > 64) throw new RangeError("matmul: could not split the problem into dispatchable chunks");
    const [first, second] = split(c, axis);
    visit(first, depth + 1);
    visit(second, depth + 1);
  };
  visit(whole, 0);
  return result;
}

/** Bindings for one buffer span: the window and the element index, inside it, of the span's start. */
export function windowFor(
  ctx: GpuContext,
  buffer: GPUBuffer,
  span: [number, number],
  bytes: number,
): { binding: Binding; base: number } {
  const window = bindingWindow(ctx, buffer, span[0] * bytes, Math.max(span[1] - span[0], 1) * bytes, bytes);
  return { binding: window.binding, base: window.shift };
}

/** Generated WGSL, built once per specialisation (see wgslCache). */
export const source = wgslCache();

/** Packs kernel parameters: u32 fields, then f32 fields, as the WGSL structs below declare them. */
export function params(u32s: number[], f32s: number[] = []): Uint32Array {
  const data = new Uint32Array(Math.ceil((u32s.length + f32s.length) / 4) * 4);
  data.set(u32s);
  new Float32Array(data.buffer).set(f32s, u32s.length);
  return data;
}

// ---------------------------------------------------------------------------------------------------------
// Shared WGSL pieces

/**
 * WGSL expression for element (row, col) of op(A) or op(B) given a base index and leading dimension, as
 * an f32 (halves are converted on load).
 */
export function element(
  array: string,
  base: string,
  ld: string,
  row: string,
  col: string,
  transposed: boolean,
  storage: FloatStorage,
): string {
  const load = `${array}[${storedIndex(base, ld, row, col, transposed)}]`;
  return storage === "f32" ? load : `f32(${load})`;
}

/**
 * The store epilogue shared by the kernels: out = alpha·acc + bias[col] + addend (+ out), rounded once to
 * f16 for f16 out. `col` is the column within the dispatch's chunk; p.biasBase is the chunk's first
 * column. The addend has out's layout: its element is out's index moved from out's window to its own.
 */
export function storeFn(storage: FloatStorage): string {
  const read = storage === "f32" ? "out[index]" : "f32(out[index])";
  const write = (value: string) => (storage === "f32" ? value : `f16(${value})`);
  return /* wgsl */ `
fn storeOut(index: u32, col: u32, value: f32) {
  var v = p.alpha * value;
  if (p.hasBias != 0u) { v += f32(bias[p.biasBase + col]); }
  if (p.hasAddend != 0u) { v += f32(addend[index - p.outBase + p.addendBase]); }
  if (p.accumulate != 0u) {
    out[index] = ${write(`${read} + v`)};
  } else {
    out[index] = ${write("v")};
  }
}`;
}

// Uniform struct shared by the "buffer" and "tiled" kernels.
export const GEMM_PARAMS = /* wgsl */ `
struct Params {
  m: u32, n: u32, k: u32,
  aBase: u32, aBatchStride: u32, lda: u32,
  bBase: u32, bBatchStride: u32, ldb: u32,
  outBase: u32, outBatchStride: u32, ldo: u32,
  accumulate: u32, hasBias: u32, biasBase: u32, hasAddend: u32, addendBase: u32, alpha: f32,
}`;

/**
 * The storage-buffer kernels' common start: enables, params, the a / b / out / bias / addend bindings,
 * then `inputs` (declarations such as "var<storage, read> g: array<f32>", bound after the addend), then
 * params; and storeOut. `operands`: the element type a and b are read as (a kernel that reads them in
 * wide vectors declares them so; indices stay the caller's business).
 */
export function gemmPreamble(
  storage: FloatStorage,
  operands: string = storage,
  inputs: readonly string[] = [],
): string {
  return /* wgsl */ `${enableFor(storage)}
${GEMM_PARAMS}
@group(0) @binding(0) var<storage, read> a: array<${operands}>;
@group(0) @binding(1) var<storage, read> b: array<${operands}>;
@group(0) @binding(2) var<storage, read_write> out: array<${storage}>;
@group(0) @binding(3) var<storage, read> bias: array<${storage}>;
@group(0) @binding(4) var<storage, read> addend: array<${storage}>;
${inputs.map((declaration, i) => `@group(0) @binding(${5 + i}) ${declaration};`).join("\n")}
@group(0) @binding(${5 + inputs.length}) var<uniform> p: Params;
${storeFn(storage)}`;
}

export function gemmParams(
  p: Problem,
  c: Chunk,
  accumulate: boolean,
  aBase: number,
  bBase: number,
  outBase: number,
  epilogue: Epilogue,
) {
  return params(
    [
      c.m,
      c.n,
      c.k,
      aBase,
      p.aBatchStride,
      p.transA ? p.m : p.k,
      bBase,
      p.bBatchStride,
      p.transB ? p.k : p.n,
      outBase,
      p.m * p.n,
      p.n,
      accumulate ? 1 : 0,
      ...epilogue.params,
    ],
    [p.alpha],
  );
}

/**
 * What a chunk's epilogue adds: the bias and the addend only in the first chunk along k. `params` are
 * the Params fields hasBias, biasBase, hasAddend, addendBase; `bindings` are bindings 3 and 4.
 */
export interface Epilogue {
  params: [number, number, number, number];
  bindings: [GPUBuffer | Binding, GPUBuffer | Binding];
}

export function epilogueOf(ctx: GpuContext, args: MatmulArgs, p: Problem, c: Chunk): Epilogue {
  const first = c.k0 === 0;
  const addend = args.addend ? windowFor(ctx, args.addend, spans(p, c).out, p.bytes) : undefined;
  return {
    params: [args.bias && first ? 1 : 0, c.n0, addend && first ? 1 : 0, addend?.base ?? 0],
    bindings: [args.bias ?? placeholder(ctx), addend?.binding ?? placeholder(ctx)],
  };
}

/** A binding for an epilogue input the chunk does not use (the kernel does not read it). */
export function placeholder(ctx: GpuContext): GPUBuffer {
  let buffer = placeholders.get(ctx);
  if (!buffer) {
    buffer = ctx.pool.acquire(16, "unused epilogue input");
    placeholders.set(ctx, buffer);
  }
  return buffer;
}
const placeholders = new WeakMap<GpuContext, GPUBuffer>();

export function dispatchOverflow(
  ctx: GpuContext,
  c: Chunk,
  rowsPerGroup: number,
  colsPerGroup: number,
): Axis | undefined {
  const max = limits(ctx).workgroups;
  if (c.batches > max) return "batch";
  if (Math.ceil(c.m / rowsPerGroup) > max) return "m";
  if (Math.ceil(c.n / colsPerGroup) > max) return "n";
  return undefined;
}

/**
 * Records `pipeline` over the chunks of `p` that fit one binding and one dispatch, each workgroup covering
 * `rowsPerGroup` x `colsPerGroup` outputs: the shared dispatch of the storage-buffer kernels (all but
 * "texture", which stages its operands first).
 */
export function dispatchChunks(
  ctx: GpuContext,
  args: MatmulArgs,
  p: Problem,
  pipeline: GPUComputePipeline | ((c: Chunk) => GPUComputePipeline),
  rowsPerGroup: number,
  colsPerGroup: number,
): void {
  const overflow = (c: Chunk): Axis | undefined =>
    bindingOverflow(ctx, p, c) ?? dispatchOverflow(ctx, c, rowsPerGroup, colsPerGroup);
  for (const c of plan(p, overflow)) {
    const s = spans(p, c);
    const [a, b, out] = [
      windowFor(ctx, args.a, s.a, p.bytes),
      windowFor(ctx, args.b, s.b, p.bytes),
      windowFor(ctx, args.out, s.out, p.bytes),
    ];
    const epilogue = epilogueOf(ctx, args, p, c);
    ctx.dispatch(
      typeof pipeline === "function" ? pipeline(c) : pipeline,
      [a.binding, b.binding, out.binding, ...epilogue.bindings],
      gemmParams(p, c, p.accumulate || c.k0 > 0, a.base, b.base, out.base, epilogue),
      [Math.ceil(c.n / colsPerGroup), Math.ceil(c.m / rowsPerGroup), c.batches],
    );
  }
}

export function code(p: Problem): string {
  return `${p.transA ? "Aᵀ" : "A"}·${p.transB ? "Bᵀ" : "B"} ${p.dtype}`;
}
