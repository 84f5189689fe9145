/**
 * The matmul form of attention backward: the score matrices materialised and the gradients taken by the
 * matmul kernels, for GPUs, where those may run many times faster than the tiled kernels' inner products in
 * workgroup memory (tuning measures both; backward-forms.ts). Per chunk of sequences:
 *
 *   S  = scale · Q·Kᵀ          dP = dOut·Vᵀ                       (two matmuls per KV head, its query
 *                                                                   heads' rows stacked: group·seqLen rows)
 *   P  = exp(S - lse), masked   dS = P∘(dP - D)·scale              (one kernel, in place)
 *   dQ = dS·K                                                      (one matmul per KV head, stacked rows)
 *   dV = Pᵀ·dOut                dK = dSᵀ·Q                         (two matmuls per query head, whose
 *                                                                   shares one kernel sums per KV head)
 *
 * dK and dV take one product per query head, not one per KV head over the group's stacked rows: with
 * Qwen2.5-0.5B's 7 heads a group that is 7 times the workgroups (448 rather than 64 at 4 × 512 tokens)
 * for products 7 times shorter. Q, K, V and dOut are first copied head-major ([batch, heads, rows,
 * headDim]); the group sum writes dK and dV in their own layout, and dQ is copied back. The two score
 * matrices take 2 · batch · numHeads · seqLen · kvLen floats: sequences are taken in chunks whose matrices
 * fit MATMUL_FORM_BYTES each, and a problem of which one sequence does not fit is left to the tiled
 * kernels. It computes what they compute (sums in another order) and is deterministic.
 */
import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { contiguousStrides, f32Bits, flatMain, uniforms, workgroupsFor } from "../elementwise.js";
import { stridedCopy } from "../layout.js";
import { matmul } from "../matmul.js";
import { resolveScale } from "./shared.js";

/**
 * The most bytes one score matrix of a chunk may take (there are two, alive only during the backward of
 * one layer): 4 × 512 tokens of Qwen2.5-0.5B's 14 heads take 59 MB, one sequence of 1,500 tokens 126 MB.
 */
export const MATMUL_FORM_BYTES = 128 * 2 ** 20;

let testBytes: number | undefined;

/** Tests: a smaller MATMUL_FORM_BYTES (undefined restores it), to chunk small problems or leave them out. */
export function limitMatmulFormBytesForTesting(bytes?: number): void {
  testBytes = bytes;
}

/** P = exp(S - lse) where visible, else 0, over S; dS = P∘(dP - D)·scale over dP. */
const SCORE_GRADIENT_CODE = /* wgsl */ `
struct Params { count: u32, seqLen: u32, kvLen: u32, rowsBefore: u32, rowsPerSequence: u32, causal: u32, hasKvStart: u32, batch0: u32, scale: f32 }
@group(0) @binding(0) var<storage, read_write> scores: array<f32>;
@group(0) @binding(1) var<storage, read_write> dScores: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<vec2f>;
@group(0) @binding(3) var<storage, read> kvStart: array<i32>;
@group(0) @binding(4) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  let key = i % params.kvLen;
  let row = i / params.kvLen; // (sequence, head, position) within the chunk: the layout of lse
  let position = row % params.seqLen;
  var kStart = 0u;
  if (params.hasKvStart != 0u) {
    kStart = u32(clamp(kvStart[params.batch0 + row / params.rowsPerSequence], 0, i32(params.kvLen)));
  }
  let visible = key >= kStart && (params.causal == 0u || key + params.seqLen <= position + params.kvLen);
  let stat = stats[params.rowsBefore + row];
  let p = select(0.0, exp(scores[i] - stat.x), visible);
  scores[i] = p;
  dScores[i] = p * (dScores[i] - stat.y) * params.scale;
}`;

/** What the matmul form reads and writes: attentionBackward's arguments but out and lse (stats has them). */
export type MatmulFormArgs = AttentionDims &
  Record<"q" | "k" | "v" | "dOut" | "dQ" | "dK" | "dV", GPUBuffer> & { kvStart?: GPUBuffer };

/**
 * dK and dV [batch, kvLen, numKvHeads, headDim] of a chunk = the sums over each KV head's query heads of
 * their shares [sequences, numHeads, kvLen, headDim], one invocation per vec4 of dK and of dV.
 */
const GROUP_SUM_CODE = /* wgsl */ `
struct Params { count: u32, group: u32, d4: u32, kvLen: u32, numKvHeads: u32, outBase: u32 }
@group(0) @binding(0) var<storage, read> dKShares: array<vec4f>;
@group(0) @binding(1) var<storage, read> dVShares: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> dK: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> dV: array<vec4f>;
@group(0) @binding(4) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; } // i: vec4 of the chunk's [sequences, kvLen, numKvHeads, headDim]
  let c = i % params.d4;
  let kvHead = (i / params.d4) % params.numKvHeads;
  let key = (i / (params.d4 * params.numKvHeads)) % params.kvLen;
  let sequence = i / (params.d4 * params.numKvHeads * params.kvLen);
  // Query head kvHead·group + g of the sequence, at row key of its share.
  let first = ((sequence * params.numKvHeads + kvHead) * params.group * params.kvLen + key) * params.d4 + c;
  let headStride = params.kvLen * params.d4;
  var dk = vec4f(0.0);
  var dv = vec4f(0.0);
  for (var g = 0u; g < params.group; g++) {
    dk += dKShares[first + g * headStride];
    dv += dVShares[first + g * headStride];
  }
  dK[params.outBase + i] = dk;
  dV[params.outBase + i] = dv;
}`;

/** Sequences per chunk of the matmul form, or 0 when one sequence's score matrix does not fit. */
export function matmulFormSequences(ctx: GpuContext, dims: AttentionDims): number {
  const { limits } = ctx.device;
  const budget = Math.min(
    testBytes ?? MATMUL_FORM_BYTES,
    limits.maxStorageBufferBindingSize,
    limits.maxBufferSize,
  );
  const perSequence = dims.numHeads * dims.seqLen * dims.kvLen * 4;
  return Math.min(dims.batch, Math.floor(budget / Math.max(perSequence, 1)));
}

/**
 * Records the gradients of `args` in the matmul form; `stats` holds each query row's (lse, D) as
 * attentionBackward computes them. The caller checks matmulFormSequences first.
 */
export function attentionBackwardByMatmul(ctx: GpuContext, args: MatmulFormArgs, stats: GPUBuffer): void {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = args;
  const chunk = matmulFormSequences(ctx, args);
  if (chunk < 1) throw new RangeError("attention backward: the matmul form does not fit this problem");
  const capacity = args.kvCapacity ?? kvLen;
  const group = numHeads / numKvHeads;
  const scale = resolveScale(args);
  const acquire = (floats: number, label: string) => ctx.pool.acquire(floats * 4, `attention ${label}`);
  const queryFloats = chunk * numHeads * seqLen * headDim;
  const keyFloats = chunk * numKvHeads * kvLen * headDim;
  const shareFloats = chunk * numHeads * kvLen * headDim;
  const scoreFloats = chunk * numHeads * seqLen * kvLen;
  const qh = acquire(queryFloats, "q by head");
  const dOuth = acquire(queryFloats, "dOut by head");
  const dQh = acquire(queryFloats, "dQ by head");
  const kh = acquire(keyFloats, "k by head");
  const vh = acquire(keyFloats, "v by head");
  const dKShares = acquire(shareFloats, "dK shares");
  const dVShares = acquire(shareFloats, "dV shares");
  const scores = acquire(scoreFloats, "scores");
  const dScores = acquire(scoreFloats, "score gradients");
  const scoreGradients = ctx.pipeline("attention backward score gradients", SCORE_GRADIENT_CODE);
  const groupSum = ctx.pipeline("attention backward matmul-form group sum", GROUP_SUM_CODE);

  for (let b0 = 0; b0 < batch; b0 += chunk) {
    const sequences = Math.min(chunk, batch - b0);
    // The chunk's [sequences, rows, heads, headDim] of a tensor stored [batch, stored rows, heads, headDim],
    // as [sequences, heads, rows, headDim].
    const byHead = (heads: number, rows: number, stored: number) => ({
      shape: [sequences, heads, rows, headDim],
      strides: [stored * heads * headDim, headDim, heads * headDim, 1],
      offset: b0 * stored * heads * headDim,
    });
    const queries = byHead(numHeads, seqLen, seqLen);
    const keys = byHead(numKvHeads, kvLen, capacity);
    const gather = (x: GPUBuffer, out: GPUBuffer, at: typeof queries) =>
      stridedCopy(ctx, { x, out, shape: at.shape, xStrides: at.strides, xOffset: at.offset });
    gather(args.q, qh, queries);
    gather(args.dOut, dOuth, queries);
    gather(args.k, kh, keys);
    gather(args.v, vh, keys);

    // Per (sequence, KV head): its group's query rows stacked, group·seqLen of them.
    const kvProducts = sequences * numKvHeads;
    const stacked = group * seqLen;
    const stackedStride = stacked * headDim;
    const keysStride = kvLen * headDim;
    const stackedScores = stacked * kvLen;
    const scoresOf = { batch: kvProducts, m: stacked, n: kvLen, k: headDim, transB: true };
    const ofKeys = { aBatchStride: stackedStride, bBatchStride: keysStride };
    matmul(ctx, { ...scoresOf, ...ofKeys, a: qh, b: kh, out: scores, alpha: scale });
    matmul(ctx, { ...scoresOf, ...ofKeys, a: dOuth, b: vh, out: dScores });

    const count = sequences * numHeads * seqLen * kvLen;
    ctx.dispatch(
      scoreGradients,
      [scores, dScores, stats, args.kvStart ?? stats],
      uniforms(
        count,
        seqLen,
        kvLen,
        b0 * numHeads * seqLen,
        numHeads * seqLen,
        (args.causal ?? true) ? 1 : 0,
        args.kvStart ? 1 : 0,
        b0,
        f32Bits(scale),
      ),
      workgroupsFor(count),
    );

    matmul(ctx, {
      batch: kvProducts,
      m: stacked,
      n: headDim,
      k: kvLen,
      a: dScores,
      b: kh,
      out: dQh,
      aBatchStride: stackedScores,
      bBatchStride: keysStride,
    });
    stridedCopy(ctx, {
      x: dQh,
      out: args.dQ,
      shape: queries.shape,
      xStrides: contiguousStrides(queries.shape),
      outStrides: queries.strides,
      outOffset: queries.offset,
    });

    // Per query head: its shares of dV = Pᵀ·dOut and dK = dSᵀ·Q, then their sums per KV head.
    const perHead = { batch: sequences * numHeads, m: kvLen, n: headDim, k: seqLen, transA: true };
    const ofRows = { aBatchStride: seqLen * kvLen, bBatchStride: seqLen * headDim };
    matmul(ctx, { ...perHead, ...ofRows, a: scores, b: dOuth, out: dVShares });
    matmul(ctx, { ...perHead, ...ofRows, a: dScores, b: qh, out: dKShares });
    const vec4s = sequences * kvLen * numKvHeads * (headDim / 4);
    ctx.dispatch(
      groupSum,
      [dKShares, dVShares, args.dK, args.dV],
      uniforms(vec4s, group, headDim / 4, kvLen, numKvHeads, (b0 * kvLen * numKvHeads * headDim) / 4),
      workgroupsFor(vec4s),
    );
  }
  // Recorded: later users of these buffers are ordered after the dispatches that read them.
  for (const buffer of [qh, dOuth, dQh, kh, vh, dKShares, dVShares, scores, dScores])
    ctx.pool.release(buffer);
}
