/**
 * The tiling shared by the prefill forward kernel and the two backward kernels (dK/dV, dQ).
 *
 * Every such kernel works on tiles of BQ query rows x BK keys with a workgroup of TY x TX threads,
 * TY = BQ/RM and TX = BK/RN: thread (ty, tx) owns the RM x RN scores of rows ty + TY*a and keys tx + TX*b,
 * and computes them from Q/K/dOut/V tiles staged in workgroup memory with vec4 loads (each loaded element
 * feeds RM or RN FMAs). Tile shapes are chosen per adapter kind from candidate lists: real GPUs get 64
 * threads with 4x4-ish tiles; lavapipe, where a load from workgroup memory costs many times an FMA (it is
 * done lane by lane), gets larger per-thread tiles in fewer threads. Block sizes shrink for larger headDim
 * to fit the device's workgroup memory. With tuning on, the tile measured fastest on the adapter for the
 * problem runs instead (tile-choices.ts, tile-tuning.ts).
 *
 * Loop bounds that equal baked-in constants are passed as uniforms so that lavapipe's LLVM does not unroll
 * them: unrolled, each shader took several seconds longer to JIT, for no speed-up.
 */

import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { type FloatStorage, f32Bits, uniforms } from "../elementwise.js";
import type { AttentionForm } from "./forms.js";
import { cachedCode, each, resolveScale, storageWgsl } from "./shared.js";
import {
  attentionTiles,
  type Tile,
  type TileChoices,
  type TiledKernel,
  type TileProfile,
} from "./tile-choices.js";

export type { Tile, TileChoices, TiledKernel, TiledOutput, TileProfile } from "./tile-choices.js";

/**
 * Which kernels to use. `profile`: "auto" picks the tile lists by adapter (software adapters such as
 * lavapipe get larger per-thread tiles). `textures`: on the software profile, the texture kernels
 * (texture-*.ts) run instead of the tiled ones wherever they apply. `forward`, `backward`: "auto" runs
 * the form measured fastest for the problem (forms.ts), the tiled kernels without a measurement; a form
 * named runs wherever it takes the problem. Tests and benchmarks may force any of them, to exercise or
 * compare the kernels on one machine.
 */
export const attentionTuning: {
  profile: "auto" | "hardware" | "software";
  textures: boolean;
  forward: "auto" | AttentionForm;
  backward: "auto" | AttentionForm;
} = {
  profile: "auto",
  textures: true,
  forward: "auto",
  backward: "auto",
};

/**
 * The hardware list, the same behind a software-only first choice, and tiles only tuning tries (larger
 * ones, whose gain depends on the card).
 */
export function tileChoices(softwareFirst: Tile, hardware: Tile[], tuning: Tile[] = []): TileChoices {
  return { hardware, software: [softwareFirst, ...hardware], tuning };
}

/** The tile lists a context uses (attentionTuning can force one). */
export function tileProfile(ctx: GpuContext): TileProfile {
  if (attentionTuning.profile !== "auto") return attentionTuning.profile;
  return ctx.info.adapter.isSoftware ? "software" : "hardware";
}

/** The tile a kernel runs without measurements: its list's first for this adapter kind that fits. */
export function listTile(ctx: GpuContext, kernel: TiledKernel, d4: number): Tile | undefined {
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const profile = tileProfile(ctx);
  return kernel.tiles[profile].find((t) => kernel.bytes(t, d4, profile) <= limit);
}

/** The threads of a tile (TY x TX), and WGSL for the rows and keys thread (ty, tx) owns. */
export function tileThreads(tile: Tile) {
  const ty = tile.bq / tile.rm;
  const tx = tile.bk / tile.rn;
  return {
    ty,
    tx,
    threads: ty * tx,
    /** Row a of the thread: ty + TY*a. */
    row: (a: number) => `ty + ${ty * a}u`,
    /** Key b of the thread: tx + TX*b. */
    key: (b: number) => `tx + ${tx * b}u`,
  };
}

/** Bits of the `flags` uniform word. */
export const HAS_KV_START = 1;
export const WRITE_LSE = 2;

/**
 * The uniform block, kvStart binding and masking helpers of the prefill and backward kernels. kvStart is
 * always bound (a read-only stand-in when absent, never read: flags say so), which halves the number of
 * shader variants; on lavapipe each variant costs seconds of JIT on first use.
 */
/** The binding of kvStart in every tiled kernel (commonWgsl's argument). */
export const KV_START_BINDING = 5;

export function commonWgsl(kvStartBinding: number): string {
  return /* wgsl */ `
struct Params {
  seqLen: u32, kvLen: u32, kvCapacity: u32, numHeads: u32,
  numKvHeads: u32, group: u32, causal: u32, flags: u32,
  // Loop bounds equal to the baked-in tile constants, read at run time so that lavapipe's LLVM does not
  // fully unroll the loops (seconds more JIT time per shader for no speed).
  d4: u32, tileRows: u32, tileKeys: u32,
  scale: f32,
  // The first sequence of this dispatch (the texture kernels run a batch in chunks; 0 for the others).
  batch0: u32,
}
@group(0) @binding(${kvStartBinding}) var<storage, read> kvStart: array<i32>;

// First visible key of sequence b (0 without kvStart), clamped to [0, kvLen].
fn firstKey(b: u32) -> u32 {
  if ((params.flags & ${HAS_KV_START}u) == 0u) { return 0u; }
  return u32(clamp(kvStart[b], 0, i32(params.kvLen)));
}

// Is key \`key\` visible to query row \`row\` (0-based within seqLen)? The causal test is
// key <= row + (kvLen - seqLen), written without subtracting unsigned values.
fn visible(row: u32, key: u32, kStart: u32) -> bool {
  return row < params.seqLen && key < params.kvLen && key >= kStart &&
    (params.causal == 0u || key + params.seqLen <= row + params.kvLen);
}

// One past the last key visible to any query row below \`rowEnd\`.
fn keyEnd(rowEnd: u32) -> u32 {
  if (params.causal == 0u) { return params.kvLen; }
  let lastRow = min(rowEnd, params.seqLen) - 1u;
  return min(params.kvLen, lastRow + params.kvLen - params.seqLen + 1u);
}

// First query row that sees key \`key\` under the causal mask.
fn firstRowSeeing(key: u32) -> u32 {
  if (params.causal == 0u || key + params.seqLen <= params.kvLen) { return 0u; }
  return key + params.seqLen - params.kvLen;
}
`;
}

/** The Params block of commonWgsl. */
export function attentionParams(
  dims: AttentionDims,
  flags: number,
  tile: { bq: number; bk: number },
  batch0 = 0,
): Uint32Array {
  return uniforms(
    dims.seqLen,
    dims.kvLen,
    dims.kvCapacity ?? dims.kvLen,
    dims.numHeads,
    dims.numKvHeads,
    dims.numHeads / dims.numKvHeads,
    (dims.causal ?? true) ? 1 : 0,
    flags,
    dims.headDim / 4,
    tile.bq,
    tile.bk,
    f32Bits(resolveScale(dims)),
    batch0,
  );
}

/** WGSL: the vec4 index of row `row` of a q-like tensor [batch, seqLen, numHeads, headDim]. */
export const qIndex = (d4: number, row: string, head = "head") =>
  `((b * params.seqLen + ${row}) * params.numHeads + ${head}) * ${d4}u`;

/** WGSL: the vec4 index of key `key` of a k-like tensor [batch, kvCapacity, numKvHeads, headDim]. */
const kvIndex = (d4: number, key: string) =>
  `((b * params.kvCapacity + ${key}) * params.numKvHeads + kvHead) * ${d4}u`;

/**
 * How a kernel stages rows in a workgroup tile: vec4s per row, tile row stride, threads loading, and the
 * source's elements (default f32; halves are widened as they are loaded).
 */
export interface TileLoad {
  d4: number;
  stride: number;
  threads: number;
  dtype?: FloatStorage;
}

/**
 * WGSL statements that copy `rows` rows of a [.., headDim] tensor into the workgroup tile `tile`, zero-filling
 * rows for which `rowValid` is false (no out-of-range reads). `index(r)` is the vec4 index of row r's
 * first element; `factor` multiplies every element.
 */
function loadTile(
  { d4, stride, threads, dtype }: TileLoad,
  opts: {
    tile: string;
    source: string;
    /** WGSL for the number of rows (a uniform, see Params). */
    rows: string;
    rowValid: (r: string) => string;
    index: (r: string) => string;
    factor?: string;
  },
): string {
  const { tile, source, rows, rowValid, index, factor } = opts;
  const loaded = storageWgsl(dtype).widen(`${source}[${index("r")} + c]`);
  return `for (var e = t; e < ${rows} * params.d4; e += ${threads}u) {
    let r = e / ${d4}u;
    let c = e % ${d4}u;
    var value = vec4f(0.0);
    if (${rowValid("r")}) { value = ${loaded}${factor ? ` * ${factor}` : ""}; }
    ${tile}[r * ${stride}u + c] = value;
  }`;
}

/** WGSL: load query rows q0.. of `source` (q or dOut; head `head`) into `tile`, times `factor` if given. */
export function loadQueryRows(layout: TileLoad, tile: string, source: string, factor?: string): string {
  return loadTile(layout, {
    tile,
    source,
    rows: "params.tileRows",
    rowValid: (r) => `q0 + ${r} < params.seqLen`,
    index: (r) => qIndex(layout.d4, `q0 + ${r}`),
    factor,
  });
}

/** WGSL: load keys k0.. of `source` (k or v; head `kvHead`) into `tile`. */
export function loadKeyRows(layout: TileLoad, tile: string, source: string): string {
  return loadTile(layout, {
    tile,
    source,
    rows: "params.tileKeys",
    rowValid: (r) => `k0 + ${r} < params.kvLen`,
    index: (r) => kvIndex(layout.d4, `k0 + ${r}`),
  });
}

/**
 * WGSL: `store(c)` for the `columns` vec4 columns `col(c)` of a thread's output row. Tiles pad a row to
 * `columns * spread` vec4s so that the accumulation loops need no bounds check; the stores do, when
 * the padding runs past the row's d4 vec4s.
 */
export function storeColumns(opts: {
  columns: number;
  spread: number;
  d4: number;
  col: (c: number) => string;
  store: (c: number) => string;
}): string {
  const { columns, spread, d4, col, store } = opts;
  const guarded = columns * spread > d4;
  return each(columns, (c) => (guarded ? `if (${col(c)} < ${d4}u) { ${store(c)} }` : store(c)));
}

/**
 * Records one dispatch of `kernel`: with tuning on, the tile measured best for this problem's group;
 * otherwise the first tile for this adapter whose workgroup memory fits the device. `bindings` take
 * @binding(0..) in order, the Params block follows them.
 */
export function recordTiled(
  ctx: GpuContext,
  kernel: TiledKernel,
  dims: AttentionDims,
  flags: number,
  bindings: GPUBuffer[],
  workgroups: (tile: Tile) => [number, number, number],
): void {
  const { headDim } = dims;
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const tuned = attentionTiles(ctx)?.lookup(
    { kernel, dims, flags, bindingSizes: bindings.map((b) => b.size), workgroups },
    limit,
    tileProfile(ctx),
  );
  const tile = tuned ?? listTile(ctx, kernel, headDim / 4);
  if (!tile) {
    throw new RangeError(
      `attention ${kernel.name}: headDim ${headDim} needs more workgroup memory than this device's ${limit} bytes`,
    );
  }
  dispatchTiled(ctx, kernel, tile, dims, flags, bindings, workgroups);
}

/** Records one dispatch of `kernel` with `tile`. */
export function dispatchTiled(
  ctx: GpuContext,
  kernel: TiledKernel,
  tile: Tile,
  dims: AttentionDims,
  flags: number,
  bindings: GPUBuffer[],
  workgroups: (tile: Tile) => [number, number, number],
): void {
  const d4 = dims.headDim / 4;
  const profile = tileProfile(ctx);
  const dtype = dims.dtype ?? "f32";
  const key = `${kernel.key}:${tile.bq}:${tile.bk}:${tile.rm}:${tile.rn}:${d4}:${profile}:${dtype}`;
  const code = cachedCode(key, () => kernel.code(tile, d4, profile, dtype));
  ctx.dispatch(
    ctx.pipeline(`attention ${kernel.name} (headDim ${dims.headDim}${dtype === "f16" ? ", f16" : ""})`, code),
    bindings,
    attentionParams(dims, flags, tile),
    workgroups(tile),
  );
}
