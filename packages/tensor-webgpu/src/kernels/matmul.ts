/**
 * Batched matrix product, the kernel behind every linear layer (forward, dX and dW):
 *
 *   out[b] = alpha · op(A[b]) · op(B[b])   (+ out[b] when accumulate)
 *
 * op(A) is [m, k] (A stored [m, k], or [k, m] when transA), op(B) is [k, n] (B stored [k, n], or [n, k] when
 * transB: x · Wᵀ with W [out, in]). Batch b of A starts aBatchStride elements after batch b-1 (default m·k,
 * 0 broadcasts one A to every batch); likewise B (weights usually have bBatchStride 0).
 *
 * The variants, one tiling scheme each; `matmulVariant` says which one `matmul` runs:
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
 * "blocked-wide" — "blocked" with 16-byte global loads and two alternating stages (one barrier per k-step),
 *   for f32 operands whose rows start on multiples of 4 (others run "blocked"; matmul-blocked-wide.ts). A
 *   tuning candidate until a card has measured it.
 * "subgroup-matrix" — for GPUs with matrix units exposed to WGSL, f16 operands: tensor-core multiplies
 *   with f32 accumulation on 128 x 128 tiles (matmul-gpu.ts).
 * "subgroup-matrix-direct" — the same multiplies with fragments loaded straight from the operands'
 *   buffers, no staging, on 128 x 128 or 64 x 64 tiles; for problems of whole fragments (a ragged one runs
 *   "subgroup-matrix"). Tuning measures both against each other on the card.
 * "subgroup-matrix-pipelined" — the same multiplies on 128 x 128 or 64 x 64 tiles staged in workgroup
 *   memory as tensor-core GEMMs stage them: 16-byte loads, two stages, the next slices' loads in flight
 *   during the multiplies; for operands whose rows start on multiples of 8 halves (others run
 *   "subgroup-matrix"). The fixed rule's choice for large f16 products (2x "subgroup-matrix-direct" on
 *   an H200).
 * "matvec" — for GPUs, x · Wᵀ with at most 16 rows (decoding): 32 invocations per output column read its
 *   weight row in coalesced lines (matmul-gpu.ts); needs A not transposed and B transposed. It takes up
 *   to 256 rows in blocks of 16 (tuning's candidate for decoding many sequences).
 *
 * The problem's description, chunking and the storage-buffer kernels' shared pieces are in
 * matmul-problem.ts; the texture variant in matmul-texture.ts; the GPU kernels' WGSL in matmul-gpu.ts.
 *
 * All variants handle any m, n, k (edges are clamped on load and guarded on store), any batch strides, the
 * four transpose combinations, alpha and accumulate, and f16 operands (dtype "f16": halves converted on
 * load, f32 accumulation, one rounding on store; the texture variant stages them as rgba16float texels,
 * which halves staging memory and measured on par with f32 staging on lavapipe). Problems too large for one storage binding
 * (maxStorageBufferBindingSize), texture (maxTextureDimension2D, 64 MiB) or dispatch are split into
 * chunks over batch, m, n and k (k-chunks after the first accumulate).
 */
import { bufferBytes } from "../gpu/buffer-bytes.js";
import type { GpuContext } from "../gpu/context.js";
import type { FloatStorage } from "./elementwise.js";
import { blockedWideBytes, blockedWideKernel, wideFits } from "./matmul-blocked-wide.js";
import {
  type MatmulChoice,
  type MatmulShape,
  type MatmulVariant,
  matmulChoices,
  matrixFlags,
  pipelinedStoresOf,
} from "./matmul-choices.js";
import {
  BLOCKED_TILE,
  type BlockedTile,
  blockedKernel,
  blockedTileBytes,
  blockedTileProblem,
  directFits,
  GPU_TILE,
  gridEntry,
  MATRIX_TILES,
  MATVEC_BLOCKED_MAX_ROWS,
  MATVEC_COLUMNS,
  MATVEC_MAX_ROWS,
  type MatrixTile,
  matvecKernel,
  matvecRows,
  packedLayout,
  pickSubgroupMatrixShape,
  pipelinedBytes,
  pipelinedDepth,
  pipelinedFits,
  type SubgroupMatrixShape,
  subgroupMatrixDirectKernel,
  subgroupMatrixKernel,
  subgroupMatrixPipelinedKernel,
} from "./matmul-gpu.js";
import {
  type Chunk,
  code,
  dispatchChunks,
  element,
  gemmPreamble,
  type MatmulArgs,
  type Problem,
  source,
  spans,
} from "./matmul-problem.js";
import { runTexture, textureDecodes } from "./matmul-texture.js";
import { textureLanes } from "./texture-lanes.js";

export type { MatmulVariant } from "./matmul-choices.js";
export {
  gemmPreamble,
  limitMatmulForTesting,
  type MatmulArgs,
  type MatmulTestLimits,
} from "./matmul-problem.js";
export { textureVariantAvailable } from "./matmul-texture.js";

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

${gridEntry(TILE, TILE)}
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
// Variants "blocked", "blocked-wide" and "subgroup-matrix" (kernels in matmul-gpu.ts and
// matmul-blocked-wide.ts): up to 128 x 128 tiles per workgroup.

/** A "blocked" or "blocked-wide" tile, checked against the kernel's rules and the device's workgroup memory. */
function checkedBlockedTile(ctx: GpuContext, chosen: BlockedTile | undefined, variant: MatmulVariant) {
  const tile = chosen ?? BLOCKED_TILE;
  const problem = blockedTileProblem(tile);
  if (problem) throw new RangeError(`matmul: ${problem}`);
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const bytes = variant === "blocked-wide" ? blockedWideBytes(tile) : blockedTileBytes(tile);
  if (bytes > limit)
    throw new RangeError(
      `matmul: a ${tile.rows}x${tile.cols} "${variant}" tile with k-step ${tile.depth} needs ${bytes} bytes of workgroup memory, this device has ${limit}`,
    );
  return tile;
}

function blockedPipeline(ctx: GpuContext, p: Problem, tile: BlockedTile): GPUComputePipeline {
  const key = `blocked${tile.rows}x${tile.cols}/${tile.depth} ${code(p)}`;
  const wgsl = source(key, () => blockedKernel(p.transA, p.transB, p.dtype, tile, gemmPreamble(p.dtype)));
  return ctx.pipeline(`matmul ${key}`, wgsl);
}

function runBlocked(ctx: GpuContext, args: MatmulArgs, p: Problem, chosen?: BlockedTile): void {
  const tile = checkedBlockedTile(ctx, chosen, "blocked");
  dispatchChunks(ctx, args, p, blockedPipeline(ctx, p, tile), tile.rows, tile.cols);
}

/**
 * Chunk c of p as a kernel reading vectors along the stored rows sees it: its extents and windows' first
 * elements, in operands whose leading dimensions are the whole problem's.
 */
function chunkLayout(p: Problem, c: Chunk) {
  const s = spans(p, c);
  const [lda, ldb] = [p.transA ? p.m : p.k, p.transB ? p.k : p.n];
  return { ...p, m: c.m, n: c.n, k: c.k, batch: c.batches, lda, ldb, aStart: s.a[0], bStart: s.b[0] };
}

/**
 * Vec4 loads and two stages. A problem that cannot be read in whole vec4s (wideFits) runs "blocked" on the
 * same tile, as does a chunk whose windows or extents fall off a multiple of 4.
 */
function runBlockedWide(ctx: GpuContext, args: MatmulArgs, p: Problem, chosen?: BlockedTile): void {
  const tile = checkedBlockedTile(ctx, chosen, "blocked-wide");
  if (!wideFits(p)) {
    runBlocked(ctx, args, p, tile);
    return;
  }
  const key = `blocked-wide${tile.rows}x${tile.cols}/${tile.depth} ${code(p)}`;
  const wide = ctx.pipeline(
    `matmul ${key}`,
    source(key, () => blockedWideKernel(p.transA, p.transB, tile, gemmPreamble("f32", "vec4f"))),
  );
  const pipelineOf = (c: Chunk) => (wideFits(chunkLayout(p, c)) ? wide : blockedPipeline(ctx, p, tile));
  dispatchChunks(ctx, args, p, pipelineOf, tile.rows, tile.cols);
}

function runMatvec(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  if (p.transA || !p.transB || p.m > MATVEC_BLOCKED_MAX_ROWS) {
    throw new RangeError(
      `matmul: the "matvec" variant takes x · Wᵀ with at most ${MATVEC_BLOCKED_MAX_ROWS} rows (A not transposed, B transposed)`,
    );
  }
  const rows = matvecRows(p.m);
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
  const tile = matrixTileOf(choice, "subgroup-matrix-direct");
  const prefetch = choice.directPrefetch === true;
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

/** The tile a tensor-core variant was given, checked. */
function matrixTileOf(choice: MatmulChoice, variant: MatmulVariant): MatrixTile {
  const tile = choice.matrixTile ?? MATRIX_TILES[0]!;
  if (!MATRIX_TILES.includes(tile))
    throw new RangeError(`matmul: a "${variant}" tile is one of ${MATRIX_TILES.join(", ")}, got ${tile}`);
  return tile;
}

/**
 * Slices staged through 16-byte loads. A problem whose operand rows do not start on multiples of 8 halves
 * runs the staged kernel instead, as does a chunk that starts or ends off such a multiple.
 */
function runSubgroupMatrixPipelined(
  ctx: GpuContext,
  args: MatmulArgs,
  p: Problem,
  choice: MatmulChoice,
): void {
  const shape = matrixUnitsFor(ctx, p, "subgroup-matrix-pipelined");
  const tile = matrixTileOf(choice, "subgroup-matrix-pipelined");
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const depth = pipelinedDepth(tile, shape, limit);
  if (!depth)
    throw new RangeError(
      `matmul: a ${tile}x${tile} "subgroup-matrix-pipelined" tile needs ${pipelinedBytes(tile, shape, 16)} bytes of workgroup memory, this device has ${limit}`,
    );
  const stores = pipelinedStoresOf(choice);
  if (stores === "wide" && !ctx.info.features.subgroupMatrixViews)
    throw new RangeError(
      'matmul: "subgroup-matrix-pipelined" with wide stores needs subgroup-matrix loads through WGSL buffer views, which this adapter does not compile',
    );
  if (!pipelinedFits(p)) {
    runSubgroupMatrix(ctx, args, p);
    return;
  }
  const lanes = ctx.info.subgroupSizes.max;
  const key = `subgroup-matrix-pipelined${tile}/${depth} ${stores} ${shape.m}x${shape.n}x${shape.k}/${lanes} ${code(p)}`;
  const pipelined = ctx.pipeline(
    `matmul ${key}`,
    source(key, () =>
      subgroupMatrixPipelinedKernel(
        p.transA,
        p.transB,
        shape,
        lanes,
        tile,
        depth,
        gemmPreamble("f16", "vec4<u32>"),
        stores,
      ),
    ),
  );
  const staged = () => subgroupMatrixPipeline(ctx, p, shape);
  dispatchChunks(ctx, args, p, (c) => (pipelinedFits(chunkLayout(p, c)) ? pipelined : staged()), tile, tile);
}

// ---------------------------------------------------------------------------------------------------------
// Entry points

export function problemOf(args: MatmulArgs): Problem {
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
    if (bufferBytes(buffer) < elements * p.bytes) {
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
      ...(args.matrixTile ? { matrixTile: args.matrixTile } : {}),
      ...matrixFlags(args),
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
  return variant === "subgroup-matrix-direct" || variant === "subgroup-matrix-pipelined"
    ? { variant, matrixTile: FIXED_RULE_MATRIX_TILE }
    : { variant };
}

/** The tensor-core tile the fixed rule runs (the larger: measured on an H200 at 4096³, see fixedRuleVariant). */
const FIXED_RULE_MATRIX_TILE = MATRIX_TILES[0]!;

/**
 * Whether the fixed rule's "subgroup-matrix-pipelined" tile can run this problem, laid out densely: wide
 * loads of its contiguous axes, and two stages of a k-step in the device's workgroup memory.
 */
function pipelinedRuns(
  ctx: GpuContext,
  units: SubgroupMatrixShape,
  args: Pick<MatmulArgs, "m" | "n" | "k" | "transA" | "transB">,
): boolean {
  const { m, n, k } = args;
  const layout = packedLayout({ batch: 1, m, n, k, transA: !!args.transA, transB: !!args.transB });
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  return pipelinedFits(layout) && pipelinedDepth(FIXED_RULE_MATRIX_TILE, units, limit) !== undefined;
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
    // Measured on an H200 at 4096³, 128 x 128 tiles: slices staged through registers and two alternating
    // stages ("pipelined") 142.2 TFLOP/s, fragments loaded straight from the buffers ("direct") 68.1 to 75,
    // slices staged an element at a time 28.5.
    if (units) {
      if (pipelinedRuns(ctx, units, args)) return "subgroup-matrix-pipelined";
      return directFits(units, args.m, args.n, args.k) ? "subgroup-matrix-direct" : "subgroup-matrix";
    }
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
  else if (variant === "blocked-wide") runBlockedWide(ctx, args, p, choice.blockedTile);
  else if (variant === "subgroup-matrix") runSubgroupMatrix(ctx, args, p);
  else if (variant === "subgroup-matrix-direct") runSubgroupMatrixDirect(ctx, args, p, choice);
  else if (variant === "subgroup-matrix-pipelined") runSubgroupMatrixPipelined(ctx, args, p, choice);
  else if (variant === "matvec") runMatvec(ctx, args, p);
  else runBuffer(ctx, args, p);
}
