/**
 * The matmul form of attention backward: the score matrices materialised and the gradients taken by the
 * matmul kernels, for GPUs, where those may run many times faster than the tiled kernels' inner products in
 * workgroup memory (tuning measures both; forms.ts). Per block of query rows (matmul-form.ts):
 *
 *   S  = scale · Q·Kᵀ          dP = dOut·Vᵀ                       (two matmuls per KV head, its query
 *                                                                   heads' rows stacked: group·rows rows)
 *   P  = exp(S - lse), masked   dS = P∘(dP - D)·scale              (one kernel, in place)
 *   dQ = dS·K                                                      (one matmul per KV head, stacked rows)
 *   dV = Pᵀ·dOut                dK = dSᵀ·Q                         (two matmuls per query head, whose
 *                                                                   shares one kernel sums per KV head)
 *
 * dK and dV take one product per query head, not one per KV head over the group's stacked rows: with
 * Qwen2.5-0.5B's 7 heads a group that is 7 times the workgroups (448 rather than 64 at 4 × 512 tokens)
 * for products 7 times shorter. The group sum writes each chunk's first block's dK and dV into their own
 * layout and adds the later blocks' to them; dQ is copied back. It computes what the tiled kernels compute
 * (sums in another order) and is deterministic.
 */
import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import {
  enableFor,
  type FloatStorage,
  f32Bits,
  flatMain,
  loadF32,
  storageBytes,
  storeAs,
  uniforms,
  workgroupsFor,
} from "../elementwise.js";
import { matmul } from "../matmul.js";
import {
  BLOCK_WGSL,
  blockParams,
  gatherHeads,
  headMajorBlocks,
  matmulFormPlan,
  matmulFormSizes,
  scatterHeads,
} from "./matmul-form.js";
import { cachedCode, resolveScale, storageWgsl } from "./shared.js";

/**
 * P = exp(S - lse) where visible, else 0, over S; dS = P∘(dP - D)·scale over dP. S and dP are the
 * block's [sequences, numHeads, rows, keys] of `dtype` (computed in f32): query rows q0.. of sequences
 * batch0.., keys 0..keys-1.
 */
const scoreGradientCode = (dtype: FloatStorage) => {
  const read = (value: string) => loadF32(dtype, 1, value);
  const stored = (value: string) => storeAs(dtype, 1, value);
  return /* wgsl */ `${enableFor(dtype)}
struct Params { count: u32, ${BLOCK_WGSL.params}, scale: f32 }
@group(0) @binding(0) var<storage, read_write> scores: array<${dtype}>;
@group(0) @binding(1) var<storage, read_write> dScores: array<${dtype}>;
@group(0) @binding(2) var<storage, read> stats: array<vec2f>;
@group(0) @binding(3) var<storage, read> kvStart: array<i32>;
@group(0) @binding(4) var<uniform> params: Params;

${BLOCK_WGSL.row}

${flatMain()}
  if (i >= params.count) { return; }
  let key = i % params.keys;
  let at = blockRow(i / params.keys);
  let visible = key >= at.kStart && (params.causal == 0u || key + params.seqLen <= at.position + params.kvLen);
  let stat = stats[(at.b * params.numHeads + at.head) * params.seqLen + at.position]; // lse's layout
  let p = select(0.0, exp(${read("scores[i]")} - stat.x), visible);
  scores[i] = ${stored("p")};
  dScores[i] = ${stored(`p * (${read("dScores[i]")} - stat.y) * params.scale`)};
}`;
};

/**
 * dK and dV [batch, kvLen, numKvHeads, headDim] (keys 0..keys-1 of sequences batch0..) = the sums over
 * each KV head's query heads of a block's shares [sequences, numHeads, keys, headDim], written or added
 * (accumulate), all of `dtype` (summed in f32, rounded once); one invocation per vec4 of dK and of dV.
 */
const groupSumCode = (dtype: FloatStorage) => {
  const { enable, vec4, widen, narrow } = storageWgsl(dtype);
  return /* wgsl */ `${enable}
struct Params { count: u32, group: u32, d4: u32, keys: u32, numKvHeads: u32, kvLen: u32, batch0: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read> dKShares: array<${vec4}>;
@group(0) @binding(1) var<storage, read> dVShares: array<${vec4}>;
@group(0) @binding(2) var<storage, read_write> dK: array<${vec4}>;
@group(0) @binding(3) var<storage, read_write> dV: array<${vec4}>;
@group(0) @binding(4) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; } // i: vec4 of the block's [sequences, keys, numKvHeads, headDim]
  let c = i % params.d4;
  let kvHead = (i / params.d4) % params.numKvHeads;
  let key = (i / (params.d4 * params.numKvHeads)) % params.keys;
  let sequence = i / (params.d4 * params.numKvHeads * params.keys);
  // Query head kvHead·group + g of the sequence, at row key of its share.
  let first = ((sequence * params.numKvHeads + kvHead) * params.group * params.keys + key) * params.d4 + c;
  let headStride = params.keys * params.d4;
  var dk = vec4f(0.0);
  var dv = vec4f(0.0);
  for (var g = 0u; g < params.group; g++) {
    dk += ${widen("dKShares[first + g * headStride]")};
    dv += ${widen("dVShares[first + g * headStride]")};
  }
  let at = (((params.batch0 + sequence) * params.kvLen + key) * params.numKvHeads + kvHead) * params.d4 + c;
  if (params.accumulate != 0u) {
    dk += ${widen("dK[at]")};
    dv += ${widen("dV[at]")};
  }
  dK[at] = ${narrow("dk")};
  dV[at] = ${narrow("dv")};
}`;
};

/** What the matmul form reads and writes: attentionBackward's arguments but out and lse (stats has them). */
export type MatmulFormArgs = AttentionDims &
  Record<"q" | "k" | "v" | "dOut" | "dQ" | "dK" | "dV", GPUBuffer> & { kvStart?: GPUBuffer };

/**
 * Records the gradients of `args` in the matmul form; `stats` holds each query row's (lse, D) as
 * attentionBackward computes them. The caller checks matmulFormPlan first.
 */
export function attentionBackwardByMatmul(ctx: GpuContext, args: MatmulFormArgs, stats: GPUBuffer): void {
  const { kvLen, numHeads, numKvHeads, headDim } = args;
  const dtype = args.dtype ?? "f32";
  const plan = matmulFormPlan(ctx, args);
  if (!plan) throw new RangeError("attention backward: the matmul form does not take this problem");
  const group = numHeads / numKvHeads;
  const scale = resolveScale(args);
  const sizes = matmulFormSizes(plan, args);
  const acquire = (values: number, label: string) =>
    ctx.pool.acquire(values * storageBytes(dtype), `attention ${label}`);
  const qh = acquire(sizes.queries, "q by head");
  const dOuth = acquire(sizes.queries, "dOut by head");
  const dQh = acquire(sizes.queries, "dQ by head");
  const kh = acquire(sizes.keys, "k by head");
  const vh = acquire(sizes.keys, "v by head");
  const dKShares = acquire(plan.sequences * numHeads * kvLen * headDim, "dK shares");
  const dVShares = acquire(plan.sequences * numHeads * kvLen * headDim, "dV shares");
  const scores = acquire(sizes.scores, "scores");
  const dScores = acquire(sizes.scores, "score gradients");
  const halves = dtype === "f16" ? " (f16)" : "";
  const scoreGradients = ctx.pipeline(
    `attention backward score gradients${halves}`,
    cachedCode(`score-gradients:${dtype}`, () => scoreGradientCode(dtype)),
  );
  const groupSum = ctx.pipeline(
    `attention backward matmul-form group sum${halves}`,
    cachedCode(`matmul-form-group-sum:${dtype}`, () => groupSumCode(dtype)),
  );

  for (const block of headMajorBlocks(ctx, plan, args, kh, vh)) {
    const { b0, sequences, rows, seen, queries } = block;
    gatherHeads(ctx, args.q, qh, queries);
    gatherHeads(ctx, args.dOut, dOuth, queries);

    // Per (sequence, KV head): its group's query rows stacked, group·rows of them.
    const stacked = { batch: sequences * numKvHeads, m: group * rows, dtype };
    const ofKeys = { aBatchStride: group * rows * headDim, bBatchStride: kvLen * headDim };
    const scoresOf = { ...stacked, ...ofKeys, n: seen, k: headDim, transB: true };
    matmul(ctx, { ...scoresOf, a: qh, b: kh, out: scores, alpha: scale });
    matmul(ctx, { ...scoresOf, a: dOuth, b: vh, out: dScores });
    const count = sequences * numHeads * rows * seen;
    ctx.dispatch(
      scoreGradients,
      [scores, dScores, stats, args.kvStart ?? stats],
      uniforms(count, ...blockParams(block, args), f32Bits(scale)),
      workgroupsFor(count),
    );
    matmul(ctx, {
      ...stacked,
      n: headDim,
      k: seen,
      a: dScores,
      b: kh,
      out: dQh,
      aBatchStride: group * rows * seen,
      bBatchStride: kvLen * headDim,
    });
    scatterHeads(ctx, dQh, args.dQ, queries);

    // Per query head: its shares of dV = Pᵀ·dOut and dK = dSᵀ·Q, then their sums per KV head.
    const perHead = { batch: sequences * numHeads, m: seen, n: headDim, k: rows, transA: true, dtype };
    const ofRows = { aBatchStride: rows * seen, bBatchStride: rows * headDim };
    matmul(ctx, { ...perHead, ...ofRows, a: scores, b: dOuth, out: dVShares });
    matmul(ctx, { ...perHead, ...ofRows, a: dScores, b: qh, out: dKShares });
    const vec4s = sequences * seen * numKvHeads * (headDim / 4);
    ctx.dispatch(
      groupSum,
      [dKShares, dVShares, args.dK, args.dV],
      uniforms(vec4s, group, headDim / 4, seen, numKvHeads, kvLen, b0, block.first ? 0 : 1),
      workgroupsFor(vec4s),
    );
  }
  // Recorded: later users of these buffers are ordered after the dispatches that read them.
  for (const buffer of [qh, dOuth, dQh, kh, vh, dKShares, dVShares, scores, dScores])
    ctx.pool.release(buffer);
}
