/**
 * Attention of one new token per sequence over a KV cache (flash-decoding): one workgroup per (KV split,
 * KV head, sequence) serves all query heads of its group, so each cached K/V row is loaded once per split.
 * Per chunk of 64 keys: thread t scores key t against every head, one thread per head runs the online
 * softmax, then threads (vec4 column, key slice) accumulate P·V per head. Each split writes unnormalised
 * partial outputs with their (max, sum); a combine dispatch merges the splits of each head. Splits are
 * sized so that short caches use one or two and long ones fill the GPU; a single split normalises its
 * output itself and needs no combine. A fused form (DecodeRope) also does the step's rotary embedding and
 * cache append, reading q, k and v from the fused q/k/v projection's output. This is the GPUs' form;
 * software adapters run the lane form of decode-lanes.ts, which writes the same partials for the same combine.
 * With f16 storage (an f16 model's KV cache) q, the caches and the output are halves, widened as they are
 * read and rounded once as they are stored; scores, softmax, sums and the partials stay f32 and are
 * computed in the same order, so the output is the f32 kernel's on the widened values, rounded to halves.
 * The fused form rounds its rotated queries to halves as ropeAppend would store them, so that it keeps
 * giving ropeAppend + decodeAttention's bits.
 */

import { checkAttentionDims } from "../../core/attention.js";
import { type GpuContext, grid } from "../../gpu/context.js";
import { type FloatStorage, f32Bits, uniforms } from "../elementwise.js";
import { textureLanes } from "../texture-lanes.js";
import {
  type DecodeVariant,
  decodeBindings,
  decodeWorkgroup,
  rotatedQuery,
  variantName,
} from "./decode-bindings.js";
import { laneDecodeCode } from "./decode-lanes.js";
import { cachedCode, checkHeadDim, each, MASKED, resolveScale, storageWgsl } from "./shared.js";
import { tileProfile } from "./tiles.js";

export interface DecodeAttentionArgs {
  /** [batch, numHeads, headDim]: one new token per sequence. */
  q: GPUBuffer;
  /** [batch, capacity, numKvHeads, headDim]. */
  kCache: GPUBuffer;
  vCache: GPUBuffer;
  /** Like q. */
  out: GPUBuffer;
  /** How q, the caches and out are stored (default f32); scores, softmax and sums are f32 either way. */
  dtype?: FloatStorage;
  /** Positions 0..kvLen-1 are valid; the new token's K/V are already written at kvLen - 1. */
  kvLen: number;
  capacity: number;
  kvStart?: GPUBuffer;
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  scale?: number;
}

/** Keys scored per pass of a decode workgroup (one per thread). */
const DECODE_CHUNK = 64;

/** Decode workgroups to aim for: enough to fill a real GPU; a software adapter has a few cores. */
const decodeTargetWorkgroups = (ctx: GpuContext) => (ctx.info.adapter.isSoftware ? 16 : 512);

/** Key slices of the decode P·V phase: thread t works on vec4 column t % d4 of slice t / d4. */
const decodeSlices = (d4: number) => Math.floor(DECODE_CHUNK / d4);

/**
 * How the fused form of a decoding step's attention reads q: from a fused q/k/v projection's output
 * [batch, numHeads + 2·numKvHeads, headDim], rotating the queries at each sequence's position as it loads
 * them, while the workgroups of the last split first write the rotated new key and the new value into the
 * caches at slot kvLen - 1 (which only they read). One dispatch where ropeAppend and decodeAttention made
 * two, with the same arithmetic (the same bits).
 */
export interface DecodeRope {
  /** i32 [batch]: each sequence's position (RoPE angle) of the new token. */
  positions: GPUBuffer;
  theta: number;
}

/** WGSL: rotate the group's queries into qTile (scaled) and append the new key and value (fused form). */
function ropedLoads(group: number, d4: number, dtype: FloatStorage): string {
  const pairs = d4 / 2;
  const { widen, narrow } = storageWgsl(dtype);
  const rotated = (source: string, pair: string) =>
    `rotate(${widen(`q[${source}]`)}, ${widen(`q[${source} + ${pairs}u]`)}, position, ${pair})`;
  return /* wgsl */ `let position = u32(positions[b]);
  let row = b * (params.numHeads + 2u * params.numKvHeads); // the new token's heads: q's, k's, v's
  for (var e = t; e < ${group * pairs}u; e += ${DECODE_CHUNK}u) {
    let g = e / ${pairs}u;
    let pair = e % ${pairs}u;
    let source = (row + kvHead * ${group}u + g) * ${d4}u + pair;
    let r = ${rotated("source", "pair")};
    qTile[g * ${d4}u + pair] = ${rotatedQuery(dtype, "r.first")} * params.scale;
    qTile[g * ${d4}u + pair + ${pairs}u] = ${rotatedQuery(dtype, "r.second")} * params.scale;
  }
  if (split == params.splits - 1u && t < ${d4}u) {
    let slot = ((b * params.capacity + params.kvLen - 1u) * params.numKvHeads + kvHead) * ${d4}u;
    if (t < ${pairs}u) {
      let source = (row + params.numHeads + kvHead) * ${d4}u + t;
      let r = ${rotated("source", "t")};
      kCache[slot + t] = ${narrow("r.first")};
      kCache[slot + t + ${pairs}u] = ${narrow("r.second")};
    } else {
      let source = (row + params.numHeads + params.numKvHeads + kvHead) * ${d4}u + t - ${pairs}u;
      vCache[slot + t - ${pairs}u] = q[source];
      vCache[slot + t] = q[source + ${pairs}u];
    }
  }
  // The new key and value are read below by other invocations of this workgroup.
  storageBarrier();`;
}

/** WGSL: each head's summed output: normalised into out (a single split), else partial with its (max, sum). */
function storeOutputs(group: number, d4: number, variant: DecodeVariant): string {
  const slices = decodeSlices(d4);
  const { narrow } = storageWgsl(variant.dtype);
  const store = (g: number) =>
    variant.final
      ? `let sum = headSums[${g}u];
    out[(headBase + ${g}u) * ${d4}u + t] = ${narrow("select(vec4f(0.0), total / sum, sum > 0.0)")};`
      : `partOut[((headBase + ${g}u) * params.splits + split) * ${d4}u + t] = total;`;
  return /* wgsl */ `${variant.final ? `if (t < ${group}u) { headSums[t] = rowSum; }` : ""}
  ${each(
    group,
    (g) => `workgroupBarrier();
  if (slice < ${slices}u) { sumTile[t] = acc${g}; }
  workgroupBarrier();
  if (t < ${d4}u) {
    var total = vec4f(0.0);
    for (var s = 0u; s < params.slices; s++) { total += sumTile[s * ${d4}u + t]; }
    ${store(g)}
  }`,
    "\n  ",
  )}
  ${
    variant.final
      ? ""
      : `if (t < ${group}u) {
    partStats[(headBase + t) * params.splits + split] = vec2f(rowMax, rowSum);
  }`
  }`;
}

function decodeCode(group: number, d4: number, variant: DecodeVariant): string {
  const threads = DECODE_CHUNK;
  const slices = decodeSlices(d4);
  const heads = (f: (g: number) => string, separator = "\n") => each(group, f, separator);
  const { widen } = storageWgsl(variant.dtype);
  return /* wgsl */ `${decodeBindings(variant)}

var<workgroup> qTile: array<vec4f, ${group * d4}>;        // scaled queries of the group's heads
var<workgroup> pTile: array<f32, ${group * DECODE_CHUNK}>; // per head: scores, then probabilities
var<workgroup> alphaTile: array<f32, ${group}>;
var<workgroup> sumTile: array<vec4f, ${slices * d4}>;${
    variant.final
      ? `\nvar<workgroup> headSums: array<f32, ${group}>;             // each head's softmax sum`
      : ""
  }

@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  ${decodeWorkgroup(group)}
  ${
    variant.rope
      ? ropedLoads(group, d4, variant.dtype)
      : `for (var e = t; e < params.queryElements; e += ${threads}u) {
    qTile[e] = ${widen(`q[headBase * ${d4}u + e]`)} * params.scale;
  }`
  }
  // Softmax state of head t (threads t < ${group}).
  var rowMax = ${MASKED};
  var rowSum = 0.0;
  let column = t % ${d4}u;
  let slice = t / ${d4}u;
  ${heads((g) => `var acc${g} = vec4f(0.0);`)}

  for (var j0 = jBegin; j0 < jEnd; j0 += ${DECODE_CHUNK}u) {
    workgroupBarrier();
    // Thread t scores key j0 + t against every head of the group.
    let key = j0 + t;
    ${heads((g) => `var s${g} = 0.0;`)}
    if (key < jEnd) {
      let base = ((b * params.capacity + key) * params.numKvHeads + kvHead) * ${d4}u;
      for (var c = 0u; c < params.d4; c++) {
        let kc = ${widen("kCache[base + c]")};
        ${heads((g) => `s${g} += dot(qTile[${g * d4}u + c], kc);`)}
      }
    }
    ${heads((g) => `pTile[${g * DECODE_CHUNK}u + t] = s${g};`)}
    workgroupBarrier();
    if (t < ${group}u) {
      let count = min(jEnd - j0, ${DECODE_CHUNK}u);
      var chunkMax = rowMax;
      for (var j = 0u; j < count; j++) { chunkMax = max(chunkMax, pTile[t * ${DECODE_CHUNK}u + j]); }
      let alpha = exp(rowMax - chunkMax);
      rowMax = chunkMax;
      rowSum *= alpha;
      for (var j = 0u; j < params.chunk; j++) {
        let p = select(0.0, exp(pTile[t * ${DECODE_CHUNK}u + j] - rowMax), j < count);
        rowSum += p;
        pTile[t * ${DECODE_CHUNK}u + j] = p;
      }
      alphaTile[t] = alpha;
    }
    workgroupBarrier();
    // Thread (column, slice) accumulates P·V over keys slice + ${slices}n for every head.
    if (slice < ${slices}u) {
      ${heads((g) => `acc${g} *= alphaTile[${g}u];`)}
      for (var n = 0u; n < params.keysPerSlice; n++) {
        let j = slice + ${slices}u * n;
        if (j < ${DECODE_CHUNK}u && j0 + j < jEnd) {
          let vc = ${widen(`vCache[((b * params.capacity + j0 + j) * params.numKvHeads + kvHead) * ${d4}u + column]`)};
          ${heads((g) => `acc${g} += pTile[${g * DECODE_CHUNK}u + j] * vc;`)}
        }
      }
    }
  }

  // Sum the slices' partial outputs, head by head. A single split is the whole answer: it is normalised
  // here and no combine runs.
  ${storeOutputs(group, d4, variant)}
}
`;
}

/**
 * Merge the splits of each (sequence, head): out = Σ e^(m_s - M)·o_s / Σ e^(m_s - M)·l_s, in f32, stored
 * as `dtype`.
 */
const combineCode = (dtype: FloatStorage) => {
  const storage = storageWgsl(dtype);
  return /* wgsl */ `${storage.enable}
struct Params { splits: u32, d4: u32, rows: u32 }
@group(0) @binding(0) var<storage, read> partOut: array<vec4f>;
@group(0) @binding(1) var<storage, read> partStats: array<vec2f>;
@group(0) @binding(2) var<storage, read_write> out: array<${storage.vec4}>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let row = wg.x + wg.y * groups.x; // (sequence, head)
  if (row >= params.rows) { return; }
  let first = row * params.splits;
  var globalMax = ${MASKED};
  for (var s = 0u; s < params.splits; s++) { globalMax = max(globalMax, partStats[first + s].x); }
  for (var c = t; c < params.d4; c += 64u) {
    var sum = 0.0;
    var total = vec4f(0.0);
    for (var s = 0u; s < params.splits; s++) {
      let stat = partStats[first + s];
      let weight = exp(stat.x - globalMax);
      sum += weight * stat.y;
      total += weight * partOut[(first + s) * params.d4 + c];
    }
    out[row * params.d4 + c] = ${storage.narrow("select(vec4f(0.0), total / sum, sum > 0.0)")};
  }
}`;
};

/**
 * The subgroup width of the lane form (decode-lanes.ts), which software adapters run; undefined: the
 * workgroup form, which GPUs run (attentionTuning's profile can force either where both can run).
 */
function decodeLanes(ctx: GpuContext): number | undefined {
  return tileProfile(ctx) === "software" ? textureLanes(ctx) : undefined;
}

/** Whether the fused RoPE form takes this head size (pairs rotated as whole vec4s). */
export const ropedDecodeFits = (headDim: number): boolean => headDim % 8 === 0;

/**
 * Attention of one new token per sequence over a KV cache (flash-decoding): out [batch, numHeads, headDim]
 * = softmax(scale·q·Kᵀ)·V over cache positions kvStart[b]..kvLen-1. With `rope`, q is the fused q/k/v
 * projection's output [batch, numHeads + 2·numKvHeads, headDim], rotated here, and the new token's key and
 * value are appended at slot kvLen - 1 in the same dispatch (DecodeRope). Records work only.
 */
export function decodeAttention(ctx: GpuContext, args: DecodeAttentionArgs, rope?: DecodeRope): void {
  const { batch, numHeads, numKvHeads, headDim, kvLen, capacity } = args;
  checkAttentionDims({ batch, seqLen: 1, kvLen, kvCapacity: capacity, numHeads, numKvHeads, headDim });
  checkHeadDim(headDim);
  if (rope && !ropedDecodeFits(headDim))
    throw new RangeError(`decodeAttention: the fused RoPE needs headDim a multiple of 8, got ${headDim}`);
  const d4 = headDim / 4;
  const group = numHeads / numKvHeads;
  const lanes = decodeLanes(ctx);
  if (lanes === undefined) {
    // The workgroup form stages the group's queries and scores; the lane form keeps them in registers.
    const bytes = 16 * group * d4 + 4 * group * (DECODE_CHUNK + 2) + 16 * decodeSlices(d4) * d4;
    const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
    if (bytes > limit)
      throw new RangeError(
        `decodeAttention: ${group} query heads per KV head of headDim ${headDim} need ${bytes} bytes of workgroup memory; this device has ${limit}`,
      );
  }
  const chunks = Math.ceil(kvLen / DECODE_CHUNK);
  const wanted = Math.ceil(decodeTargetWorkgroups(ctx) / (batch * numKvHeads));
  const keysPerSplit = DECODE_CHUNK * Math.ceil(chunks / Math.min(chunks, wanted));
  const splits = Math.ceil(kvLen / keysPerSplit);
  const rows = batch * numHeads;
  const dtype = args.dtype ?? "f32";
  // One split writes the normalised output itself; several write f32 partial outputs for the combine.
  const variant: DecodeVariant = { dtype, final: splits === 1, rope: rope && { headDim, theta: rope.theta } };
  const partials = variant.final
    ? undefined
    : {
        out: ctx.pool.acquire(rows * splits * headDim * 4, "decode partial outputs"),
        stats: ctx.pool.acquire(rows * splits * 8, "decode partial stats"),
      };
  const form = lanes === undefined ? "" : ` lanes ${lanes}`;
  const code = cachedCode(`decode${form}:${group}:${d4}:${variantName(variant)}`, () =>
    lanes === undefined ? decodeCode(group, d4, variant) : laneDecodeCode(lanes, group, d4, variant),
  );
  const bindings = [
    args.q,
    args.kCache,
    args.vCache,
    args.kvStart ?? args.q,
    ...(partials ? [partials.out, partials.stats] : [args.out]),
    ...(rope ? [rope.positions] : []),
  ];
  const outputs = variant.final ? "" : ", partial";
  ctx.dispatch(
    ctx.pipeline(
      `attention decode${form}${rope ? " with RoPE" : ""} (${dtype}${outputs}, group ${group}, headDim ${headDim})`,
      code,
    ),
    bindings,
    uniforms(
      kvLen,
      capacity,
      numHeads,
      numKvHeads,
      keysPerSplit,
      splits,
      args.kvStart ? 1 : 0,
      d4,
      DECODE_CHUNK,
      decodeSlices(d4),
      Math.ceil(DECODE_CHUNK / decodeSlices(d4)),
      group * d4,
      f32Bits(resolveScale(args)),
      0, // opaqueZero
    ),
    [splits, numKvHeads, batch],
  );
  if (partials) {
    ctx.dispatch(
      ctx.pipeline(
        `attention decode combine (${dtype})`,
        cachedCode(`decode combine:${dtype}`, () => combineCode(dtype)),
      ),
      [partials.out, partials.stats, args.out],
      new Uint32Array([splits, d4, rows]),
      grid(rows),
    );
    ctx.pool.release(partials.out);
    ctx.pool.release(partials.stats);
  }
}
