/**
 * "blocked-wide" — the "blocked" kernel's register blocking (matmul-gpu.ts) with the two things an
 * SGEMM on NVIDIA hardware needs next, for f32 problems whose operand rows start on multiples of 4:
 *   - global loads of whole vec4s along each operand's contiguous axis, one 16-byte load where "blocked"
 *     issues four scalar loads, each with its own clamps and bounds test. A vec4 along k (A as stored
 *     [m][k], B as stored [n][k]) holds 4 k-steps of one row, so it is stored into the staged slice as 4
 *     scalars (the slices keep "blocked"'s layout: vec4s of 4 rows of A, or 4 columns of B, per k-row);
 *   - two stages of workgroup memory, alternating: a step stores the next slices into the stage not being
 *     read, so one barrier per k-step instead of two.
 * Only tiles whose two stages fit the device's workgroup memory run it; other problems run "blocked".
 */
import {
  type BlockedTile,
  blockedSlices,
  blockedTileBytes,
  gridEntry,
  inWholeVectors,
  type OperandLayout,
  range,
  registerBlock,
  STORE_ROW,
} from "./matmul-gpu.js";

/** Elements per wide load. */
const WIDE = 4;

/** Workgroup memory of a "blocked-wide" kernel: two stages of "blocked"'s slices. */
export const blockedWideBytes = (tile: BlockedTile): number => 2 * blockedTileBytes(tile);

/**
 * Whether "blocked-wide" can read a problem (or one chunk of it) in whole vec4s: f32 operands whose
 * leading dimensions, batch strides, first elements and extents along the stored rows are multiples of 4
 * (inWholeVectors).
 */
export const wideFits = (p: OperandLayout & { dtype: string }): boolean =>
  p.dtype === "f32" && inWholeVectors(p, WIDE);

/**
 * How one operand's slice is loaded and staged. `kMajor`: the stored rows run along k (A not transposed,
 * B transposed), so a vec4 is 4 k-steps of one tile row (or column); otherwise it is 4 tile rows (columns)
 * at one k-step.
 */
function operandWgsl(
  name: "A" | "B",
  array: "a" | "b",
  quads: number,
  bk: number,
  stride: number,
  kMajor: boolean,
  origin: "tileRow" | "tileCol",
  limit: "p.m" | "p.n",
): string {
  const tileName = `${array}Tile`;
  const ld = `p.ld${array}`;
  if (kMajor) {
    const perRow = bk / WIDE;
    return /* wgsl */ `// Vector e of op(${name})'s slice at k0: 4 k-steps of tile ${name === "A" ? "row" : "column"} e / ${perRow}.
fn load${name}(e: u32, k0: u32, base: u32, ${origin}: u32) -> vec4f {
  let line = ${origin} + e / ${perRow}u;
  let k = k0 + (e % ${perRow}u) * ${WIDE}u;
  let index = base + min(line, ${limit} - 1u) * ${ld} + min(k, max(p.k, ${WIDE}u) - ${WIDE}u);
  return select(vec4f(0.0), ${array}[index / ${WIDE}u], line < ${limit} && k < p.k);
}
fn stage${name}(e: u32, v: vec4f, at: u32) {
  let line = e / ${perRow}u;
  let k = (e % ${perRow}u) * ${WIDE}u;
  let slot = at + k * ${stride}u + line / 4u;
  let lane = line % 4u;
  ${tileName}[slot][lane] = v.x;
  ${tileName}[slot + ${stride}u][lane] = v.y;
  ${tileName}[slot + ${2 * stride}u][lane] = v.z;
  ${tileName}[slot + ${3 * stride}u][lane] = v.w;
}`;
  }
  return /* wgsl */ `// Vector e of op(${name})'s slice at k0: 4 tile ${name === "A" ? "rows" : "columns"} at k-step e / ${quads}.
fn load${name}(e: u32, k0: u32, base: u32, ${origin}: u32) -> vec4f {
  let k = k0 + e / ${quads}u;
  let line = ${origin} + (e % ${quads}u) * ${WIDE}u;
  let index = base + min(k, p.k - 1u) * ${ld} + min(line, max(${limit}, ${WIDE}u) - ${WIDE}u);
  return select(vec4f(0.0), ${array}[index / ${WIDE}u], line < ${limit} && k < p.k);
}
fn stage${name}(e: u32, v: vec4f, at: u32) {
  ${tileName}[at + (e / ${quads}u) * ${stride}u + e % ${quads}u] = v;
}`;
}

/**
 * WGSL of the "blocked-wide" kernel. `preamble` is gemmPreamble("f32", "vec4f"): a and b bound as vec4s,
 * their bases and leading dimensions in elements, multiples of 4 (wideFits).
 */
export function blockedWideKernel(
  transA: boolean,
  transB: boolean,
  tile: BlockedTile,
  preamble: string,
): string {
  const { bk, aQuads, bQuads, aStride, bStride, aLoads, bLoads } = blockedSlices(tile);
  const aStage = bk * aStride;
  const bStage = bk * bStride;
  const { accumulators, reads, fmas, outputs } = registerBlock(tile, aStride, bStride, "aAt", "bAt");
  const load = (k0: string) =>
    [
      ...range(aLoads).map((i) => `aNext${i} = loadA(t + ${256 * i}u, ${k0}, aBase, tileRow);`),
      ...range(bLoads).map((i) => `bNext${i} = loadB(t + ${256 * i}u, ${k0}, bBase, tileCol);`),
    ].join("\n    ");
  const store = (stage: string) =>
    [
      ...range(aLoads).map((i) => `stageA(t + ${256 * i}u, aNext${i}, ${stage} * ${aStage}u);`),
      ...range(bLoads).map((i) => `stageB(t + ${256 * i}u, bNext${i}, ${stage} * ${bStage}u);`),
    ].join("\n    ");
  return /* wgsl */ `${preamble}

// Two stages of "blocked"'s slices: aTile[stage * ${aStage} + kk * ${aStride} + q] holds rows 4q..4q+3 of
// the tile at k-offset kk; bTile likewise for columns.
var<workgroup> aTile: array<vec4f, ${2 * aStage}>;
var<workgroup> bTile: array<vec4f, ${2 * bStage}>;

${operandWgsl("A", "a", aQuads, bk, aStride, !transA, "tileRow", "p.m")}
${operandWgsl("B", "b", bQuads, bk, bStride, transB, "tileCol", "p.n")}
${STORE_ROW}
${gridEntry(tile.rows, tile.cols)}
  ${accumulators.join(" ")}
  ${range(aLoads)
    .map((i) => `var aNext${i}: vec4f;`)
    .join(" ")} ${range(bLoads)
    .map((i) => `var bNext${i}: vec4f;`)
    .join(" ")}
  ${load("0u")}
  ${store("0u")}
  workgroupBarrier();
  var stage = 0u;
  for (var k0 = 0u; k0 < p.k; k0 += ${bk}u) {
    // The next step's slices load while this one multiplies, then go to the other stage: its last
    // readers finished before the previous barrier.
    let more = k0 + ${bk}u < p.k;
    if (more) {
      ${load(`k0 + ${bk}u`)}
    }
    let aAt = stage * ${aStage}u;
    let bAt = stage * ${bStage}u;
    for (var kk = 0u; kk < ${bk}u; kk++) {
      ${reads.join("\n      ")}
      ${fmas.join("\n      ")}
    }
    if (more) {
      ${store("(1u - stage)")}
    }
    workgroupBarrier();
    stage = 1u - stage;
  }
  let row0 = tileRow + lid.y * 4u;
  let col0 = tileCol + lid.x * 4u;
  let outBase = p.outBase + batch * p.outBatchStride;
  ${outputs.join("\n  ")}
}`;
}
