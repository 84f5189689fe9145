/**
 * Reference (CPU) attention: the naive softmax(Q·Kᵀ·scale + mask)·V per head, computed in float64 and
 * written for clarity. Same layouts and masking as the WGSL kernels in ../kernels/attention/:
 *
 * - q, out: [batch, seqLen, numHeads, headDim]; k, v: [batch, kvCapacity, numKvHeads, headDim], of which
 *   the first kvLen positions are used; lse: [batch, numHeads, seqLen].
 * - Query head h reads KV head floor(h / (numHeads / numKvHeads)) (grouped-query attention).
 * - Query i sits at absolute position i + (kvLen - seqLen). Key j is visible iff j < kvLen,
 *   j >= kvStart[b] (when kvStart is given) and, when causal, j <= i + (kvLen - seqLen).
 * - A query row with no visible key outputs zeros, has lse = EMPTY_ROW_LSE and gets zero gradients.
 */
import { type AttentionDims, checkAttentionDims, EMPTY_ROW_LSE } from "../core/attention.js";

export interface AttentionRefInputs extends AttentionDims {
  q: ArrayLike<number>;
  k: ArrayLike<number>;
  v: ArrayLike<number>;
  /** Per sequence, the first visible key position (left padding); [batch]. */
  kvStart?: ArrayLike<number>;
}

export interface DecodeAttentionRefInputs {
  /** [batch, numHeads, headDim]: one new token per sequence. */
  q: ArrayLike<number>;
  /** [batch, capacity, numKvHeads, headDim]. */
  kCache: ArrayLike<number>;
  vCache: ArrayLike<number>;
  /** Positions 0..kvLen-1 are valid; the new token's own K/V sit at kvLen - 1. */
  kvLen: number;
  capacity: number;
  kvStart?: ArrayLike<number>;
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  scale?: number;
}

/** Is key `key` visible to query row `row` of sequence `b`? */
function visible(
  dims: AttentionDims,
  kvStart: ArrayLike<number> | undefined,
  b: number,
  row: number,
  key: number,
) {
  if (key >= dims.kvLen) return false;
  if (kvStart && key < kvStart[b]!) return false;
  if ((dims.causal ?? true) && key > row + (dims.kvLen - dims.seqLen)) return false;
  return true;
}

interface ForwardF64 {
  out: Float64Array;
  lse: Float64Array;
  /** Softmax probabilities per (b, h, row), over kvLen keys: [batch, numHeads, seqLen, kvLen]. */
  probs: Float64Array;
}

function forwardF64(args: AttentionRefInputs): ForwardF64 {
  checkAttentionDims(args);
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim, q, k, v, kvStart } = args;
  const capacity = args.kvCapacity ?? kvLen;
  const scale = args.scale ?? 1 / Math.sqrt(headDim);
  const group = numHeads / numKvHeads;
  const out = new Float64Array(batch * seqLen * numHeads * headDim);
  const lse = new Float64Array(batch * numHeads * seqLen);
  const probs = new Float64Array(batch * numHeads * seqLen * kvLen);
  const scores = new Float64Array(kvLen);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < numHeads; h++) {
      const kvHead = Math.floor(h / group);
      for (let i = 0; i < seqLen; i++) {
        const qBase = ((b * seqLen + i) * numHeads + h) * headDim;
        let max = -Infinity;
        for (let j = 0; j < kvLen; j++) {
          if (!visible(args, kvStart, b, i, j)) continue;
          const kBase = ((b * capacity + j) * numKvHeads + kvHead) * headDim;
          let dot = 0;
          for (let c = 0; c < headDim; c++) dot += q[qBase + c]! * k[kBase + c]!;
          scores[j] = dot * scale;
          max = Math.max(max, scores[j]!);
        }
        const statRow = (b * numHeads + h) * seqLen + i;
        if (max === -Infinity) {
          lse[statRow] = EMPTY_ROW_LSE; // no visible key: zeros out, zero probabilities
          continue;
        }
        let sum = 0;
        for (let j = 0; j < kvLen; j++)
          if (visible(args, kvStart, b, i, j)) sum += Math.exp(scores[j]! - max);
        lse[statRow] = max + Math.log(sum);
        for (let j = 0; j < kvLen; j++) {
          if (!visible(args, kvStart, b, i, j)) continue;
          const p = Math.exp(scores[j]! - max) / sum;
          probs[statRow * kvLen + j] = p;
          const vBase = ((b * capacity + j) * numKvHeads + kvHead) * headDim;
          for (let c = 0; c < headDim; c++) out[qBase + c]! += p * v[vBase + c]!;
        }
      }
    }
  }
  return { out, lse, probs };
}

/** Forward attention in float64 (for finite-difference checks). */
export function attentionForwardRefF64(args: AttentionRefInputs): { out: Float64Array; lse: Float64Array } {
  const { out, lse } = forwardF64(args);
  return { out, lse };
}

/** Forward attention: out [batch, seqLen, numHeads, headDim] and lse [batch, numHeads, seqLen]. */
export function attentionForwardRef(args: AttentionRefInputs): { out: Float32Array; lse: Float32Array } {
  const { out, lse } = forwardF64(args);
  return { out: Float32Array.from(out), lse: Float32Array.from(lse) };
}

/**
 * Gradients of attention with respect to q, k and v given dOut (like out). dQ is like q; dK and dV are
 * [batch, kvLen, numKvHeads, headDim] (kvLen rows, not kvCapacity), summed over each KV head's group of
 * query heads.
 */
export function attentionBackwardRef(args: AttentionRefInputs & { dOut: ArrayLike<number> }): {
  dQ: Float32Array;
  dK: Float32Array;
  dV: Float32Array;
} {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim, q, k, v, dOut } = args;
  const capacity = args.kvCapacity ?? kvLen;
  const scale = args.scale ?? 1 / Math.sqrt(headDim);
  const group = numHeads / numKvHeads;
  const { probs } = forwardF64(args);
  const dQ = new Float64Array(batch * seqLen * numHeads * headDim);
  const dK = new Float64Array(batch * kvLen * numKvHeads * headDim);
  const dV = new Float64Array(batch * kvLen * numKvHeads * headDim);
  const dP = new Float64Array(kvLen);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < numHeads; h++) {
      const kvHead = Math.floor(h / group);
      for (let i = 0; i < seqLen; i++) {
        const qBase = ((b * seqLen + i) * numHeads + h) * headDim;
        const pBase = ((b * numHeads + h) * seqLen + i) * kvLen;
        // dP[j] = dOut_i · v_j; the softmax Jacobian gives dS[j] = P[j] * (dP[j] - Σ_j' P[j'] dP[j']).
        let weighted = 0;
        for (let j = 0; j < kvLen; j++) {
          const vBase = ((b * capacity + j) * numKvHeads + kvHead) * headDim;
          let dot = 0;
          for (let c = 0; c < headDim; c++) dot += dOut[qBase + c]! * v[vBase + c]!;
          dP[j] = dot;
          weighted += probs[pBase + j]! * dot;
        }
        for (let j = 0; j < kvLen; j++) {
          const p = probs[pBase + j]!;
          if (p === 0) continue;
          const dScore = p * (dP[j]! - weighted) * scale;
          const kBase = ((b * capacity + j) * numKvHeads + kvHead) * headDim;
          const gradBase = ((b * kvLen + j) * numKvHeads + kvHead) * headDim;
          for (let c = 0; c < headDim; c++) {
            dQ[qBase + c]! += dScore * k[kBase + c]!;
            dK[gradBase + c]! += dScore * q[qBase + c]!;
            dV[gradBase + c]! += p * dOut[qBase + c]!;
          }
        }
      }
    }
  }
  return { dQ: Float32Array.from(dQ), dK: Float32Array.from(dK), dV: Float32Array.from(dV) };
}

/**
 * Attention of one new token per sequence over a KV cache: the forward reference with seqLen 1 and
 * kvCapacity = capacity (the token at position kvLen - 1 sees every valid position). Returns
 * [batch, numHeads, headDim].
 */
export function decodeAttentionRef(args: DecodeAttentionRefInputs): Float32Array {
  return attentionForwardRef({
    batch: args.batch,
    seqLen: 1,
    kvLen: args.kvLen,
    kvCapacity: args.capacity,
    numHeads: args.numHeads,
    numKvHeads: args.numKvHeads,
    headDim: args.headDim,
    scale: args.scale,
    q: args.q,
    k: args.kCache,
    v: args.vCache,
    kvStart: args.kvStart,
  }).out;
}
