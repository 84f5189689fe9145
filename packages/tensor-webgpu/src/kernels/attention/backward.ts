/**
 * Attention backward (flash-attention-2, tiles as in tiles.ts; no float atomics, so results are
 * deterministic), three dispatches (four with the group sum):
 *  1. stats: per query row, (lse, D = rowsum(dOut∘out)) packed into one vec2 buffer (this keeps every
 *     later kernel within 8 storage bindings).
 *  2. dK/dV: one workgroup per (KV block, KV head, sequence) keeps its K and V tiles and dK/dV
 *     accumulators (thread (ty, tx): keys tx + TX*b, vec4 columns ty + TY*c) while it loops over the
 *     query heads of its group and the query blocks that can see the block: P = exp(S - lse),
 *     dP = dOut·Vᵀ, dS = P∘(dP - D)·scale, then dV += Pᵀ·dOut and dK += dSᵀ·Q through workgroup memory.
 *     On GPUs, with grouped-query heads, one workgroup per query head instead, and a sum over each group.
 *  3. dQ: one workgroup per (query block, head, sequence) recomputes P and dS per visible KV block and
 *     accumulates dQ += dS·K.
 * On software adapters the texture kernels (texture-backward.ts) take steps 2 and 3, with the same results.
 * Both gradient kernels bind the same inputs, stage query and key blocks the same way and share the
 * score phase (P and dS of a tile); they differ in which block stays and what they accumulate.
 */

import type { AttentionDims } from "../../core/attention.js";
import { type GpuContext, grid } from "../../gpu/context.js";
import { type FloatStorage, storageBytes } from "../elementwise.js";
import { attentionBackwardByMatmul } from "./backward-matmul.js";
import { type AttentionForm, attentionForm } from "./form-choice.js";
import { cachedCode, checkHeadDim, conflictFreeStride, each, roundUp, storageWgsl } from "./shared.js";
import { textureKvGradCode, textureKvGradKeys, textureQGradCode } from "./texture-backward.js";
import { TEXTURE_ROWS } from "./texture-forward.js";
import { dispatchTextureAttention, textureAttentionLanes } from "./texture-staging.js";
import {
  commonWgsl,
  HAS_KV_START,
  KV_START_BINDING,
  loadKeyRows,
  loadQueryRows,
  qIndex,
  recordTiled,
  storeColumns,
  type Tile,
  type TiledKernel,
  type TiledOutput,
  type TileLoad,
  tileChoices,
  tileProfile,
  tileThreads,
} from "./tiles.js";

export interface AttentionBackwardArgs extends AttentionDims {
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  out: GPUBuffer;
  dOut: GPUBuffer;
  lse: GPUBuffer;
  dQ: GPUBuffer;
  dK: GPUBuffer;
  dV: GPUBuffer;
  kvStart?: GPUBuffer;
}

/** Per query row: (lse, D = rowsum(dOut∘out)), one invocation per row; out and dOut of `dtype`. */
const statsCode = (dtype: FloatStorage) => {
  const storage = storageWgsl(dtype);
  return /* wgsl */ `${storage.enable}
struct Params { rows: u32, seqLen: u32, numHeads: u32, d4: u32 }
@group(0) @binding(0) var<storage, read> out: array<${storage.vec4}>;
@group(0) @binding(1) var<storage, read> dOut: array<${storage.vec4}>;
@group(0) @binding(2) var<storage, read> lse: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<vec2f>;
@group(0) @binding(4) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = id.x + id.y * groups.x * 64u; // row of [batch, numHeads, seqLen], the layout of lse
  if (i >= params.rows) { return; }
  let position = i % params.seqLen;
  let head = (i / params.seqLen) % params.numHeads;
  let b = i / (params.seqLen * params.numHeads);
  let base = ((b * params.seqLen + position) * params.numHeads + head) * params.d4;
  var sum = vec4f(0.0);
  for (var c = 0u; c < params.d4; c++) { sum += ${storage.widen("out[base + c]")} * ${storage.widen("dOut[base + c]")}; }
  stats[i] = vec2f(lse[i], sum.x + sum.y + sum.z + sum.w);
}`;
};

/**
 * WGSL: the bindings of a gradient kernel: the shared inputs (q, k, v and dOut of `dtype`), then
 * `outputs` (of `outputDtype`), then Params.
 */
function gradientBindings(outputs: string[], dtype: FloatStorage, outputDtype: FloatStorage): string {
  const input = storageWgsl(dtype);
  const output = storageWgsl(outputDtype);
  const written = outputs.map(
    (name, i) => `@group(0) @binding(${6 + i}) var<storage, read_write> ${name}: array<${output.vec4}>;`,
  );
  return /* wgsl */ `${input.enable || output.enable}
@group(0) @binding(0) var<storage, read> q: array<${input.vec4}>;
@group(0) @binding(1) var<storage, read> k: array<${input.vec4}>;
@group(0) @binding(2) var<storage, read> v: array<${input.vec4}>;
@group(0) @binding(3) var<storage, read> dOut: array<${input.vec4}>;
@group(0) @binding(4) var<storage, read> stats: array<vec2f>;
${written.join("\n")}
@group(0) @binding(${6 + outputs.length}) var<uniform> params: Params;
${commonWgsl(KV_START_BINDING)}`;
}

/**
 * The workgroup tiles of a gradient kernel (Q and dOut with row stride `qStride` vec4s, K and V with
 * `kStride`, P if `withP`, dS, and (lse, D) per row): their WGSL and their size in bytes.
 */
function gradientTiles(tile: Tile, qStride: number, kStride: number, withP: boolean) {
  const { bq, bk } = tile;
  const pStride = scoreStride(tile);
  type Entry = [name: string, type: "vec4f" | "vec2f" | "f32", length: number];
  const p: Entry[] = withP ? [["pTile", "f32", bq * pStride]] : [];
  const tiles: Entry[] = [
    ["qTile", "vec4f", bq * qStride],
    ["dOTile", "vec4f", bq * qStride],
    ["kTile", "vec4f", bk * kStride],
    ["vTile", "vec4f", bk * kStride],
    ...p,
    ["dsTile", "f32", bq * pStride],
    ["statTile", "vec2f", bq],
  ];
  const elementBytes = { vec4f: 16, vec2f: 8, f32: 4 };
  return {
    wgsl: tiles
      .map(([name, type, length]) => `var<workgroup> ${name}: array<${type}, ${length}>;`)
      .join("\n"),
    bytes: tiles.reduce((sum, [, type, length]) => sum + elementBytes[type] * length, 0),
  };
}

/** Row stride of the P and dS tiles, in floats. */
const scoreStride = (tile: Tile) => conflictFreeStride(tile.bk);

/** WGSL: stage query block q0 of head `head`: Q, dOut, and each row's (lse, D) (zeros past seqLen). */
function loadQueryBlock(layout: TileLoad): string {
  return `${loadQueryRows(layout, "qTile", "q")}
  ${loadQueryRows(layout, "dOTile", "dOut")}
  for (var r = t; r < params.tileRows; r += ${layout.threads}u) {
    var stat = vec2f(0.0);
    if (q0 + r < params.seqLen) { stat = stats[(b * params.numHeads + head) * params.seqLen + q0 + r]; }
    statTile[r] = stat;
  }`;
}

/** WGSL: stage key block k0 of KV head `kvHead`: K and V. */
function loadKeyBlock(layout: TileLoad): string {
  return `${loadKeyRows(layout, "kTile", "k")}
  ${loadKeyRows(layout, "vTile", "v")}`;
}

/**
 * WGSL: the score phase of both gradient kernels. Thread (ty, tx) computes, for rows ty + TY*a and keys
 * tx + TX*b of the tile, P = exp(scale·q·k - lse) (0 where masked) and dS = P∘(dOut·v - D)·scale, and
 * stores them in pTile (if `withP`) and dsTile. Needs the staged blocks, q0, k0 and kStart.
 */
function scorePhaseWgsl(tile: Tile, qStride: number, kStride: number, withP: boolean) {
  const { rm, rn } = tile;
  const pStride = scoreStride(tile);
  const { row, key } = tileThreads(tile);
  const pairs = (f: (a: number, b: number) => string) => each(rm, (a) => each(rn, (b) => f(a, b)));
  return `${pairs((a, b) => `var s${a}_${b} = 0.0;\nvar dp${a}_${b} = 0.0;`)}
    for (var c = 0u; c < params.d4; c++) {
      ${each(rm, (a) => `let qa${a} = qTile[(${row(a)}) * ${qStride}u + c];\nlet da${a} = dOTile[(${row(a)}) * ${qStride}u + c];`)}
      ${each(rn, (b) => `let kb${b} = kTile[(${key(b)}) * ${kStride}u + c];\nlet vb${b} = vTile[(${key(b)}) * ${kStride}u + c];`)}
      ${pairs((a, b) => `s${a}_${b} += dot(qa${a}, kb${b});\ndp${a}_${b} += dot(da${a}, vb${b});`)}
    }
    ${each(rm, (a) => `let stat${a} = statTile[${row(a)}];`)}
    ${pairs(
      (a, b) => `{
      let p = select(0.0, exp(s${a}_${b} * params.scale - stat${a}.x), visible(q0 + ${row(a)}, k0 + ${key(b)}, kStart));
      ${withP ? `pTile[(${row(a)}) * ${pStride}u + ${key(b)}] = p;` : ""}
      dsTile[(${row(a)}) * ${pStride}u + ${key(b)}] = p * (dp${a}_${b} - stat${a}.y) * params.scale;
    }`,
    )}`;
}

// ---------------------------------------------------------------------------------------------------
// dK/dV: the key block stays, query blocks stream.

/**
 * Row strides of the dK/dV kernel's tiles in vec4s: Q/dOut padded so the accumulation's columns ty + TY*c
 * need no bounds check, both kept conflict-free.
 */
function kvGradStrides(t: Tile, d4: number) {
  const qColumns = roundUp(d4, t.bq / t.rm);
  return { qColumns, q: conflictFreeStride(qColumns), k: conflictFreeStride(d4) };
}

/**
 * `perHead`: one workgroup per (KV block, query head, sequence), writing that head's share of dK/dV to
 * [batch, kvLen, numHeads, headDim] (summed over each KV head's group afterwards); otherwise one per
 * (KV block, KV head, sequence), looping over the group's heads.
 */
function kvGradCode(tile: Tile, d4: number, perHead: boolean, dtype: FloatStorage): string {
  const { bq, bk, rn } = tile;
  const { ty, tx, threads, key } = tileThreads(tile);
  const strides = kvGradStrides(tile, d4);
  const qStride = strides.q;
  const kStride = strides.k;
  const pStride = scoreStride(tile);
  const columns = strides.qColumns / ty; // vec4 columns of dK/dV per thread
  const col = (c: number) => `ty + ${ty * c}u`;
  const pairs = (f: (b: number, c: number) => string) => each(rn, (b) => each(columns, (c) => f(b, c)));
  // Each query head's shares are summed in f32 afterwards (groupSumCode), which rounds once.
  const outputDtype = perHead ? "f32" : dtype;
  const { narrow } = storageWgsl(outputDtype);
  return /* wgsl */ `${gradientBindings(["dK", "dV"], dtype, outputDtype)}

${gradientTiles(tile, qStride, kStride, true).wgsl}

@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let k0 = wg.x * ${bk}u;
  let b = wg.z;
  // Query heads [headFirst, headEnd) of KV head kvHead.
  let kvHead = ${perHead ? "wg.y / params.group" : "wg.y"};
  let headFirst = ${perHead ? "wg.y" : "kvHead * params.group"};
  let headEnd = ${perHead ? "headFirst + 1u" : "headFirst + params.group"};
  let ty = t / ${tx}u;
  let tx = t % ${tx}u;
  let kStart = firstKey(b);
  ${loadKeyBlock({ d4, stride: kStride, threads, dtype })}
  ${pairs((b, c) => `var dk${b}_${c} = vec4f(0.0);\nvar dv${b}_${c} = vec4f(0.0);`)}

  // Query blocks that see some key of this block: none if all its keys are before kStart.
  let qBlocks = (params.seqLen + ${bq - 1}u) / ${bq}u;
  let qbFirst = firstRowSeeing(k0) / ${bq}u;
  let qbEnd = select(qBlocks, 0u, k0 + ${bk}u <= kStart);
  for (var head = headFirst; head < headEnd; head++) {
    for (var qb = qbFirst; qb < qbEnd; qb++) {
      let q0 = qb * ${bq}u;
      workgroupBarrier();
      ${loadQueryBlock({ d4, stride: qStride, threads, dtype })}
      workgroupBarrier();
      ${scorePhaseWgsl(tile, qStride, kStride, true)}
      workgroupBarrier();

      // dV += Pᵀ·dOut and dK += dSᵀ·Q for keys tx + ${tx}b and vec4 columns ty + ${ty}c.
      for (var i = 0u; i < params.tileRows; i++) {
        ${each(rn, (b) => `let p${b} = pTile[i * ${pStride}u + ${key(b)}];\nlet ds${b} = dsTile[i * ${pStride}u + ${key(b)}];`)}
        ${each(columns, (c) => `let o${c} = dOTile[i * ${qStride}u + ${col(c)}];\nlet q${c} = qTile[i * ${qStride}u + ${col(c)}];`)}
        ${pairs((b, c) => `dv${b}_${c} += p${b} * o${c};\ndk${b}_${c} += ds${b} * q${c};`)}
      }
    }
  }

  ${each(
    rn,
    (b) => `if (k0 + ${key(b)} < params.kvLen) {
    let base = ((b * params.kvLen + k0 + ${key(b)}) * ${perHead ? "params.numHeads + headFirst" : "params.numKvHeads + kvHead"}) * ${d4}u;
    ${storeColumns({ columns, spread: ty, d4, col, store: (c) => `dK[base + ${col(c)}] = ${narrow(`dk${b}_${c}`)};\n    dV[base + ${col(c)}] = ${narrow(`dv${b}_${c}`)};` })}
  }`,
  )}
}
`;
}

/** dK and dV, [batch, kvLen, heads, headDim] of `dtype`: per KV head, or each query head's share. */
function kvGradOutputs(dims: AttentionDims, heads: number, dtype: FloatStorage): TiledOutput[] {
  const bytes = dims.batch * dims.kvLen * heads * dims.headDim * storageBytes(dtype);
  return [
    { binding: 6, bytes, dtype },
    { binding: 7, bytes, dtype },
  ];
}

export const KV_GRAD_KERNEL: TiledKernel = {
  name: "backward dK/dV",
  key: "dkdv",
  outputs: (_, dims) => kvGradOutputs(dims, dims.numKvHeads, dims.dtype ?? "f32"),
  storageInputs: [0, 1, 2, 3],
  tiles: tileChoices(
    { bq: 16, bk: 32, rm: 4, rn: 4 },
    [
      { bq: 16, bk: 32, rm: 2, rn: 4 },
      { bq: 16, bk: 16, rm: 2, rn: 2 },
      { bq: 8, bk: 16, rm: 1, rn: 2 },
      { bq: 8, bk: 8, rm: 1, rn: 1 },
      { bq: 4, bk: 8, rm: 1, rn: 1 },
    ],
    // Larger blocks and more threads that still fit headDim 64 in a discrete GPU's 48 KiB.
    [
      { bq: 32, bk: 32, rm: 4, rn: 4 },
      { bq: 32, bk: 32, rm: 2, rn: 2 },
      { bq: 16, bk: 32, rm: 2, rn: 2 },
    ],
  ),
  bytes: (t, d4) => {
    const strides = kvGradStrides(t, d4);
    return gradientTiles(t, strides.q, strides.k, true).bytes;
  },
  code: (tile, d4, _, dtype) => kvGradCode(tile, d4, false, dtype),
};

/**
 * dK/dV with one workgroup per query head: for grouped-query heads (Qwen2.5-0.5B: 7 query heads per KV
 * head) the grouped kernel has only kvBlocks x numKvHeads x batch workgroups (128 at 4 x 512 tokens, fewer
 * than an H200's 132 multiprocessors, each of which could hold many), each looping over its group. Here
 * the group's heads run in parallel and a reduction sums their shares in a fixed order (deterministic).
 */
export const KV_GRAD_PER_HEAD_KERNEL: TiledKernel = {
  ...KV_GRAD_KERNEL,
  name: "backward dK/dV per head",
  key: "dkdv-head",
  outputs: (_, dims) => kvGradOutputs(dims, dims.numHeads, "f32"),
  code: (tile, d4, _, dtype) => kvGradCode(tile, d4, true, dtype),
};

/**
 * The dK/dV kernel the tiled backward runs: per query head on GPUs when query heads share KV heads, grouped
 * otherwise.
 */
export function kvGradKernel(ctx: GpuContext, dims: { numHeads: number; numKvHeads: number }): TiledKernel {
  return dims.numHeads > dims.numKvHeads && tileProfile(ctx) === "hardware"
    ? KV_GRAD_PER_HEAD_KERNEL
    : KV_GRAD_KERNEL;
}

/**
 * dK/dV (of `dtype`) = the sum of each KV head's query heads' f32 shares; one invocation per vec4 of dK and
 * of dV.
 */
const groupSumCode = (dtype: FloatStorage) => {
  const storage = storageWgsl(dtype);
  return /* wgsl */ `${storage.enable}
struct Params { count: u32, group: u32, d4: u32 }
@group(0) @binding(0) var<storage, read> dKShares: array<vec4f>;
@group(0) @binding(1) var<storage, read> dVShares: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> dK: array<${storage.vec4}>;
@group(0) @binding(3) var<storage, read_write> dV: array<${storage.vec4}>;
@group(0) @binding(4) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = id.x + id.y * groups.x * 64u; // vec4 of [batch, kvLen, numKvHeads, headDim]
  if (i >= params.count) { return; }
  // Query head kvHead * group + g of the same (sequence, key) row: shares are [.., numHeads, headDim].
  let first = (i / params.d4) * params.group * params.d4 + i % params.d4;
  var dk = vec4f(0.0);
  var dv = vec4f(0.0);
  for (var g = 0u; g < params.group; g++) {
    dk += dKShares[first + g * params.d4];
    dv += dVShares[first + g * params.d4];
  }
  dK[i] = ${storage.narrow("dk")};
  dV[i] = ${storage.narrow("dv")};
}`;
};

// ---------------------------------------------------------------------------------------------------
// dQ: the query block stays, key blocks stream.

/**
 * Row strides of the dQ kernel's tiles in vec4s: K/V padded so the accumulation's columns tx + TX*c need
 * no bounds check, both kept conflict-free.
 */
function qGradStrides(t: Tile, d4: number) {
  const kColumns = roundUp(d4, t.bk / t.rn);
  return { kColumns, q: conflictFreeStride(d4), k: conflictFreeStride(kColumns) };
}

function qGradCode(tile: Tile, d4: number, dtype: FloatStorage): string {
  const { bq, bk, rm } = tile;
  const { ty, tx, threads, row } = tileThreads(tile);
  const strides = qGradStrides(tile, d4);
  const qStride = strides.q;
  const kStride = strides.k;
  const pStride = scoreStride(tile);
  const columns = strides.kColumns / tx; // vec4 columns of dQ per thread
  const col = (c: number) => `tx + ${tx * c}u`;
  const pairs = (f: (a: number, c: number) => string) => each(rm, (a) => each(columns, (c) => f(a, c)));
  const { narrow } = storageWgsl(dtype);
  return /* wgsl */ `${gradientBindings(["dQ"], dtype, dtype)}

${gradientTiles(tile, qStride, kStride, false).wgsl}

@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let qBlocks = (params.seqLen + ${bq - 1}u) / ${bq}u;
  let q0 = (qBlocks - 1u - wg.x) * ${bq}u; // the last blocks (most keys under the causal mask) first
  let head = wg.y;
  let b = wg.z;
  let kvHead = head / params.group;
  let ty = t / ${tx}u;
  let tx = t % ${tx}u;
  let kStart = firstKey(b);
  let kEnd = keyEnd(q0 + ${bq}u);
  ${loadQueryBlock({ d4, stride: qStride, threads, dtype })}
  ${pairs((a, c) => `var dq${a}_${c} = vec4f(0.0);`)}

  for (var k0 = kStart / ${bk}u * ${bk}u; k0 < kEnd; k0 += ${bk}u) {
    workgroupBarrier();
    ${loadKeyBlock({ d4, stride: kStride, threads, dtype })}
    workgroupBarrier();
    ${scorePhaseWgsl(tile, qStride, kStride, false)}
    workgroupBarrier();

    // dQ += dS·K for rows ty + ${ty}a and vec4 columns tx + ${tx}c.
    for (var j = 0u; j < params.tileKeys; j++) {
      ${each(rm, (a) => `let ds${a} = dsTile[(${row(a)}) * ${pStride}u + j];`)}
      ${each(columns, (c) => `let k${c} = kTile[j * ${kStride}u + ${col(c)}];`)}
      ${pairs((a, c) => `dq${a}_${c} += ds${a} * k${c};`)}
    }
  }

  ${each(
    rm,
    (a) => `if (q0 + ${row(a)} < params.seqLen) {
    let base = ${qIndex(d4, `q0 + ${row(a)}`)};
    ${storeColumns({ columns, spread: tx, d4, col, store: (c) => `dQ[base + ${col(c)}] = ${narrow(`dq${a}_${c}`)};` })}
  }`,
  )}
}
`;
}

export const Q_GRAD_KERNEL: TiledKernel = {
  name: "backward dQ",
  key: "dq",
  outputs: (_, { batch, seqLen, numHeads, headDim, dtype = "f32" }) => [
    { binding: 6, bytes: batch * seqLen * numHeads * headDim * storageBytes(dtype), dtype }, // dQ
  ],
  storageInputs: [0, 1, 2, 3],
  tiles: tileChoices(
    { bq: 32, bk: 16, rm: 4, rn: 4 },
    [
      { bq: 32, bk: 16, rm: 4, rn: 2 },
      { bq: 16, bk: 16, rm: 2, rn: 2 },
      { bq: 16, bk: 8, rm: 2, rn: 1 },
      { bq: 8, bk: 8, rm: 1, rn: 1 },
      { bq: 8, bk: 4, rm: 1, rn: 1 },
    ],
    [
      { bq: 64, bk: 16, rm: 4, rn: 2 },
      { bq: 32, bk: 32, rm: 4, rn: 4 },
      { bq: 32, bk: 32, rm: 2, rn: 2 },
    ],
  ),
  bytes: (t, d4) => {
    const strides = qGradStrides(t, d4);
    return gradientTiles(t, strides.q, strides.k, false).bytes;
  },
  code: (tile, d4, _, dtype) => qGradCode(tile, d4, dtype),
};

/** dK/dV and dQ by the texture kernels (software adapters), on Q, K, V and dOut staged once per chunk. */
function textureBackward(
  ctx: GpuContext,
  args: AttentionBackwardArgs,
  lanes: number,
  flags: number,
  stats: GPUBuffer,
): void {
  const kvRows = args.kvCapacity ?? args.kvLen;
  const sources = [
    { buffer: args.q, rows: args.seqLen, heads: args.numHeads },
    { buffer: args.k, rows: kvRows, heads: args.numKvHeads },
    { buffer: args.v, rows: kvRows, heads: args.numKvHeads },
    { buffer: args.dOut, rows: args.seqLen, heads: args.numHeads },
  ];
  const kvStart = args.kvStart ?? args.q;
  const keys = textureKvGradKeys(lanes);
  dispatchTextureAttention(ctx, args, flags, lanes, sources, [
    {
      name: "backward dK/dV",
      key: "dkdv-texture",
      code: (l, d4, dtype) => textureKvGradCode(l, d4, keys, dtype),
      tile: { bq: 4 * lanes, bk: keys },
      buffers: [stats, kvStart, args.dK, args.dV],
      workgroups: [Math.ceil(args.kvLen / keys), args.numKvHeads],
    },
    {
      name: "backward dQ",
      key: "dq-texture",
      code: (l, d4, dtype) => textureQGradCode(l, d4, TEXTURE_ROWS, dtype),
      tile: { bq: TEXTURE_ROWS, bk: 4 * lanes },
      buffers: [stats, kvStart, args.dQ],
      workgroups: [Math.ceil(args.seqLen / TEXTURE_ROWS), args.numHeads],
    },
  ]);
}

/**
 * Gradients of attentionForward: dQ (like q), dK and dV ([batch, kvLen, numKvHeads, headDim], summed over
 * each KV head's query heads), all written, not accumulated. `out` and `lse` are the forward's outputs for
 * the same inputs. Deterministic: no atomics, fixed summation order. Records work only.
 */
export function attentionBackward(ctx: GpuContext, args: AttentionBackwardArgs): void {
  recordAttentionBackward(ctx, args, attentionForm(ctx, "backward", args));
}

/**
 * attentionBackward in `form` (the matmul form only where matmulFormPlan takes the problem), on
 * dimensions already checked (attentionForm checks them).
 */
export function recordAttentionBackward(
  ctx: GpuContext,
  args: AttentionBackwardArgs,
  form: AttentionForm,
): void {
  checkHeadDim(args.headDim);
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = args;
  const rows = batch * numHeads * seqLen;
  const dtype = args.dtype ?? "f32";
  const stats = ctx.pool.acquire(rows * 8, "attention stats");
  ctx.dispatch(
    ctx.pipeline(
      `attention backward stats${dtype === "f16" ? " (f16)" : ""}`,
      cachedCode(`stats:${dtype}`, () => statsCode(dtype)),
    ),
    [args.out, args.dOut, args.lse, stats],
    new Uint32Array([rows, seqLen, numHeads, headDim / 4]),
    grid(Math.ceil(rows / 64)),
  );
  const flags = args.kvStart ? HAS_KV_START : 0;
  const inputs = [args.q, args.k, args.v, args.dOut, stats, args.kvStart ?? args.q];
  const group = numHeads / numKvHeads;
  if (form === "matmul") {
    attentionBackwardByMatmul(ctx, args, stats);
    ctx.pool.release(stats);
    return;
  }
  const lanes = textureAttentionLanes(ctx, args);
  if (lanes !== undefined) {
    textureBackward(ctx, args, lanes, flags, stats);
  } else if (kvGradKernel(ctx, args) === KV_GRAD_PER_HEAD_KERNEL) {
    // Each query head's share of dK/dV, then their sum per KV head (KV_GRAD_PER_HEAD_KERNEL).
    const shareBytes = batch * kvLen * numHeads * headDim * 4;
    const dKShares = ctx.pool.acquire(shareBytes, "attention dK shares");
    const dVShares = ctx.pool.acquire(shareBytes, "attention dV shares");
    recordTiled(ctx, KV_GRAD_PER_HEAD_KERNEL, args, flags, [...inputs, dKShares, dVShares], (tile) => [
      Math.ceil(kvLen / tile.bk),
      numHeads,
      batch,
    ]);
    const count = batch * kvLen * numKvHeads * (headDim / 4);
    ctx.dispatch(
      ctx.pipeline(
        `attention backward group sum${dtype === "f16" ? " (f16)" : ""}`,
        cachedCode(`group-sum:${dtype}`, () => groupSumCode(dtype)),
      ),
      [dKShares, dVShares, args.dK, args.dV],
      new Uint32Array([count, group, headDim / 4]),
      grid(Math.ceil(count / 64)),
    );
    ctx.pool.release(dKShares);
    ctx.pool.release(dVShares);
  } else {
    recordTiled(ctx, KV_GRAD_KERNEL, args, flags, [...inputs, args.dK, args.dV], (tile) => [
      Math.ceil(kvLen / tile.bk),
      numKvHeads,
      batch,
    ]);
  }
  if (lanes === undefined) {
    recordTiled(ctx, Q_GRAD_KERNEL, args, flags, [...inputs, args.dQ], (tile) => [
      Math.ceil(seqLen / tile.bq),
      numHeads,
      batch,
    ]);
  }
  // Safe to release while the dispatches are pending: later users of the buffer are ordered after them.
  ctx.pool.release(stats);
}
