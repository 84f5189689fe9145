/**
 * The matmul kernels shaped for discrete GPUs (NVIDIA, AMD, Apple, Intel Arc), where workgroup memory is
 * fast on-chip storage and registers are plentiful — the opposite of lavapipe, where the "texture" variant
 * wins. matmul.ts plans the chunks and dispatches; this file only generates WGSL.
 *
 * "blocked" — register blocking through workgroup memory, the classic SGEMM scheme:
 *   - a workgroup of 16 x 16 invocations computes a 128 x 128 output tile (by default; 64 x 64, 64 x 128
 *     and 128 x 64 too); each invocation 8 x 8 outputs (4 x 4, 4 x 8, 8 x 4), as 4-row by 4-column blocks
 *     64 apart (rows ty·4.., 64 + ty·4..; columns likewise), so that its reads of the tiles are whole vec4s
 *     and neighbouring invocations read neighbouring vec4s;
 *   - per step of `bk` along k, the workgroup stages A's 128 x bk and B's bk x 128 slices in workgroup
 *     memory as vec4s of 4 rows (of A) or 4 columns (of B), one padding vec4 per k-row so that the stores
 *     of invocations that differ in k land in different banks;
 *   - the next step's slices are loaded from memory into registers while the current one is multiplied
 *     (software pipelining: global latency hides behind 8·8·bk multiply-adds);
 *   - each invocation's global loads take 4 consecutive elements of the stored layout's contiguous axis, so
 *     a warp reads whole cache lines whatever the transposes.
 *   Operands may be f16 (converted on load; workgroup memory and accumulation stay f32).
 *
 * "subgroup-matrix" — tensor cores through WGSL subgroup matrices (Dawn's
 *   chromium_experimental_subgroup_matrix; Vulkan's cooperative matrices), f16 operands with an f32
 *   accumulator, for adapters that offer such a configuration (M x N x K, e.g. 16 x 16 x 16):
 *   - a workgroup of 8 subgroups computes a 128 x 128 tile (subgroups as 2 rows x 4 columns, each a
 *     64 x 32 block of (64/M) x (32/N) accumulator matrices);
 *   - per step of 32 along k, A's 128 x 32 and B's 32 x 128 slices are staged as halves in workgroup
 *     memory in their stored orientation (a transposed operand is loaded column-major, which is free);
 *   - results go through a per-subgroup f32 scratch matrix in workgroup memory to the shared store
 *     epilogue (alpha, accumulate, edges, one rounding for f16 out).
 *
 * "subgroup-matrix-direct" — the same multiplies without staging: each of 4 subgroups loads its fragments
 *   straight from the storage buffers and computes a quarter of a 128 x 128 (or 64 x 64) tile, leaving
 *   reuse between subgroups to the caches. Staging costs every invocation scalar loads, stores and index
 *   arithmetic per element: on an H200 at 4096³ the direct kernel made 75 TFLOP/s, the staged one 28.5.
 */
import { type FloatStorage, f32Bits } from "./elementwise.js";

/** 0, 1, ..., n - 1: the indices a generator unrolls over. */
export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** WGSL index of element (row, col) of a matrix stored row-major, or column-major when `transposed`. */
export const storedIndex = (
  base: string,
  ld: string,
  row: string,
  col: string,
  transposed: boolean,
): string => (transposed ? `${base} + (${col}) * ${ld} + (${row})` : `${base} + (${row}) * ${ld} + (${col})`);

/** Output tile of the subgroup-matrix kernel and of the default "blocked" one (rows and columns per workgroup). */
export const GPU_TILE = 128;

/**
 * The output tile and k-step of a "blocked" kernel: 64 or 128 rows by 64 or 128 columns (each invocation
 * of the 16 x 16 takes 4 or 8 of each), k in steps of 8, 16 or 32. A slice of either operand must give
 * every invocation whole vec4s to stage: rows x depth and cols x depth at least 1024.
 */
export interface BlockedTile {
  rows: 64 | 128;
  cols: 64 | 128;
  depth: 8 | 16 | 32;
}

/** The default "blocked" tile: the classic 128 x 128, 8 x 8 per invocation, k-step 8. */
export const BLOCKED_TILE: BlockedTile = { rows: 128, cols: 128, depth: 8 };

/** Why a tile cannot be a "blocked" kernel, or undefined when it can. */
export function blockedTileProblem(tile: BlockedTile): string | undefined {
  if (![64, 128].includes(tile.rows) || ![64, 128].includes(tile.cols) || ![8, 16, 32].includes(tile.depth))
    return `a blocked tile is 64 or 128 rows by 64 or 128 columns with a k-step of 8, 16 or 32, got ${tile.rows}x${tile.cols}/${tile.depth}`;
  if (tile.rows * tile.depth < 1024 || tile.cols * tile.depth < 1024)
    return `a ${tile.rows}x${tile.cols} tile needs a k-step of at least ${1024 / Math.min(tile.rows, tile.cols)}`;
  return undefined;
}

/** Every tile a "blocked" kernel takes, the default first. */
export const BLOCKED_TILES: readonly BlockedTile[] = [BLOCKED_TILE].concat(
  ([128, 64] as const).flatMap((rows) =>
    ([128, 64] as const).flatMap((cols) =>
      ([8, 16, 32] as const)
        .map((depth): BlockedTile => ({ rows, cols, depth }))
        .filter((t) => !blockedTileProblem(t) && !(t.rows === 128 && t.cols === 128 && t.depth === 8)),
    ),
  ),
);

/** Workgroup memory of a "blocked" kernel: both staged slices, one padding vec4 per k-row. */
export const blockedTileBytes = (tile: BlockedTile): number =>
  16 * tile.depth * (tile.rows / 4 + 1 + tile.cols / 4 + 1);

/**
 * WGSL: the entry point of the kernels run by 16 x 16 invocations, one `rows` x `cols` output tile per
 * workgroup: invocation index t, the batch's operand bases and the tile's origin.
 */
export const gridEntry = (rows: number, cols: number): string => /* wgsl */ `@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let t = lid.y * 16u + lid.x;
  let batch = wg.z;
  let aBase = p.aBase + batch * p.aBatchStride;
  let bBase = p.bBase + batch * p.bBatchStride;
  let tileRow = wg.y * ${rows}u;
  let tileCol = wg.x * ${cols}u;`;

/** WGSL: store 4 consecutive outputs of a row through the epilogue, skipping those past the edges. */
export const STORE_ROW = /* wgsl */ `fn storeRow(outBase: u32, row: u32, col: u32, v: vec4f) {
  if (row >= p.m) { return; }
  for (var j = 0u; j < 4u; j++) {
    if (col + j < p.n) { storeOut(outBase + row * p.ldo + col + j, col + j, v[j]); }
  }
}`;

/**
 * WGSL pieces of the "blocked" kernels' register blocking: each invocation's 4 x 4 blocks of accumulators
 * (rows ty·4.. and 64 + ty·4.., columns likewise), the reads of one k-row kk of the staged slices (vec4s
 * of 4 rows of A, 4 columns of B; from `aAt`/`bAt`, the stage's first vec4), the multiply-adds, and the
 * stores from `row0`, `col0`.
 */
export function registerBlock(tile: BlockedTile, aStride: number, bStride: number, aAt = "", bAt = "") {
  // Blocks of 4 rows (columns) per invocation, 64 apart: 1 for a 64-wide tile, 2 for 128.
  const rowBlocks = tile.rows / 64;
  const colBlocks = tile.cols / 64;
  const accumulators: string[] = [];
  const fmas: string[] = [];
  const outputs: string[] = [];
  const reads: string[] = [];
  const from = (at: string) => (at ? `${at} + ` : "");
  for (let i = 0; i < rowBlocks; i++)
    reads.push(`let a${i} = aTile[${from(aAt)}kk * ${aStride}u + ${16 * i}u + lid.y];`);
  for (let j = 0; j < colBlocks; j++)
    reads.push(`let b${j} = bTile[${from(bAt)}kk * ${bStride}u + ${16 * j}u + lid.x];`);
  for (let r = 0; r < 4 * rowBlocks; r++) {
    const a = `a${Math.floor(r / 4)}.${"xyzw"[r % 4]}`;
    for (let j = 0; j < colBlocks; j++) {
      accumulators.push(`var acc${r}_${j} = vec4f(0.0);`);
      fmas.push(`acc${r}_${j} = fma(vec4f(${a}), b${j}, acc${r}_${j});`);
      const row = `row0 + ${64 * Math.floor(r / 4) + (r % 4)}u`;
      const col = `col0 + ${j * 64}u`;
      outputs.push(`storeRow(outBase, ${row}, ${col}, acc${r}_${j});`);
    }
  }
  return { accumulators, reads, fmas, outputs };
}

/**
 * A "blocked" tile's staged slices (the tile checked): the k-step, vec4s per k-row of A's and B's slice,
 * their row strides (one vec4 of padding per k-row) and the vec4s each of the 256 invocations stages.
 */
export function blockedSlices(tile: BlockedTile) {
  const problem = blockedTileProblem(tile);
  if (problem) throw new RangeError(problem);
  const bk = tile.depth;
  const aQuads = tile.rows / 4;
  const bQuads = tile.cols / 4;
  return {
    bk,
    aQuads,
    bQuads,
    aStride: aQuads + 1,
    bStride: bQuads + 1,
    aLoads: (aQuads * bk) / 256,
    bLoads: (bQuads * bk) / 256,
  };
}

/**
 * WGSL of the "blocked" kernel. `preamble` declares the enables, the uniform struct `Params` (m, n, k,
 * bases, strides, leading dimensions), the bindings a, b, out, bias, addend, p and the `storeOut(index, col, value)` epilogue.
 */
export function blockedKernel(
  transA: boolean,
  transB: boolean,
  storage: FloatStorage,
  tile: BlockedTile,
  preamble: string,
): string {
  const { bk, aQuads, bQuads, aStride, bStride, aLoads, bLoads } = blockedSlices(tile);
  const read = (array: string, index: string) =>
    storage === "f32" ? `${array}[${index}]` : `f32(${array}[${index}])`;
  // Where invocation t's i-th vec4 of a slice comes from: (quad, kk) = 4 rows (A) or columns (B) at kk.
  // Contiguous along k: neighbours take neighbouring k. Contiguous along rows/columns: neighbouring quads.
  const slot = (kContiguous: boolean, quads: number, i: number) =>
    kContiguous
      ? { quad: `(t / ${bk}u + ${(256 / bk) * i}u)`, kk: `(t % ${bk}u)` }
      : { quad: `(t % ${quads}u)`, kk: `(t / ${quads}u + ${256 / quads}u * ${i}u)` };
  const loads: string[] = [];
  const stores: string[] = [];
  const declareNext: string[] = [];
  for (let i = 0; i < aLoads; i++) {
    const a = slot(!transA, aQuads, i);
    declareNext.push(`var aNext${i} = vec4f(0.0);`);
    loads.push(`aNext${i} = loadA4(aBase, tileRow + ${a.quad} * 4u, k0 + ${a.kk});`);
    stores.push(`aTile[${a.kk} * ${aStride}u + ${a.quad}] = aNext${i};`);
  }
  for (let i = 0; i < bLoads; i++) {
    const b = slot(transB, bQuads, i);
    declareNext.push(`var bNext${i} = vec4f(0.0);`);
    loads.push(`bNext${i} = loadB4(bBase, k0 + ${b.kk}, tileCol + ${b.quad} * 4u);`);
    stores.push(`bTile[${b.kk} * ${bStride}u + ${b.quad}] = bNext${i};`);
  }
  const { accumulators, reads, fmas, outputs } = registerBlock(tile, aStride, bStride);
  // Element (row, col) of op(A) / op(B) in storage, for the stored layouts.
  const aIndex = (row: string, kk: string) => storedIndex("aBase", "p.lda", row, kk, transA);
  const bIndex = (kk: string, col: string) => storedIndex("bBase", "p.ldb", kk, col, transB);
  return /* wgsl */ `${preamble}

// aTile[kk * ${aStride} + q]: rows 4q..4q+3 of the tile at k-offset kk; bTile likewise for columns.
var<workgroup> aTile: array<vec4f, ${bk * aStride}>;
var<workgroup> bTile: array<vec4f, ${bk * bStride}>;

// op(A)[row..row+3][kk], zero outside the matrix (reads clamped to valid addresses).
fn loadA4(aBase: u32, row: u32, kk: u32) -> vec4f {
  let k = min(kk, p.k - 1u);
  var v = vec4f(0.0);
  for (var i = 0u; i < 4u; i++) {
    let r = min(row + i, p.m - 1u);
    v[i] = select(0.0, ${read("a", aIndex("r", "k"))}, row + i < p.m && kk < p.k);
  }
  return v;
}

// op(B)[kk][col..col+3], zero outside the matrix.
fn loadB4(bBase: u32, kk: u32, col: u32) -> vec4f {
  let k = min(kk, p.k - 1u);
  var v = vec4f(0.0);
  for (var i = 0u; i < 4u; i++) {
    let c = min(col + i, p.n - 1u);
    v[i] = select(0.0, ${read("b", bIndex("k", "c"))}, col + i < p.n && kk < p.k);
  }
  return v;
}

${STORE_ROW}
${gridEntry(tile.rows, tile.cols)}
  ${accumulators.join(" ")}
  ${declareNext.join(" ")}
  var k0 = 0u;
  ${loads.join("\n  ")}
  for (; k0 < p.k;) {
    ${stores.join("\n    ")}
    workgroupBarrier();
    k0 += ${bk}u;
    if (k0 < p.k) {
      ${loads.join("\n      ")}
    }
    for (var kk = 0u; kk < ${bk}u; kk++) {
      ${reads.join("\n      ")}
      ${fmas.join("\n      ")}
    }
    workgroupBarrier();
  }
  let row0 = tileRow + lid.y * 4u;
  let col0 = tileCol + lid.x * 4u;
  let outBase = p.outBase + batch * p.outBatchStride;
  ${outputs.join("\n  ")}
}`;
}

/** A subgroup-matrix shape the adapter offers: left M x K, right K x N, result M x N. */
export interface SubgroupMatrixShape {
  m: number;
  n: number;
  k: number;
}

/** The adapter's f16 x f16 -> f32 subgroup-matrix shape that fits the kernel's tiling, if any. */
export function pickSubgroupMatrixShape(
  configs: readonly { componentType: string; resultType: string; M: number; N: number; K: number }[],
): SubgroupMatrixShape | undefined {
  const fits = configs.filter(
    (c) =>
      c.componentType === "f16" &&
      c.resultType === "f32" &&
      64 % c.M === 0 &&
      32 % c.N === 0 &&
      SUBGROUP_MATRIX_DEPTH % c.K === 0,
  );
  // Larger fragments mean fewer loads per multiply-add.
  fits.sort((x, y) => y.M * y.N * y.K - x.M * x.N * x.K);
  const best = fits[0];
  return best ? { m: best.M, n: best.N, k: best.K } : undefined;
}

/**
 * WGSL of storeFragment: a subgroup's f32 result matrix goes through its slot of `scratch` (declared by the
 * kernel, M·N floats per subgroup) to the shared store epilogue, lane by lane, inside the output's edges.
 */
function fragmentStore(result: string, M: number, N: number, lanes: number): string {
  return /* wgsl */ `fn storeFragment(value: ${result}, row0: u32, col0: u32, sg: u32, lane: u32, outBase: u32) {
  // Every subgroup calls this the same number of times, so the barriers are in uniform control flow.
  let base = sg * ${M * N}u;
  subgroupMatrixStore(&scratch, base, value, false, ${N}u);
  workgroupBarrier();
  for (var e = lane; e < ${M * N}u; e += ${lanes}u) {
    let row = row0 + e / ${N}u;
    let col = col0 + e % ${N}u;
    if (row < p.m && col < p.n) { storeOut(outBase + row * p.ldo + col, col, scratch[base + e]); }
  }
  workgroupBarrier();
}
`;
}

/**
 * WGSL: the entry point of a staged tensor-core kernel of `invocations` on `tile` x `tile` outputs, up to
 * its batch's operand bases and its tile's first row and column.
 */
const stagedEntry = (
  invocations: number,
  tile: number,
): string => /* wgsl */ `@compute @workgroup_size(${invocations})
fn main(@builtin(local_invocation_index) lane: u32, @builtin(subgroup_id) sg: u32,
        @builtin(subgroup_invocation_id) sgLane: u32, @builtin(workgroup_id) wg: vec3u) {
  let batch = wg.z;
  let aBase = p.aBase + batch * p.aBatchStride;
  let bBase = p.bBase + batch * p.bBatchStride;
  let tileRow = wg.y * ${tile}u;
  let tileCol = wg.x * ${tile}u;`;

/** WGSL: a subgroup's accumulators acc<i>_<j> stored at its block (blockRow, blockCol) of the output. */
const storeBlock = (pairs: readonly (readonly [number, number])[], shape: SubgroupMatrixShape): string =>
  ["let outBase = p.outBase + batch * p.outBatchStride;"]
    .concat(
      pairs.map(
        ([i, j]) =>
          `storeFragment(acc${i}_${j}, blockRow + ${i * shape.m}u, blockCol + ${j * shape.n}u, sg, sgLane, outBase);`,
      ),
    )
    .join("\n  ");

/** k-step of the subgroup-matrix kernel (halves per staged row). */
const SUBGROUP_MATRIX_DEPTH = 32;
/** Subgroups per workgroup, as 2 rows x 4 columns of 64 x 32 blocks. */
const SUBGROUPS = 8;

/**
 * WGSL of the "subgroup-matrix" kernel for f16 operands; `lanes` is the adapter's subgroup size (it must
 * be fixed: subgroupMinSize = subgroupMaxSize, so that the workgroup holds exactly 8 subgroups).
 */
export function subgroupMatrixKernel(
  transA: boolean,
  transB: boolean,
  shape: SubgroupMatrixShape,
  lanes: number,
  preamble: string,
): string {
  const { m: M, n: N, k: K } = shape;
  const bk = SUBGROUP_MATRIX_DEPTH;
  const pad = 8; // halves of padding per staged row: 16 bytes, so rows start in different banks
  // A staged as [row][k] (or [k][row] when transposed); B as [k][col] (or [col][k]).
  const aStride = (transA ? GPU_TILE : bk) + pad;
  const bStride = (transB ? bk : GPU_TILE) + pad;
  const aRows = transA ? bk : GPU_TILE;
  const bRows = transB ? GPU_TILE : bk;
  const fm = 64 / M;
  const fn = 32 / N;
  const invocations = lanes * SUBGROUPS;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  const declare: string[] = [];
  const multiply: string[] = [];
  const epilogue: string[] = [];
  for (let i = 0; i < fm; i++) {
    for (let j = 0; j < fn; j++) {
      declare.push(`var acc${i}_${j} = ${result}();`);
      multiply.push(`acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`);
      epilogue.push(
        `storeFragment(acc${i}_${j}, blockRow + ${i * M}u, blockCol + ${j * N}u, sg, sgLane, outBase);`,
      );
    }
  }
  const loadsLeft = Array.from({ length: fm }, (_, i) => {
    const row = `blockRowInTile + ${i * M}u`;
    const offset = transA ? `kk * ${aStride}u + ${row}` : `(${row}) * ${aStride}u + kk`;
    return `let l${i} = subgroupMatrixLoad<${left}>(&aTile, ${offset}, ${transA}, ${aStride}u);`;
  });
  const loadsRight = Array.from({ length: fn }, (_, j) => {
    const col = `blockColInTile + ${j * N}u`;
    const offset = transB ? `(${col}) * ${bStride}u + kk` : `kk * ${bStride}u + ${col}`;
    return `let r${j} = subgroupMatrixLoad<${right}>(&bTile, ${offset}, ${transB}, ${bStride}u);`;
  });
  const aIndex = (row: string, kk: string) => storedIndex("aBase", "p.lda", row, kk, transA);
  const bIndex = (kk: string, col: string) => storedIndex("bBase", "p.ldb", kk, col, transB);
  // Staging: the slice's elements in stored order, (major, minor) with minor contiguous in memory.
  const aMinor = transA ? GPU_TILE : bk;
  const bMinor = transB ? bk : GPU_TILE;
  return /* wgsl */ `enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
${preamble}

var<workgroup> aTile: array<f16, ${aRows * aStride}>;
var<workgroup> bTile: array<f16, ${bRows * bStride}>;
var<workgroup> scratch: array<f32, ${SUBGROUPS * M * N}>;
${fragmentStore(result, M, N, lanes)}
${stagedEntry(invocations, GPU_TILE)}
  let blockRowInTile = (sg / 4u) * 64u;
  let blockColInTile = (sg % 4u) * 32u;
  ${declare.join("\n  ")}
  for (var k0 = 0u; k0 < p.k; k0 += ${bk}u) {
    for (var e = lane; e < ${aRows * aMinor}u; e += ${invocations}u) {
      let major = e / ${aMinor}u;
      let minor = e % ${aMinor}u;
      let row = tileRow + ${transA ? "minor" : "major"};
      let kk = k0 + ${transA ? "major" : "minor"};
      let v = a[${aIndex("min(row, p.m - 1u)", "min(kk, p.k - 1u)")}];
      aTile[major * ${aStride}u + minor] = select(f16(0.0), v, row < p.m && kk < p.k);
    }
    for (var e = lane; e < ${bRows * bMinor}u; e += ${invocations}u) {
      let major = e / ${bMinor}u;
      let minor = e % ${bMinor}u;
      let col = tileCol + ${transB ? "major" : "minor"};
      let kk = k0 + ${transB ? "minor" : "major"};
      let v = b[${bIndex("min(kk, p.k - 1u)", "min(col, p.n - 1u)")}];
      bTile[major * ${bStride}u + minor] = select(f16(0.0), v, col < p.n && kk < p.k);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${bk}u; kk += ${K}u) {
      ${loadsLeft.join("\n      ")}
      ${loadsRight.join("\n      ")}
      ${multiply.join("\n      ")}
    }
    workgroupBarrier();
  }
  let blockRow = tileRow + blockRowInTile;
  let blockCol = tileCol + blockColInTile;
  let outBase = p.outBase + batch * p.outBatchStride;
  ${epilogue.join("\n  ")}
}`;
}

/** Square output tiles of the "subgroup-matrix-direct" kernel: 128 for large products, 64 for more workgroups. */
export type MatrixTile = 64 | 128;
/** Every direct tile, the default first. */
export const MATRIX_TILES: readonly MatrixTile[] = [128, 64];
/** Subgroups per workgroup of the "subgroup-matrix-direct" kernel, as 2 x 2 blocks of the tile. */
const DIRECT_SUBGROUPS = 4;

/** Whether the "subgroup-matrix-direct" kernel can run an m x n x k problem: whole fragments on every axis. */
export const directFits = (shape: SubgroupMatrixShape, m: number, n: number, k: number): boolean =>
  m % shape.m === 0 && n % shape.n === 0 && k % shape.k === 0;

/**
 * WGSL of the "subgroup-matrix-direct" kernel: each subgroup loads its fragments straight from the
 * storage buffers (the caches share them between the workgroup's subgroups) instead of staging the
 * slices in workgroup memory, so the k-loop is only loads and multiplies. Fragments must not straddle
 * an edge (directFits): a fragment past m or n starts at the last whole one instead, reads real rows,
 * and is not stored. A subgroup computes a (tile/2) x (tile/2) block. `prefetch`: each k-step's loads are
 * issued one step ahead, in a second set of fragment registers.
 */
export function subgroupMatrixDirectKernel(
  transA: boolean,
  transB: boolean,
  shape: SubgroupMatrixShape,
  lanes: number,
  tile: MatrixTile,
  preamble: string,
  prefetch = false,
): string {
  const { m: M, n: N, k: K } = shape;
  const block = tile / 2;
  const fm = block / M;
  const fn = block / N;
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  const pairs = range(fm).flatMap((i) => range(fn).map((j) => [i, j] as const));
  const aIndex = (row: string, k: string) => storedIndex("aBase", "p.lda", row, k, transA);
  const bIndex = (col: string, k: string) => storedIndex("bBase", "p.ldb", k, col, transB);
  // The fragments of k-step `k`, declared as `prefix`l<i> and `prefix`r<j> (`var` when replaced later).
  const loads = (k: string, declare: "let" | "var", prefix: string, indent = "    ") =>
    [
      ...range(fm).map(
        (i) =>
          `${declare} ${prefix}l${i} = subgroupMatrixLoad<${left}>(&a, ${aIndex(`row${i}`, k)}, ${transA}, p.lda);`,
      ),
      ...range(fn).map(
        (j) =>
          `${declare} ${prefix}r${j} = subgroupMatrixLoad<${right}>(&b, ${bIndex(`col${j}`, k)}, ${transB}, p.ldb);`,
      ),
    ].join(`\n${indent}`);
  const multiplies = pairs
    .map(([i, j]) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`)
    .join("\n    ");
  // With prefetch the next k-step's fragments are loaded before this step's multiplies, so their memory
  // latency hides behind them (the last step loads its own again: clamped, and unused).
  const loop = prefetch
    ? `${loads("0u", "var", "", "  ")}
  for (var kk = 0u; kk < p.k; kk += ${K}u) {
    let kNext = min(kk + ${K}u, p.k - ${K}u);
    ${loads("kNext", "let", "next")}
    ${multiplies}
    ${[...range(fm).map((i) => `l${i} = nextl${i};`), ...range(fn).map((j) => `r${j} = nextr${j};`)].join(" ")}
  }`
    : `for (var kk = 0u; kk < p.k; kk += ${K}u) {
    ${loads("kk", "let", "")}
    ${multiplies}
  }`;
  return /* wgsl */ `enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
${preamble}

var<workgroup> scratch: array<f32, ${DIRECT_SUBGROUPS * M * N}>;
${fragmentStore(result, M, N, lanes)}
@compute @workgroup_size(${lanes * DIRECT_SUBGROUPS})
fn main(@builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) sgLane: u32,
        @builtin(workgroup_id) wg: vec3u) {
  let batch = wg.z;
  let aBase = p.aBase + batch * p.aBatchStride;
  let bBase = p.bBase + batch * p.bBatchStride;
  let blockRow = wg.y * ${tile}u + (sg / 2u) * ${block}u;
  let blockCol = wg.x * ${tile}u + (sg % 2u) * ${block}u;
  ${range(fm)
    .map((i) => `let row${i} = min(blockRow + ${i * M}u, p.m - ${M}u);`)
    .join("\n  ")}
  ${range(fn)
    .map((j) => `let col${j} = min(blockCol + ${j * N}u, p.n - ${N}u);`)
    .join("\n  ")}
  ${pairs.map(([i, j]) => `var acc${i}_${j} = ${result}();`).join("\n  ")}
  ${loop}
  ${storeBlock(pairs, shape)}
}`;
}

/**
 * k-steps of the "subgroup-matrix-pipelined" kernel (halves of each operand row staged per step): 32
 * where the device's workgroup memory holds two stages of it, else 16 (a 128 x 128 tile at 32 needs
 * 44 KiB, more than WebGPU's default 16 KiB or lavapipe's 32 KiB).
 */
export type PipelinedDepth = 16 | 32;
/** Halves of padding per staged row: 16 bytes, so that consecutive rows start in different banks. */
const PIPELINED_PAD = 8;
/** Halves per wide load: one vec4<u32>. */
const WIDE = 8;

/**
 * How the "subgroup-matrix-pipelined" kernel writes each 16-byte load into its workgroup stage: as 8
 * halves in order ("halves"); as 8 halves in an order rotated per lane, so that the lanes of each store
 * write to different banks ("rotated", see storeRotations); or whole, through a view of the stage as
 * vec4<u32> ("wide", needs WGSL's buffer_view and subgroup-matrix loads through views).
 */
export type PipelinedStores = "halves" | "rotated" | "wide";

/** Lanes of a subgroup whose stores go out together (NVIDIA's warp), and workgroup memory's 4-byte banks. */
const STORE_LANES = 32;
const BANKS = 32;

/**
 * Staged stores by rotation: for each of STORE_LANES lanes, by how many 4-byte words to rotate the order in
 * which it writes its 16-byte slot of a stage whose rows hold `perRow` slots, `stride` halves apart. Slots
 * 128 bytes apart share banks, and every layout of the kernel puts 4 of a subgroup's 32 slots in each of
 * the 8 bank groups: written in the same order, each store instruction writes 4 words into each bank it
 * touches and takes 4 passes. Ranking the lanes within their group gives the 4 different words, so each
 * store takes one pass. The order is only a schedule: any rotation stores the same values.
 */
export function storeRotations(perRow: number, stride: number): number[] {
  const groups = (BANKS * 4) / (WIDE * 2);
  const ranks = new Map<number, number>();
  return range(STORE_LANES).map((lane) => {
    const slot = Math.floor(lane / perRow) * (stride / WIDE) + (lane % perRow);
    const group = slot % groups;
    const rank = ranks.get(group) ?? 0;
    ranks.set(group, rank + 1);
    return rank % 4;
  });
}

/** The rotations of storeRotations packed 2 bits a lane into two u32s (lanes 0-15, then 16-31). */
function packedRotations(rotations: readonly number[]): [number, number] {
  const pack = (part: readonly number[]) => part.reduce((bits, r, i) => bits + r * 4 ** i, 0);
  return [pack(rotations.slice(0, 16)), pack(rotations.slice(16))];
}

/**
 * A problem's operands as a kernel that reads vectors along their stored rows sees them. The leading
 * dimensions default to the problem's own (operands stored densely); a chunk of a larger problem gives the
 * whole problem's, with its windows' first elements (`aStart`, `bStart`).
 */
export interface OperandLayout {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  batch: number;
  aBatchStride: number;
  bBatchStride: number;
  lda?: number;
  ldb?: number;
  aStart?: number;
  bStart?: number;
}

/**
 * Whether both operands can be read in whole vectors of `width` elements along their stored rows: leading
 * dimensions, batch strides (with more than one batch), first elements and the extents along the stored
 * rows all multiples of `width`, so that each vector is wholly inside the problem or wholly outside it.
 */
export function inWholeVectors(p: OperandLayout, width: number): boolean {
  const contiguous = [p.transA ? p.m : p.k, p.transB ? p.k : p.n];
  const leading = [p.lda ?? contiguous[0]!, p.ldb ?? contiguous[1]!];
  const strides = p.batch === 1 ? [] : [p.aBatchStride, p.bBatchStride];
  const aligned = [...leading, p.aStart ?? 0, p.bStart ?? 0, ...contiguous, ...strides];
  return aligned.every((x) => x % width === 0);
}

/** A problem's operands stored densely: no offsets or padded rows, batch items one after another. */
export const packedLayout = (
  shape: Pick<OperandLayout, "batch" | "m" | "n" | "k" | "transA" | "transB">,
): OperandLayout => ({ ...shape, aBatchStride: shape.m * shape.k, bBatchStride: shape.k * shape.n });

/**
 * Whether the "subgroup-matrix-pipelined" kernel can read a problem's operands in wide loads: 8 halves of
 * the stored layout's contiguous axis at a time (inWholeVectors). Other edges may be ragged.
 */
export const pipelinedFits = (p: OperandLayout): boolean => inWholeVectors(p, WIDE);

/** Workgroup memory of a "subgroup-matrix-pipelined" kernel: two stages of both slices and the store scratch. */
export function pipelinedBytes(tile: MatrixTile, shape: SubgroupMatrixShape, depth: PipelinedDepth): number {
  const widest = Math.max(tile * (depth + PIPELINED_PAD), depth * (tile + PIPELINED_PAD));
  return 2 * 2 * widest * 2 + DIRECT_SUBGROUPS * shape.m * shape.n * 4;
}

/** The deeper k-step whose stages fit `limit` bytes of workgroup memory, if either does. */
export function pipelinedDepth(
  tile: MatrixTile,
  shape: SubgroupMatrixShape,
  limit: number,
): PipelinedDepth | undefined {
  return ([32, 16] as const).find(
    (depth) => pipelinedBytes(tile, shape, depth) <= limit && depth % shape.k === 0,
  );
}

/**
 * WGSL of the "subgroup-matrix-pipelined" kernel: the staged scheme done the way tensor-core GEMMs do it.
 * Four subgroups each compute a (tile/2) x (tile/2) block, as "subgroup-matrix-direct" does, from
 * fragments loaded out of workgroup memory. Per k-step (`depth`) the workgroup stages A's tile x depth and
 * B's depth x tile slices, in their stored orientation (padded rows), read from the buffers in vec4<u32> loads
 * of 8 halves: 16 bytes per load instead of the staged kernel's 2, and no per-element index arithmetic.
 * There are two stages: each step stages the slices its registers hold, then issues the next step's loads
 * into the registers and multiplies, so global latency hides behind the multiplies, and alternating
 * stages leaves one barrier per step. Operands must suit wide loads (pipelinedFits); rows, columns and
 * k past the problem's edges are staged as zeros, so the other edges may be ragged.
 *
 * `stores` (PipelinedStores): with "halves" each load is 8 stores of a half, and the lanes of a store
 * instruction, 16 bytes apart, meet 4 to a bank: at 128 x 128 with k-steps of 32 that is 64 stores per
 * invocation per step taking 4 passes each, more work for the workgroup-memory pipe than the fragment
 * loads that feed the multiplies. "rotated" takes each store in one pass; "wide" writes each load whole
 * into a workgroup buffer (WGSL's buffer_view) through a vec4<u32> view, read as halves by the fragment loads.
 */
export function subgroupMatrixPipelinedKernel(
  transA: boolean,
  transB: boolean,
  shape: SubgroupMatrixShape,
  lanes: number,
  tile: MatrixTile,
  depth: PipelinedDepth,
  preamble: string,
  stores: PipelinedStores = "halves",
): string {
  const wideStores = stores === "wide";
  const { m: M, n: N, k: K } = shape;
  const bk = depth;
  const block = tile / 2;
  const fm = block / M;
  const fn = block / N;
  const invocations = lanes * DIRECT_SUBGROUPS;
  const pairs = range(fm).flatMap((i) => range(fn).map((j) => [i, j] as const));
  const left = `subgroup_matrix_left<f16, ${K}, ${M}>`;
  const right = `subgroup_matrix_right<f16, ${N}, ${K}>`;
  const result = `subgroup_matrix_result<f32, ${N}, ${M}>`;
  // Each slice in its stored orientation: [major][minor], minor contiguous in memory and in the stage.
  const aMinor = transA ? tile : bk;
  const bMinor = transB ? bk : tile;
  const aStride = aMinor + PIPELINED_PAD;
  const bStride = bMinor + PIPELINED_PAD;
  const aStage = (transA ? bk : tile) * aStride;
  const bStage = (transB ? tile : bk) * bStride;
  const vectors = (tile * bk) / WIDE; // wide loads per slice
  const perInvocation = Math.ceil(vectors / invocations);
  const guard = vectors % invocations !== 0;
  // WGSL functions loadX (vector e of the slice at k0, zeros past the edges) and stageX (into a stage).
  const operand = (
    name: "A" | "B",
    array: string,
    minorCount: number,
    stride: number,
    stageSize: number,
    major: { origin: string; limit: string },
    minor: { origin: string; limit: string },
  ) => {
    const perRow = minorCount / WIDE;
    const [low, high] = packedRotations(storeRotations(perRow, stride));
    // The two halves of word `component` of the rotated load `r`, stored at `at`.
    const halvesOf = (component: string, at: string) =>
      `let ${component}Halves = bitcast<vec2<f16>>(r.${component}); ${array}Tile[${at}] = ${component}Halves.x; ${array}Tile[${at} + 1u] = ${component}Halves.y;`;
    const store = {
      // Strides and stage sizes are multiples of 8 halves: every wide load lands on a whole vector.
      wide: `let vectors = bufferView<array<vec4u, ${(2 * stageSize) / WIDE}>>(&${array}Stages, 0);
  vectors[at / ${WIDE}u] = v;`,
      halves: `let h = array<vec2<f16>, 4>(bitcast<vec2<f16>>(v.x), bitcast<vec2<f16>>(v.y), bitcast<vec2<f16>>(v.z),
                              bitcast<vec2<f16>>(v.w));
  ${range(WIDE)
    .map((i) => `${array}Tile[at + ${i}u] = h[${i >> 1}].${i & 1 ? "y" : "x"};`)
    .join(" ")}`,
      // Word w of the rotated vector is the load's word (w + rot) % 4, stored where that word belongs.
      rotated: `let rot = (select(${high}u, ${low}u, lane % ${STORE_LANES}u < 16u) >> (2u * (lane % 16u))) & 3u;
  let once = select(v, v.yzwx, (rot & 1u) != 0u);
  let r = select(once, once.zwxy, (rot & 2u) != 0u);
  ${range(4)
    .map((w) => halvesOf("xyzw"[w]!, `at + ((${w}u + rot) & 3u) * 2u`))
    .join("\n  ")}`,
    }[stores];
    return /* wgsl */ `fn load${name}(e: u32, k0: u32, tileOrigin: u32, base: u32) -> vec4u {
  let major = ${major.origin} + e / ${perRow}u;
  let minor = ${minor.origin} + (e % ${perRow}u) * ${WIDE}u;
  let index = base + min(major, ${major.limit} - 1u) * p.ld${array} + min(minor, ${minor.limit} - ${WIDE}u);
  return select(vec4u(0u), ${array}[index / ${WIDE}u], major < ${major.limit} && minor < ${minor.limit});
}
fn stage${name}(e: u32, v: vec4u, stage: u32, lane: u32) {
  let at = stage * ${stageSize}u + (e / ${perRow}u) * ${stride}u + (e % ${perRow}u) * ${WIDE}u;
  ${store}
}`;
  };
  const rowAxis = { origin: "tileOrigin", limit: "p.m" };
  const colAxis = { origin: "tileOrigin", limit: "p.n" };
  const kAxis = { origin: "k0", limit: "p.k" };
  const functions = [
    operand("A", "a", aMinor, aStride, aStage, transA ? kAxis : rowAxis, transA ? rowAxis : kAxis),
    operand("B", "b", bMinor, bStride, bStage, transB ? colAxis : kAxis, transB ? kAxis : colAxis),
  ].join("\n");
  // Loops over each invocation's share of the wide loads (unrolled by the driver: the count is constant).
  const share = (body: string, clamp = false) => {
    const e = clamp ? `min(lane + i * ${invocations}u, ${vectors - 1}u)` : `lane + i * ${invocations}u`;
    const guarded = guard && !clamp ? `if (e < ${vectors}u) { ${body} }` : body;
    return `for (var i = 0u; i < ${perInvocation}u; i++) { let e = ${e}; ${guarded} }`;
  };
  // A step's slices go through registers: loaded during the previous step's multiplies, then staged.
  const load = (k0: string) =>
    share(`nextA[i] = loadA(e, ${k0}, tileRow, aBase); nextB[i] = loadB(e, ${k0}, tileCol, bBase);`, true);
  const store = share("stageA(e, nextA[i], stage, lane); stageB(e, nextB[i], stage, lane);");
  const aOffset = (i: number, kk: number) =>
    transA
      ? `aAt + ${kk * aStride}u + blockRowInTile + ${i * M}u`
      : `aAt + (blockRowInTile + ${i * M}u) * ${aStride}u + ${kk}u`;
  const bOffset = (j: number, kk: number) =>
    transB
      ? `bAt + (blockColInTile + ${j * N}u) * ${bStride}u + ${kk}u`
      : `bAt + ${kk * bStride}u + blockColInTile + ${j * N}u`;
  // The fragment loads' pointer: the array of halves, or (wide stores) a view of the buffer as halves.
  const tileRef = (array: "a" | "b") => (wideStores ? `${array}Tile` : `&${array}Tile`);
  const multiplies = range(bk / K)
    .map((step) => {
      const kk = step * K;
      return `{
      ${range(fm)
        .map(
          (i) =>
            `let l${i} = subgroupMatrixLoad<${left}>(${tileRef("a")}, ${aOffset(i, kk)}, ${transA}, ${aStride}u);`,
        )
        .join("\n      ")}
      ${range(fn)
        .map(
          (j) =>
            `let r${j} = subgroupMatrixLoad<${right}>(${tileRef("b")}, ${bOffset(j, kk)}, ${transB}, ${bStride}u);`,
        )
        .join("\n      ")}
      ${pairs.map(([i, j]) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`).join("\n      ")}
    }`;
    })
    .join("\n    ");
  return /* wgsl */ `enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
${preamble}

${
  wideStores
    ? `var<workgroup> aStages: buffer<${2 * aStage * 2}>;
var<workgroup> bStages: buffer<${2 * bStage * 2}>;`
    : `var<workgroup> aTile: array<f16, ${2 * aStage}>;
var<workgroup> bTile: array<f16, ${2 * bStage}>;`
}
var<workgroup> scratch: array<f32, ${DIRECT_SUBGROUPS * M * N}>;
${fragmentStore(result, M, N, lanes)}
${functions}
${stagedEntry(invocations, tile)}
  let blockRowInTile = (sg / 2u) * ${block}u;
  let blockColInTile = (sg % 2u) * ${block}u;
  ${
    wideStores
      ? `let aTile = bufferView<array<f16, ${2 * aStage}>>(&aStages, 0);
  let bTile = bufferView<array<f16, ${2 * bStage}>>(&bStages, 0);`
      : ""
  }
  ${pairs.map(([i, j]) => `var acc${i}_${j} = ${result}();`).join("\n  ")}
  var nextA: array<vec4u, ${perInvocation}>;
  var nextB: array<vec4u, ${perInvocation}>;
  ${load("0u")}
  var stage = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${bk}u) {
    // This stage was last read two steps ago, before every invocation reached the previous barrier.
    ${store}
    workgroupBarrier();
    ${load(`k0 + ${bk}u`)}
    let aAt = stage * ${aStage}u;
    let bAt = stage * ${bStage}u;
    ${multiplies}
    stage = 1u - stage;
  }
  let blockRow = tileRow + blockRowInTile;
  let blockCol = tileCol + blockColInTile;
  ${storeBlock(pairs, shape)}
}`;
}

/**
 * Rows of op(A) one "matvec" workgroup takes; the fixed rule runs "matvec" up to this many rows (one
 * decoding step of up to this many sequences).
 */
export const MATVEC_MAX_ROWS = 16;
/**
 * Most rows "matvec" takes, in blocks of MATVEC_MAX_ROWS, one row of workgroups per block: a decoding step
 * of RAGEN's 128 sequences fills a GPU with such blocks where 64 x 64 tiles make two rows of workgroups
 * (28 workgroups for a 896-wide projection). Tuning offers it up to here; the weights are read once per
 * block, from the L2 cache after the first.
 */
export const MATVEC_BLOCKED_MAX_ROWS = 256;
/**
 * How "matvec" reads A's rows: as stored; RMS-normalised (x · rsqrt(mean(x²) + eps) · normWeight, the
 * weight bound after the addend as `normWeight`, stored like the operands; 1/rms is one factor per row,
 * so the kernel sums x·g·w and x² in the same loop and scales at the end); or as silu(gate) · up of a
 * packed row [gate | up] of 2k elements. Decoding's RMSNorm and SwiGLU then ride in the product after them, one dispatch fewer each.
 */
export type MatvecInput = { kind: "plain" } | { kind: "rmsNorm"; eps: number } | { kind: "swiglu" };

/** Rows one "matvec" workgroup takes for an m-row product: m rounded up to a power of two, at most MATVEC_MAX_ROWS. */
export const matvecRows = (m: number): number =>
  Math.min(2 ** Math.ceil(Math.log2(Math.max(m, 1))), MATVEC_MAX_ROWS);

/** Output columns per workgroup of the "matvec" kernel (one group of 32 invocations each). */
export const MATVEC_COLUMNS = 8;

/**
 * WGSL of the "matvec" kernel: x · Wᵀ for a few rows x (decoding: one new token per sequence), A stored
 * [m][k] and B (the weight) stored [n][k], both contiguous along k. It is bound by reading W once, so the
 * scheme is about coalescing: 32 invocations share one output column and read consecutive elements of
 * its weight row (one 128-byte line per step), each keeping `rows` partial sums; a workgroup-memory tree
 * then adds the 32 partial sums of each row. `rows` is m rounded up to a power of two, at most
 * MATVEC_MAX_ROWS (rows past m read the last real row and are never stored); with more rows, the
 * workgroups of row y take rows y·MATVEC_MAX_ROWS onwards.
 */
export function matvecKernel(
  rows: number,
  storage: FloatStorage,
  preamble: string,
  input: MatvecInput = { kind: "plain" },
): string {
  const read = (array: string, index: string) =>
    storage === "f32" ? `${array}[${index}]` : `f32(${array}[${index}])`;
  const range = Array.from({ length: rows }, (_, r) => r);
  const width = 32 * MATVEC_COLUMNS;
  const norm = input.kind === "rmsNorm";
  // Rows of a packed gate|up A are twice the product's k apart.
  const rowStride = input.kind === "swiglu" ? "2u * p.lda" : "p.lda";
  const element = (r: number) =>
    input.kind === "swiglu"
      ? `silu(${read("a", `a${r} + kk`)}) * ${read("a", `a${r} + p.lda + kk`)}`
      : read("a", `a${r} + kk`);
  // With the norm, each lane also sums its share of every row's squares, reduced with the products.
  const sums = norm ? 2 : 1;
  const reduce = (r: number) =>
    [`partial[${r * width}u + t] += partial[${r * width}u + t + s];`]
      .concat(norm ? [`partial[${(rows + r) * width}u + t] += partial[${(rows + r) * width}u + t + s];`] : [])
      .join(" ");
  const result = norm
    ? `partial[r * ${width}u + t] * inverseSqrt(partial[(${rows}u + r) * ${width}u + t] / f32(p.k) + bitcast<f32>(${f32Bits(input.eps)}u))`
    : `partial[r * ${width}u + t]`;
  return /* wgsl */ `${preamble}

var<workgroup> partial: array<f32, ${sums * rows * width}>;
${input.kind === "swiglu" ? "fn silu(x: f32) -> f32 { return x / (1.0 + exp(-x)); }" : ""}

@compute @workgroup_size(${width})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let lane = t % 32u;
  let col = wg.x * ${MATVEC_COLUMNS}u + t / 32u;
  let batch = wg.z;
  let row0 = wg.y * ${rows}u;
  let aBase = p.aBase + batch * p.aBatchStride;
  let wRow = p.bBase + batch * p.bBatchStride + min(col, p.n - 1u) * p.ldb;
  ${range.map((r) => `let a${r} = aBase + min(row0 + ${r}u, p.m - 1u) * ${rowStride};`).join("\n  ")}
  ${range.map((r) => `var acc${r} = 0.0;${norm ? ` var squares${r} = 0.0;` : ""}`).join(" ")}
  for (var kk = lane; kk < p.k; kk += 32u) {
    let w = ${read("b", "wRow + kk")}${norm ? ` * ${read("normWeight", "kk")}` : ""};
    ${range
      .map((r) =>
        norm
          ? `let x${r} = ${element(r)}; acc${r} = fma(x${r}, w, acc${r}); squares${r} = fma(x${r}, x${r}, squares${r});`
          : `acc${r} = fma(${element(r)}, w, acc${r});`,
      )
      .join("\n    ")}
  }
  ${range.map((r) => `partial[${r * width}u + t] = acc${r};`).join("\n  ")}
  ${norm ? range.map((r) => `partial[${(rows + r) * width}u + t] = squares${r};`).join("\n  ") : ""}
  workgroupBarrier();
  for (var s = 16u; s > 0u; s >>= 1u) {
    if (lane < s) {
      ${range.map(reduce).join("\n      ")}
    }
    workgroupBarrier();
  }
  if (lane == 0u && col < p.n) {
    let outBase = p.outBase + batch * p.outBatchStride;
    for (var r = 0u; r < min(p.m - row0, ${rows}u); r++) {
      storeOut(outBase + (row0 + r) * p.ldo + col, col, ${result});
    }
  }
}`;
}
