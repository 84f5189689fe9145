/**
 * Batched matrix product, the kernel behind every linear layer (forward, dX and dW):
 *
 *   out[b] = alpha · op(A[b]) · op(B[b])   (+ out[b] when accumulate)
 *
 * op(A) is [m, k] (A stored [m, k], or [k, m] when transA), op(B) is [k, n] (B stored [k, n], or [n, k] when
 * transB: x · Wᵀ with W [out, in]). Batch b of A starts aBatchStride elements after batch b-1 (default m·k,
 * 0 broadcasts one A to every batch); likewise B (weights usually have bBatchStride 0).
 *
 * Three variants, one tiling scheme each; `matmulVariant` says which one `matmul` runs:
 *
 * "texture" — for software adapters (lavapipe; chosen there for products of >= 2^21 multiply-adds with
 *   m, n >= 16, and for decoding's x · Wᵀ from 8-32 rows: textureDecodes). Lavapipe turns every storage-buffer load into per-lane scalar loads with bounds checks and
 *   branches, while a read-only rgba32float storage texture delivers 16 bytes per lane in one short call
 *   (~2x cheaper than a sampled texture's textureLoad) and a subgroup broadcast is a register shuffle.
 *   1. Each operand is put in a texture laid out like its storage (transposes cost nothing): by
 *      copyBufferToTexture when its rows are 256-byte aligned, else by a small repack kernel that also
 *      zero-pads k. Texels past m or n are left stale on purpose: they only reach outputs never stored.
 *   2. One workgroup = one subgroup of L lanes (8 on 256-bit lavapipe) computes a 16 x 4L output tile. Per
 *      4 k-steps a lane loads 16/L texels of A (rows j, j + L, ...: 4 k each, or 4 rows each when A is
 *      stored [k, m]) and 4 texels of B covering its own 4 columns; every lane gets each A value by
 *      subgroupBroadcast and adds it times its B vec4 into 16 vec4 accumulators (16 x 4 per lane: larger
 *      tiles spill more than they save).
 *   3. k longer than 1280 is split into accumulating chunks so a workgroup's rows of A and columns of B
 *      stay in the CPU's L2 cache.
 *   Copies and dispatches are recorded on the context's encoder like every other kernel's (batched into
 *   the step's submission, counted in its stats); the textures come from the context's texture pool and
 *   go back to it once recorded. Measured on lavapipe, 2 cores, end to end: ~45 GFLOP/s
 *   at 1024³ and 2048³, 35-52 on transformer and Qwen2.5-0.5B shapes, vs 4-8 for "buffer" and 3-6 for
 *   "tiled" there (bench/cases/matmul.ts; a sampled-texture 8x8 kernel made 7-15).
 * "tiled" — for GPUs: 64 x 64 output tile per workgroup of 16 x 16 invocations, 4 x 4 outputs each, k in
 *   steps of 16 through workgroup memory (A as [k][m/4] vec4s, B as [k][n/4] vec4s, one vec4 of each
 *   filled per invocation per step, global loads arranged so neighbouring invocations read neighbouring
 *   addresses of the stored layout).
 * "buffer" — no workgroup memory, subgroups or textures: 4 x 4 outputs per invocation read straight from
 *   storage buffers. The portable fallback, and the faster choice on lavapipe for small products.
 * "blocked" — for GPUs, large products: 128 x 128 tiles, 8 x 8 outputs per invocation, software-pipelined
 *   loads (matmul-gpu.ts).
 * "subgroup-matrix" — for GPUs with matrix units exposed to WGSL, f16 operands: tensor-core multiplies
 *   with f32 accumulation on 128 x 128 tiles (matmul-gpu.ts).
 * "subgroup-matrix-direct" — the same multiplies with fragments loaded straight from the operands'
 *   buffers, no staging, on 128 x 128 or 64 x 64 tiles; for problems of whole fragments (a ragged one runs
 *   "subgroup-matrix"). Tuning measures both against each other on the card.
 * "matvec" — for GPUs, x · Wᵀ with at most 16 rows (decoding): 32 invocations per output column read its
 *   weight row in coalesced lines (matmul-gpu.ts); needs A not transposed and B transposed.
 *
 * All variants handle any m, n, k (edges are clamped on load and guarded on store), any batch strides, the
 * four transpose combinations, alpha and accumulate, and f16 operands (dtype "f16": halves converted on
 * load, f32 accumulation, one rounding on store; the texture variant stages them as rgba16float texels,
 * which halves staging memory and measured on par with f32 staging on lavapipe). Problems too large for one storage binding
 * (maxStorageBufferBindingSize), texture (maxTextureDimension2D, 64 MiB) or dispatch are split into
 * chunks over batch, m, n and k (k-chunks after the first accumulate).
 */
import type { Binding, GpuContext } from "../gpu/context.js";
import type { PooledTexture } from "../gpu/texture-pool.js";
import { bindingWindow } from "./binding-windows.js";
import { enableFor, type FloatStorage } from "./elementwise.js";
import { type MatmulChoice, type MatmulShape, type MatmulVariant, matmulChoices } from "./matmul-choices.js";
import {
  BLOCKED_TILE,
  type BlockedTile,
  blockedKernel,
  blockedTileBytes,
  blockedTileProblem,
  DIRECT_TILES,
  type DirectTile,
  directFits,
  GPU_TILE,
  MATVEC_BLOCKED_MAX_ROWS,
  MATVEC_COLUMNS,
  MATVEC_MAX_ROWS,
  matvecKernel,
  pickSubgroupMatrixShape,
  type SubgroupMatrixShape,
  storedIndex,
  subgroupMatrixDirectKernel,
  subgroupMatrixKernel,
} from "./matmul-gpu.js";
import { textureLanes } from "./texture-lanes.js";
import { wgslCache } from "./wgsl/code-cache.js";

export type { MatmulVariant } from "./matmul-choices.js";

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
  /** The "blocked" variant's output tile and k-step (default 128 x 128, k-step 8). */
  blockedTile?: BlockedTile;
  /** The "subgroup-matrix-direct" variant's square output tile (default 128). */
  directTile?: DirectTile;
  /** The "subgroup-matrix-direct" variant loads each k-step's fragments one step ahead (default false). */
  directPrefetch?: boolean;
  /**
   * Element type of a, b and out (default f32). With "f16" (needs shader-f16) the operands are read as
   * halves and converted, products accumulate in f32, and the result is rounded to f16 once on store.
   */
  dtype?: FloatStorage;
}

// ---------------------------------------------------------------------------------------------------------
// Problem description and chunking

interface Problem extends MatmulShape {
  aBatchStride: number;
  bBatchStride: number;
  accumulate: boolean;
  alpha: number;
  /** Bytes per element of a, b and out. */
  bytes: number;
}

/** A piece of the problem: batches [batch0, batch0 + batches), rows [m0, m0 + m), columns, and k range. */
interface Chunk {
  batch0: number;
  batches: number;
  m0: number;
  m: number;
  n0: number;
  n: number;
  k0: number;
  k: number;
}

type Axis = "batch" | "m" | "n" | "k";

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

function limits(ctx: GpuContext) {
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
function spans(p: Problem, c: Chunk): { a: [number, number]; b: [number, number]; out: [number, number] } {
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
function bindingOverflow(ctx: GpuContext, p: Problem, c: Chunk): Axis | undefined {
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
function split(c: Chunk, axis: Axis): [Chunk, Chunk] {
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
function plan(p: Problem, overflow: (c: Chunk) => Axis | undefined): Chunk[] {
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
function windowFor(
  ctx: GpuContext,
  buffer: GPUBuffer,
  span: [number, number],
  bytes: number,
): { binding: Binding; base: number } {
  const window = bindingWindow(ctx, buffer, span[0] * bytes, Math.max(span[1] - span[0], 1) * bytes, bytes);
  return { binding: window.binding, base: window.shift };
}

/** Generated WGSL, built once per specialisation (see wgslCache). */
const source = wgslCache();

/** Packs kernel parameters: u32 fields, then f32 fields, as the WGSL structs below declare them. */
function params(u32s: number[], f32s: number[] = []): Uint32Array {
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
function element(
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
function storeFn(storage: FloatStorage): string {
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
const GEMM_PARAMS = /* wgsl */ `
struct Params {
  m: u32, n: u32, k: u32,
  aBase: u32, aBatchStride: u32, lda: u32,
  bBase: u32, bBatchStride: u32, ldb: u32,
  outBase: u32, outBatchStride: u32, ldo: u32,
  accumulate: u32, hasBias: u32, biasBase: u32, hasAddend: u32, addendBase: u32, alpha: f32,
}`;

/** The storage-buffer kernels' common start: enables, params, the a / b / out / bias / addend / params bindings, storeOut. */
export function gemmPreamble(storage: FloatStorage): string {
  return /* wgsl */ `${enableFor(storage)}
${GEMM_PARAMS}
@group(0) @binding(0) var<storage, read> a: array<${storage}>;
@group(0) @binding(1) var<storage, read> b: array<${storage}>;
@group(0) @binding(2) var<storage, read_write> out: array<${storage}>;
@group(0) @binding(3) var<storage, read> bias: array<${storage}>;
@group(0) @binding(4) var<storage, read> addend: array<${storage}>;
@group(0) @binding(5) var<uniform> p: Params;
${storeFn(storage)}`;
}

function gemmParams(
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
interface Epilogue {
  params: [number, number, number, number];
  bindings: [GPUBuffer | Binding, GPUBuffer | Binding];
}

function epilogueOf(ctx: GpuContext, args: MatmulArgs, p: Problem, c: Chunk): Epilogue {
  const first = c.k0 === 0;
  const addend = args.addend ? windowFor(ctx, args.addend, spans(p, c).out, p.bytes) : undefined;
  return {
    params: [args.bias && first ? 1 : 0, c.n0, addend && first ? 1 : 0, addend?.base ?? 0],
    bindings: [args.bias ?? placeholder(ctx), addend?.binding ?? placeholder(ctx)],
  };
}

/** A binding for an epilogue input the chunk does not use (the kernel does not read it). */
function placeholder(ctx: GpuContext): GPUBuffer {
  let buffer = placeholders.get(ctx);
  if (!buffer) {
    buffer = ctx.pool.acquire(16, "unused epilogue input");
    placeholders.set(ctx, buffer);
  }
  return buffer;
}
const placeholders = new WeakMap<GpuContext, GPUBuffer>();

// ---------------------------------------------------------------------------------------------------------
// Variant "buffer": 4 x 4 outputs per invocation, straight from storage buffers.

const BUFFER_TILE = 4;
const BUFFER_WORKGROUP = 8; // 8 x 8 invocations = a 32 x 32 tile per workgroup

function bufferKernel(transA: boolean, transB: boolean, storage: FloatStorage): string {
  const a = (row: string, col: string) => element("a", "aBase", "p.lda", row, col, transA, storage);
  const b = (row: string, col: string) => element("b", "bBase", "p.ldb", row, col, transB, storage);
  return /* wgsl */ `${gemmPreamble(storage)}

@compute @workgroup_size(${BUFFER_WORKGROUP}, ${BUFFER_WORKGROUP})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let row0 = id.y * 4u;
  let col0 = id.x * 4u;
  if (row0 >= p.m || col0 >= p.n) { return; }
  let batch = id.z;
  let aBase = p.aBase + batch * p.aBatchStride;
  let bBase = p.bBase + batch * p.bBatchStride;
  // Rows and columns past the edge read the last valid one; their outputs are never stored.
  let r0 = row0; let r1 = min(row0 + 1u, p.m - 1u); let r2 = min(row0 + 2u, p.m - 1u); let r3 = min(row0 + 3u, p.m - 1u);
  let c0 = col0; let c1 = min(col0 + 1u, p.n - 1u); let c2 = min(col0 + 2u, p.n - 1u); let c3 = min(col0 + 3u, p.n - 1u);
  var acc0 = vec4f(0.0); var acc1 = vec4f(0.0); var acc2 = vec4f(0.0); var acc3 = vec4f(0.0);
  for (var kk = 0u; kk < p.k; kk++) {
    let av = vec4f(${a("r0", "kk")}, ${a("r1", "kk")}, ${a("r2", "kk")}, ${a("r3", "kk")});
    let bv = vec4f(${b("kk", "c0")}, ${b("kk", "c1")}, ${b("kk", "c2")}, ${b("kk", "c3")});
    acc0 += av.x * bv; acc1 += av.y * bv; acc2 += av.z * bv; acc3 += av.w * bv;
  }
  let outBase = p.outBase + batch * p.outBatchStride;
  let rows = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + i;
    if (row >= p.m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (col0 + j < p.n) { storeOut(outBase + row * p.ldo + col0 + j, col0 + j, rows[i][j]); }
    }
  }
}`;
}

function runBuffer(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  const pipeline = ctx.pipeline(
    `matmul buffer ${code(p)}`,
    source(`buffer ${code(p)}`, () => bufferKernel(p.transA, p.transB, p.dtype)),
  );
  const perGroup = BUFFER_TILE * BUFFER_WORKGROUP;
  dispatchChunks(ctx, args, p, pipeline, perGroup, perGroup);
}

function dispatchOverflow(
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
function dispatchChunks(
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

function code(p: Problem): string {
  return `${p.transA ? "Aᵀ" : "A"}·${p.transB ? "Bᵀ" : "B"} ${p.dtype}`;
}

// ---------------------------------------------------------------------------------------------------------
// Variant "tiled": 64 x 64 tile per workgroup through workgroup memory, 4 x 4 outputs per invocation.

const TILE = 64;
const TILE_K = 16;
/** Vec4s per k-row of a staged tile: TILE / 4 and one of padding. */
const TILE_STRIDE = TILE / 4 + 1;

function tiledKernel(transA: boolean, transB: boolean, storage: FloatStorage): string {
  const a = (row: string, col: string) => element("a", "aBase", "p.lda", row, col, transA, storage);
  const b = (row: string, col: string) => element("b", "bBase", "p.ldb", row, col, transB, storage);
  // Each invocation fills one vec4 of each tile per k-step. The (k, quad) it takes is chosen so that
  // neighbouring invocations read neighbouring addresses of the stored layout.
  const aSlot = transA ? "let aq = t % 16u; let ak = t / 16u;" : "let ak = t % 16u; let aq = t / 16u;";
  const bSlot = transB ? "let bk = t % 16u; let bq = t / 16u;" : "let bq = t % 16u; let bk = t / 16u;";
  return /* wgsl */ `${gemmPreamble(storage)}

// aTile[k][q] holds rows 4q..4q+3 of the tile at k; bTile[k][q] holds columns 4q..4q+3. A k-row is
// ${TILE_STRIDE} vec4s, one of them padding: invocations that store different k then land in different banks.
var<workgroup> aTile: array<vec4f, ${TILE_K * TILE_STRIDE}>;
var<workgroup> bTile: array<vec4f, ${TILE_K * TILE_STRIDE}>;

fn loadA(aBase: u32, row: u32, kk: u32) -> f32 {
  // Out-of-range reads are clamped to a valid address and replaced by zero.
  let v = ${a("min(row, p.m - 1u)", "min(kk, p.k - 1u)")};
  return select(0.0, v, row < p.m && kk < p.k);
}

fn loadB(bBase: u32, kk: u32, col: u32) -> f32 {
  let v = ${b("min(kk, p.k - 1u)", "min(col, p.n - 1u)")};
  return select(0.0, v, kk < p.k && col < p.n);
}

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let t = lid.y * 16u + lid.x;
  let batch = wg.z;
  let aBase = p.aBase + batch * p.aBatchStride;
  let bBase = p.bBase + batch * p.bBatchStride;
  let tileRow = wg.y * ${TILE}u;
  let tileCol = wg.x * ${TILE}u;
  ${aSlot}
  ${bSlot}
  var acc0 = vec4f(0.0); var acc1 = vec4f(0.0); var acc2 = vec4f(0.0); var acc3 = vec4f(0.0);
  for (var k0 = 0u; k0 < p.k; k0 += ${TILE_K}u) {
    let ar = tileRow + aq * 4u;
    aTile[ak * ${TILE_STRIDE}u + aq] = vec4f(loadA(aBase, ar, k0 + ak), loadA(aBase, ar + 1u, k0 + ak),
                                 loadA(aBase, ar + 2u, k0 + ak), loadA(aBase, ar + 3u, k0 + ak));
    let bc = tileCol + bq * 4u;
    bTile[bk * ${TILE_STRIDE}u + bq] = vec4f(loadB(bBase, k0 + bk, bc), loadB(bBase, k0 + bk, bc + 1u),
                                 loadB(bBase, k0 + bk, bc + 2u), loadB(bBase, k0 + bk, bc + 3u));
    workgroupBarrier();
    for (var kk = 0u; kk < ${TILE_K}u; kk++) {
      let av = aTile[kk * ${TILE_STRIDE}u + lid.y];
      let bv = bTile[kk * ${TILE_STRIDE}u + lid.x];
      acc0 += av.x * bv; acc1 += av.y * bv; acc2 += av.z * bv; acc3 += av.w * bv;
    }
    workgroupBarrier();
  }
  let row0 = tileRow + lid.y * 4u;
  let col0 = tileCol + lid.x * 4u;
  let outBase = p.outBase + batch * p.outBatchStride;
  let rows = array<vec4f, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let row = row0 + i;
    if (row >= p.m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (col0 + j < p.n) { storeOut(outBase + row * p.ldo + col0 + j, col0 + j, rows[i][j]); }
    }
  }
}`;
}

function runTiled(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  const pipeline = ctx.pipeline(
    `matmul tiled ${code(p)}`,
    source(`tiled ${code(p)}`, () => tiledKernel(p.transA, p.transB, p.dtype)),
  );
  dispatchChunks(ctx, args, p, pipeline, TILE, TILE);
}

// ---------------------------------------------------------------------------------------------------------
// Variants "blocked" and "subgroup-matrix" (kernels in matmul-gpu.ts): 128 x 128 tiles per workgroup.

function runBlocked(ctx: GpuContext, args: MatmulArgs, p: Problem, chosen?: BlockedTile): void {
  const tile = chosen ?? BLOCKED_TILE;
  const problem = blockedTileProblem(tile);
  if (problem) throw new RangeError(`matmul: ${problem}`);
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  if (blockedTileBytes(tile) > limit)
    throw new RangeError(
      `matmul: a ${tile.rows}x${tile.cols} blocked tile with k-step ${tile.depth} needs ${blockedTileBytes(tile)} bytes of workgroup memory, this device has ${limit}`,
    );
  const key = `blocked${tile.rows}x${tile.cols}/${tile.depth} ${code(p)}`;
  const wgsl = source(key, () => blockedKernel(p.transA, p.transB, p.dtype, tile, gemmPreamble(p.dtype)));
  dispatchChunks(ctx, args, p, ctx.pipeline(`matmul ${key}`, wgsl), tile.rows, tile.cols);
}

function runMatvec(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  if (p.transA || !p.transB || p.m > MATVEC_BLOCKED_MAX_ROWS) {
    throw new RangeError(
      `matmul: the "matvec" variant takes x · Wᵀ with at most ${MATVEC_BLOCKED_MAX_ROWS} rows (A not transposed, B transposed)`,
    );
  }
  const rows = Math.min(2 ** Math.ceil(Math.log2(Math.max(p.m, 1))), MATVEC_MAX_ROWS);
  const key = `matvec${rows} ${code(p)}`;
  const pipeline = ctx.pipeline(
    `matmul ${key}`,
    source(key, () => matvecKernel(rows, p.dtype, gemmPreamble(p.dtype))),
  );
  // A row of workgroups per block of `rows` rows.
  dispatchChunks(ctx, args, p, pipeline, rows, MATVEC_COLUMNS);
}

/** The matrix-unit shape the "subgroup-matrix" variant uses on this context, if it can run here. */
export function subgroupMatrixShape(ctx: GpuContext): SubgroupMatrixShape | undefined {
  const { subgroupSizes, features } = ctx.info;
  if (!features.shaderF16 || subgroupSizes.max === 0 || subgroupSizes.min !== subgroupSizes.max) return;
  if (subgroupSizes.max * 8 > ctx.device.limits.maxComputeInvocationsPerWorkgroup) return;
  return pickSubgroupMatrixShape(features.subgroupMatrixConfigs);
}

/** The subgroup-matrix shape for a problem, or a RangeError naming what is missing. */
function matrixUnitsFor(ctx: GpuContext, p: Problem, variant: MatmulVariant): SubgroupMatrixShape {
  const shape = subgroupMatrixShape(ctx);
  if (!shape || p.dtype !== "f16") {
    throw new RangeError(
      `matmul: the "${variant}" variant needs f16 operands and an adapter with f16 subgroup matrices (${
        shape ? `dtype is ${p.dtype}` : "this adapter has none"
      })`,
    );
  }
  return shape;
}

function subgroupMatrixPipeline(ctx: GpuContext, p: Problem, shape: SubgroupMatrixShape): GPUComputePipeline {
  const lanes = ctx.info.subgroupSizes.max;
  const key = `subgroup-matrix ${shape.m}x${shape.n}x${shape.k}/${lanes} ${code(p)}`;
  const wgsl = source(key, () => subgroupMatrixKernel(p.transA, p.transB, shape, lanes, gemmPreamble("f16")));
  return ctx.pipeline(`matmul ${key}`, wgsl);
}

function runSubgroupMatrix(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  const pipeline = subgroupMatrixPipeline(ctx, p, matrixUnitsFor(ctx, p, "subgroup-matrix"));
  dispatchChunks(ctx, args, p, pipeline, GPU_TILE, GPU_TILE);
}

/**
 * Fragments straight from the operands' buffers. A chunk whose m, n or k is not a whole number of
 * fragments (a tuned choice applies to a whole group of shapes) runs the staged kernel instead.
 */
function runSubgroupMatrixDirect(ctx: GpuContext, args: MatmulArgs, p: Problem, choice: MatmulChoice): void {
  const shape = matrixUnitsFor(ctx, p, "subgroup-matrix-direct");
  const tile = choice.directTile ?? DIRECT_TILES[0]!;
  const prefetch = choice.directPrefetch === true;
  if (!DIRECT_TILES.includes(tile))
    throw new RangeError(
      `matmul: a "subgroup-matrix-direct" tile is one of ${DIRECT_TILES.join(", ")}, got ${tile}`,
    );
  if (!directFits(shape, p.m, p.n, p.k)) {
    runSubgroupMatrix(ctx, args, p);
    return;
  }
  const lanes = ctx.info.subgroupSizes.max;
  const key = `subgroup-matrix-direct${tile}${prefetch ? " prefetch" : ""} ${shape.m}x${shape.n}x${shape.k}/${lanes} ${code(p)}`;
  const direct = ctx.pipeline(
    `matmul ${key}`,
    source(key, () =>
      subgroupMatrixDirectKernel(p.transA, p.transB, shape, lanes, tile, gemmPreamble("f16"), prefetch),
    ),
  );
  // Chunks split where bindings overflow; the rare ragged one is run staged (its extra workgroups store nothing).
  const staged = () => subgroupMatrixPipeline(ctx, p, shape);
  dispatchChunks(ctx, args, p, (c) => (directFits(shape, c.m, c.n, c.k) ? direct : staged()), tile, tile);
}

// ---------------------------------------------------------------------------------------------------------
// Variant "texture": operands in rgba32float storage textures, A shared by subgroup broadcast.

const TEX_ROWS = 16; // output rows per workgroup (and vec4 accumulators per lane)
const TEX_MAX_BYTES = 64 * 1024 * 1024; // per scratch texture; bigger operands are split into chunks
// Longer k is split into accumulating chunks: a workgroup's A rows and B columns then stay in the CPU's
// L2 cache (measured on lavapipe: [512x4864]·[4864x896]ᵀ 33 -> 46 GFLOP/s; no change at 2048³).
const TEX_MAX_K = 1280;
const COPY_SRC = 0x4;
/** Texture format the operands of each element type are staged in (f16 operands stay halves). */
const TEXTURE_FORMAT: Record<FloatStorage, GPUTextureFormat> = { f32: "rgba32float", f16: "rgba16float" };

/**
 * Copies a stored row-major matrix (per batch: rows x cols at base + batch·batchStride, row stride ld) into
 * texels of 4 consecutive columns; zero outside rows x cols. For operands a plain copyBufferToTexture cannot
 * move (row stride not a multiple of 64 floats, k not a multiple of 4, misaligned start, no COPY_SRC).
 */
const repackKernel = (storage: FloatStorage) => /* wgsl */ `${enableFor(storage)}
struct Params { rows: u32, cols: u32, texelsPerRow: u32, rowsPerBatch: u32, texels: u32, base: u32, batchStride: u32, ld: u32 }
@group(0) @binding(0) var<storage, read> src: array<${storage}>;
@group(0) @binding(1) var dst: texture_storage_2d<${TEXTURE_FORMAT[storage]}, write>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let t = id.x + id.y * groups.x * 64u;
  if (t >= p.texels) { return; }
  let x = t % p.texelsPerRow;
  let y = t / p.texelsPerRow;
  let row = y % p.rowsPerBatch;
  let rowStart = p.base + (y / p.rowsPerBatch) * p.batchStride + min(row, p.rows - 1u) * p.ld;
  var v = vec4f(0.0);
  for (var i = 0u; i < 4u; i++) {
    let col = x * 4u + i;
    v[i] = select(0.0, f32(src[rowStart + min(col, p.cols - 1u)]), row < p.rows && col < p.cols);
  }
  textureStore(dst, vec2u(x, y), v);
}`;

/**
 * The multiply for `lanes`-wide subgroups. Textures mirror the stored layouts: A as [m][k/4] texels, or
 * [k][m/4] when transA; B as [k][n/4], or [n][k/4] when transB. Per 4 k-steps each lane loads rows/lanes
 * texels of A and 4 of B, then does rows x 4 x 4 multiply-adds.
 */
function textureKernel(lanes: number, transA: boolean, transB: boolean, storage: FloatStorage): string {
  const format = TEXTURE_FORMAT[storage];
  const rows = Math.max(TEX_ROWS, lanes);
  const loadsA = rows / lanes;
  const comp = ["x", "y", "z", "w"];
  const body: string[] = [];
  // aValue(r, q): A[row0 + r][4·kt + q], broadcast from the lane that loaded it.
  let aValue: (r: number, q: number) => string;
  if (!transA) {
    // Lane j loads row row0 + j + lanes·g: 4 consecutive k of one row.
    for (let g = 0; g < loadsA; g++) {
      body.push(`    let a${g} = textureLoad(aTex, vec2u(kt, aRow + row0 + lane + ${g * lanes}u));`);
    }
    aValue = (r, q) => `subgroupBroadcast(a${Math.floor(r / lanes)}.${comp[q]}, ${r % lanes}u)`;
  } else {
    // The tile needs rows/4 texels (4 rows each) at each of 4 k; texel t = lane + lanes·g is quad t % quads
    // at k offset t / quads.
    const quads = rows / 4;
    for (let g = 0; g < loadsA; g++) {
      body.push(`    let t${g} = lane + ${g * lanes}u;`);
      body.push(
        `    let a${g} = textureLoad(aTex, vec2u(row0 / 4u + t${g} % ${quads}u, aRow + kt * 4u + t${g} / ${quads}u));`,
      );
    }
    aValue = (r, q) => {
      const t = q * quads + Math.floor(r / 4);
      return `subgroupBroadcast(a${Math.floor(t / lanes)}.${comp[r % 4]}, ${t % lanes}u)`;
    };
  }
  // b{q}: B[4·kt + q][4·colTexel .. + 3].
  if (!transB) {
    for (let q = 0; q < 4; q++)
      body.push(`    let b${q} = textureLoad(bTex, vec2u(colTexel, bRow + kt * 4u + ${q}u));`);
  } else {
    // Column c's texel holds 4 consecutive k; regrouping components is free (one register each).
    for (let i = 0; i < 4; i++)
      body.push(`    let c${i} = textureLoad(bTex, vec2u(kt, bRow + colTexel * 4u + ${i}u));`);
    for (let q = 0; q < 4; q++)
      body.push(`    let b${q} = vec4f(c0.${comp[q]}, c1.${comp[q]}, c2.${comp[q]}, c3.${comp[q]});`);
  }
  for (let q = 0; q < 4; q++) {
    for (let r = 0; r < rows; r++) body.push(`    acc${r} += ${aValue(r, q)} * b${q};`);
  }
  const accs = Array.from({ length: rows }, (_, r) => `acc${r}`);
  return /* wgsl */ `${enableFor(storage)}enable subgroups;
struct Params {
  m: u32, n: u32, k4: u32, aRowsPerBatch: u32, bRowsPerBatch: u32,
  outBase: u32, outBatchStride: u32, ldo: u32, accumulate: u32, hasBias: u32, biasBase: u32,
  hasAddend: u32, addendBase: u32, alpha: f32,
}
@group(0) @binding(0) var aTex: texture_storage_2d<${format}, read>;
@group(0) @binding(1) var bTex: texture_storage_2d<${format}, read>;
@group(0) @binding(2) var<storage, read_write> out: array<${storage}>;
@group(0) @binding(3) var<storage, read> bias: array<${storage}>;
@group(0) @binding(4) var<storage, read> addend: array<${storage}>;
@group(0) @binding(5) var<uniform> p: Params;
${storeFn(storage)}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  let batch = wg.z;
  let row0 = wg.y * ${rows}u;
  let colTexel = wg.x * ${lanes}u + lane; // this lane's output columns: 4·colTexel .. 4·colTexel + 3
  let aRow = batch * p.aRowsPerBatch;
  let bRow = batch * p.bRowsPerBatch;
${accs.map((acc) => `  var ${acc} = vec4f(0.0);`).join("\n")}
  for (var kt = 0u; kt < p.k4; kt++) {
${body.join("\n")}
  }
  let col0 = colTexel * 4u;
  let outBase = p.outBase + batch * p.outBatchStride;
  let accs = array<vec4f, ${rows}>(${accs.join(", ")});
  for (var i = 0u; i < ${rows}u; i++) {
    let row = row0 + i;
    if (row >= p.m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (col0 + j < p.n) { storeOut(outBase + row * p.ldo + col0 + j, col0 + j, accs[i][j]); }
    }
  }
}`;
}

const roundUp = (x: number, multiple: number) => Math.ceil(x / multiple) * multiple;

/**
 * One operand of a chunk as stored: per batch a rows x cols block at element `origin + batch·batchStride`
 * with row stride ld, and the texture block it goes to (rowsPerBatch texture rows of `width` texels; all
 * batches when batchStride > 0, else one block read by every batch).
 */
interface OperandBlock {
  rows: number;
  cols: number;
  ld: number;
  origin: number;
  batchStride: number;
  batches: number;
  rowsPerBatch: number;
  width: number;
  /** The stored rows run along k: rows past `rows` must read as zero, so they cannot be left stale. */
  kAlongRows: boolean;
}

function textureBlocks(p: Problem, c: Chunk, lanes: number) {
  const tileRows = Math.max(TEX_ROWS, lanes);
  const mPad = roundUp(c.m, tileRows);
  const kPad = roundUp(c.k, 4);
  const nPad = roundUp(c.n, 4 * lanes);
  const aBatches = p.aBatchStride === 0 ? 1 : c.batches;
  const bBatches = p.bBatchStride === 0 ? 1 : c.batches;
  const a: OperandBlock = p.transA
    ? {
        rows: c.k,
        cols: c.m,
        ld: p.m,
        origin: c.k0 * p.m + c.m0,
        rowsPerBatch: kPad,
        width: mPad / 4,
        kAlongRows: true,
        batchStride: p.aBatchStride,
        batches: aBatches,
      }
    : {
        rows: c.m,
        cols: c.k,
        ld: p.k,
        origin: c.m0 * p.k + c.k0,
        rowsPerBatch: mPad,
        width: kPad / 4,
        kAlongRows: false,
        batchStride: p.aBatchStride,
        batches: aBatches,
      };
  const b: OperandBlock = p.transB
    ? {
        rows: c.n,
        cols: c.k,
        ld: p.k,
        origin: c.n0 * p.k + c.k0,
        rowsPerBatch: nPad,
        width: kPad / 4,
        kAlongRows: false,
        batchStride: p.bBatchStride,
        batches: bBatches,
      }
    : {
        rows: c.k,
        cols: c.n,
        ld: p.n,
        origin: c.k0 * p.n + c.n0,
        rowsPerBatch: kPad,
        width: nPad / 4,
        kAlongRows: true,
        batchStride: p.bBatchStride,
        batches: bBatches,
      };
  a.origin += c.batch0 * p.aBatchStride;
  b.origin += c.batch0 * p.bBatchStride;
  return { tileRows, mPad, kPad, nPad, a, b };
}

const textureBytes = (block: OperandBlock) => block.width * block.batches * block.rowsPerBatch * 16;

/**
 * Whether copyBufferToTexture can fill the block: rows 256-byte aligned (ld a multiple of 64 floats or
 * 128 halves),
 * whole texels, a 16-byte aligned start, and no k padding to zero. Rows and texels past the block along m
 * or n keep stale values: they only reach outputs that are never stored.
 */
function copyable(buffer: GPUBuffer, block: OperandBlock, bytes: number, format: GPUTextureFormat): boolean {
  return (
    (buffer.usage & COPY_SRC) !== 0 &&
    (format === "rgba32float" ? bytes === 4 : bytes === 2) && // a copy cannot convert
    (block.ld * bytes) % 256 === 0 &&
    block.cols % 4 === 0 &&
    block.origin % 4 === 0 &&
    block.batchStride % 4 === 0 &&
    (!block.kAlongRows || block.rows % 4 === 0)
  );
}

function runTexture(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  const lanes = textureLanes(ctx);
  if (lanes === undefined) {
    throw new Error(
      'matmul: the "texture" variant needs subgroups of a known size (not available on this adapter)',
    );
  }
  const { textureDimension: maxDim, textureBytes: maxBytes, workgroups: maxGroups } = limits(ctx);
  const overflow = (c: Chunk): Axis | undefined => {
    const fromBindings = bindingOverflow(ctx, p, c);
    if (fromBindings) return fromBindings;
    const t = textureBlocks(p, c, lanes);
    const splittable = (axis: Axis) => (axis === "batch" ? c.batches : c[axis]) >= 2;
    for (const [block, other] of [
      [t.a, "m"],
      [t.b, "n"],
    ] as const) {
      const height = block.batches * block.rowsPerBatch;
      const bytes = textureBytes(block);
      const repackGroups = Math.ceil((block.width * height) / 64 / maxGroups); // repack grid is 2-D
      if (
        c.batches > 1 &&
        block.batches > 1 &&
        (height > maxDim || bytes > maxBytes || repackGroups > maxGroups)
      )
        return "batch";
      // Split along the axis that shrinks the offending dimension: texture rows or texels per row.
      const rowsAxis: Axis = block.kAlongRows ? "k" : other;
      const widthAxis: Axis = block.kAlongRows ? other : "k";
      if (height > maxDim) return rowsAxis;
      if (block.width > maxDim) return widthAxis;
      if (bytes > maxBytes || repackGroups > maxGroups) {
        const [first, second] =
          block.rowsPerBatch >= block.width * 4 ? [rowsAxis, widthAxis] : [widthAxis, rowsAxis];
        return splittable(first) ? first : second;
      }
    }
    if (c.k > TEX_MAX_K) return "k";
    if (c.batches > maxGroups) return "batch";
    if (t.nPad / (4 * lanes) > maxGroups) return "n";
    if (t.mPad / t.tileRows > maxGroups) return "m";
    return undefined;
  };

  const repack = ctx.pipeline(
    `matmul repack ${p.dtype}`,
    source(`repack ${p.dtype}`, () => repackKernel(p.dtype)),
  );
  const multiply = ctx.pipeline(
    `matmul texture L${lanes} ${code(p)}`,
    source(`texture ${lanes} ${code(p)}`, () => textureKernel(lanes, p.transA, p.transB, p.dtype)),
  );
  const fill = (buffer: GPUBuffer, block: OperandBlock, target: PooledTexture) => {
    if (copyable(buffer, block, p.bytes, TEXTURE_FORMAT[p.dtype])) {
      for (let batch = 0; batch < block.batches; batch++) {
        ctx.copyToTexture(
          {
            buffer,
            offset: (block.origin + batch * block.batchStride) * p.bytes,
            bytesPerRow: block.ld * p.bytes,
          },
          target.texture,
          { x: 0, y: batch * block.rowsPerBatch },
          [block.cols / 4, block.rows],
        );
      }
      return;
    }
    const last = (block.batches - 1) * block.batchStride + (block.rows - 1) * block.ld + block.cols;
    const window = windowFor(ctx, buffer, [block.origin, block.origin + last], p.bytes);
    const texels = block.width * block.batches * block.rowsPerBatch;
    ctx.dispatch(
      repack,
      [window.binding, { textureView: target.view }],
      params([
        block.rows,
        block.cols,
        block.width,
        block.rowsPerBatch,
        texels,
        window.base,
        block.batchStride,
        block.ld,
      ]),
      grid2(Math.ceil(texels / 64), maxGroups),
    );
  };
  const textures = ctx.textures;
  for (const c of plan(p, overflow)) {
    const t = textureBlocks(p, c, lanes);
    const aTexture = textures.acquire(
      TEXTURE_FORMAT[p.dtype],
      t.a.width,
      t.a.batches * t.a.rowsPerBatch,
      "matmul a",
    );
    const bTexture = textures.acquire(
      TEXTURE_FORMAT[p.dtype],
      t.b.width,
      t.b.batches * t.b.rowsPerBatch,
      "matmul b",
    );
    fill(args.a, t.a, aTexture);
    fill(args.b, t.b, bTexture);
    const out = windowFor(ctx, args.out, spans(p, c).out, p.bytes);
    const accumulate = p.accumulate || c.k0 > 0;
    const epilogue = epilogueOf(ctx, args, p, c);
    ctx.dispatch(
      multiply,
      [{ textureView: aTexture.view }, { textureView: bTexture.view }, out.binding, ...epilogue.bindings],
      params(
        [
          c.m,
          c.n,
          t.kPad / 4,
          t.a.batches > 1 ? t.a.rowsPerBatch : 0,
          t.b.batches > 1 ? t.b.rowsPerBatch : 0,
          out.base,
          p.m * p.n,
          p.n,
          accumulate ? 1 : 0,
          ...epilogue.params,
        ],
        [p.alpha],
      ),
      [t.nPad / (4 * lanes), t.mPad / t.tileRows, c.batches],
    );
    // Recorded: later commands on the context's encoder may reuse them (WebGPU orders the accesses).
    textures.release(aTexture);
    textures.release(bTexture);
  }
}

function grid2(count: number, max: number): [number, number] {
  if (count <= max) return [Math.max(count, 1), 1];
  const y = Math.ceil(count / max);
  return [Math.ceil(count / y), y];
}

// ---------------------------------------------------------------------------------------------------------
// Entry points

function problemOf(args: MatmulArgs): Problem {
  const { batch, m, n, k } = args;
  for (const [name, value] of Object.entries({ batch, m, n, k })) {
    if (!Number.isInteger(value) || value < 0)
      throw new RangeError(`matmul: ${name} must be a non-negative integer, got ${value}`);
  }
  const p: Problem = {
    batch,
    m,
    n,
    k,
    transA: args.transA ?? false,
    transB: args.transB ?? false,
    aBatchStride: args.aBatchStride ?? m * k,
    bBatchStride: args.bBatchStride ?? k * n,
    accumulate: args.accumulate ?? false,
    alpha: args.alpha ?? 1,
    dtype: args.dtype ?? "f32",
    bytes: args.dtype === "f16" ? 2 : 4,
  };
  if (p.dtype !== "f32" && p.dtype !== "f16") throw new RangeError(`matmul: unsupported dtype "${p.dtype}"`);
  if (p.aBatchStride < 0 || p.bBatchStride < 0) throw new RangeError("matmul: batch strides must be >= 0");
  if (batch * m * n === 0) return p;
  const need = (name: string, buffer: GPUBuffer, elements: number) => {
    if (buffer.size < elements * p.bytes) {
      throw new RangeError(
        `matmul: buffer ${name} holds ${buffer.size} bytes, the problem reads or writes ${elements * p.bytes}`,
      );
    }
  };
  if (k > 0) {
    need("a", args.a, (batch - 1) * p.aBatchStride + m * k);
    need("b", args.b, (batch - 1) * p.bBatchStride + k * n);
  }
  need("out", args.out, batch * m * n);
  if (args.bias) need("bias", args.bias, n);
  if (args.addend) need("addend", args.addend, batch * m * n);
  return p;
}

/** The shape `matmul` looks up in the context's table of measured choices. */
export function matmulShapeOf(args: MatmulArgs): MatmulShape {
  const { batch, m, n, k } = args;
  return { batch, m, n, k, transA: !!args.transA, transB: !!args.transB, dtype: args.dtype ?? "f32" };
}

/**
 * Which kernel `matmul` runs for these arguments on this context: the forced variant, else the measured
 * winner of the problem's group when tuning is on (matmul-choices.ts), else the fixed rule below.
 */
export function matmulChoice(ctx: GpuContext, args: MatmulArgs): MatmulChoice {
  if (args.variant)
    return {
      variant: args.variant,
      ...(args.blockedTile ? { blockedTile: args.blockedTile } : {}),
      ...(args.directTile ? { directTile: args.directTile } : {}),
      ...(args.directPrefetch ? { directPrefetch: true } : {}),
    };
  const tuned = matmulChoices(ctx)?.lookup(matmulShapeOf(args));
  return tuned ?? fixedRuleChoice(ctx, args);
}

/** The "blocked" tile the fixed rule runs large products with on GPUs (measured: see fixedRuleVariant). */
const FIXED_RULE_BLOCKED_TILE: BlockedTile = { rows: 128, cols: 64, depth: 16 };

/** The kernel the fixed rule runs for a problem of this shape: its variant, with its tile. */
export function fixedRuleChoice(
  ctx: GpuContext,
  args: Pick<MatmulArgs, "m" | "n" | "k" | "transA" | "transB" | "dtype">,
): MatmulChoice {
  const variant = fixedRuleVariant(ctx, args);
  if (variant === "blocked") return { variant, blockedTile: FIXED_RULE_BLOCKED_TILE };
  return variant === "subgroup-matrix-direct" ? { variant, directTile: DIRECT_TILES[0]! } : { variant };
}

/** Which variant `matmul` runs for these arguments on this context's adapter. */
export function matmulVariant(ctx: GpuContext, args: MatmulArgs): MatmulVariant {
  return matmulChoice(ctx, args).variant;
}

/** The variant the fixed rule (no measurements) runs for a problem of this shape. */
export function fixedRuleVariant(
  ctx: GpuContext,
  args: Pick<MatmulArgs, "m" | "n" | "k" | "transA" | "transB" | "dtype">,
): MatmulVariant {
  if (!ctx.info.adapter.isSoftware) {
    // "matvec" reads decode weights coalesced; "tiled" (64 x 64 tiles) takes small and narrow products.
    if (args.m <= MATVEC_MAX_ROWS && args.transB && !args.transA) return "matvec";
    const large = args.m >= 64 && args.n >= 64 && args.m * args.n * args.k >= 2 ** 24;
    const units = large && args.dtype === "f16" ? subgroupMatrixShape(ctx) : undefined;
    // Measured on an H200 at 4096³: fragments loaded straight from the buffers 75 TFLOP/s, staged 28.5.
    if (units)
      return directFits(units, args.m, args.n, args.k) ? "subgroup-matrix-direct" : "subgroup-matrix";
    // Measured on an H200, "blocked 128x64/16" against "tiled": 4096³ 25.7 against 22.2 TFLOP/s, the
    // model's x·W_upᵀ at 512 and 2,048 rows 20.3 / 27.7 against 15.9 / 19.5, its dX 23.3 against 18.6,
    // its dW 24.1 against 23.7, 1024³ even; with 128 columns (n = 128) it lost, 5.7 against 7.9.
    if (args.m >= 512 && args.n >= 512 && args.m * args.n * args.k >= 2 ** 30) return "blocked";
    return "tiled";
  }
  // On software adapters the texture variant wins once a problem fills its 16-row tiles and amortises
  // staging its operands in textures. Measured: 16x896x896 3.6x faster than "buffer", 128³ even,
  // 64³ and m <= 4 (one token per sequence) slower.
  const big = args.m >= 16 && args.n >= 16 && args.m * args.n * args.k >= 2 ** 21;
  return (big || textureDecodes(args)) && textureLanes(ctx) !== undefined ? "texture" : "buffer";
}

/**
 * Decoding's x · Wᵀ with 8-32 rows (a batch of sequences, one token each), below the size rule: with
 * rows of whole 256 bytes (k a multiple of 64) both operands are copied into textures, not repacked, and
 * the texture variant was 1.1-2.3x faster than "buffer" on lavapipe from 16 x 64 x 128 and, with 8 rows,
 * from 256 columns (the embedded model's q/k/v/o, gate/up and head); with 32 rows also unaligned (1.4x
 * at 32 x 128 x 344). Both variants sum each output over k in the same order, so with k in one chunk
 * (TEX_MAX_K) the results are the same bits.
 */
function textureDecodes(args: Pick<MatmulArgs, "m" | "n" | "k" | "transA" | "transB">): boolean {
  const { m, n, k } = args;
  if (args.transA || !args.transB || k > TEX_MAX_K) return false;
  const size = m * n * k;
  if (m >= 32) return size >= 2 ** 18;
  return k % 64 === 0 && ((m >= 16 && size >= 2 ** 17) || (m >= 8 && n >= 256));
}

/** out [batch, m, n] = alpha · op(A) · op(B) (+ out when accumulate). Records work only. */
export function matmul(ctx: GpuContext, args: MatmulArgs): void {
  const p = problemOf(args);
  if (p.batch === 0 || p.m === 0 || p.n === 0) return;
  // k = 0: out = 0 (or unchanged)
  const choice: MatmulChoice = p.k === 0 ? { variant: "buffer" } : matmulChoice(ctx, args);
  const variant = choice.variant;
  if (variant === "texture") runTexture(ctx, args, p);
  else if (variant === "tiled") runTiled(ctx, args, p);
  else if (variant === "blocked") runBlocked(ctx, args, p, choice.blockedTile);
  else if (variant === "subgroup-matrix") runSubgroupMatrix(ctx, args, p);
  else if (variant === "subgroup-matrix-direct") runSubgroupMatrixDirect(ctx, args, p, choice);
  else if (variant === "matvec") runMatvec(ctx, args, p);
  else runBuffer(ctx, args, p);
}

/** Whether the "texture" variant can run on this context (subgroups of a known size). */
export function textureVariantAvailable(ctx: GpuContext): boolean {
  return textureLanes(ctx) !== undefined;
}
