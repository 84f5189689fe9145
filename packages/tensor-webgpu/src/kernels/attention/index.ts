/**
 * Fused causal attention with grouped-query heads: forward and backward over prefill/training shapes
 * (forward.ts, backward.ts, on the tiles of tiles.ts), and decode over a KV cache (decode.ts).
 *
 * Layouts (no transposes needed around the projections): q and out [batch, seqLen, numHeads, headDim];
 * k and v [batch, kvCapacity, numKvHeads, headDim] of which the first kvLen rows are used; lse
 * [batch, numHeads, seqLen]; dK and dV [batch, kvLen, numKvHeads, headDim]. Query head h reads KV head
 * h / (numHeads / numKvHeads) by indexing: K/V are never copied per query head. Masking rules and the
 * value of lse for a row that sees no key are those of ../../reference/attention.ts. Only the matmul forms
 * (matmul-form.ts, for GPUs, where tuning measures them faster) materialise the seqLen x kvLen score
 * matrices.
 */
export type { AttentionDims } from "../../core/attention.js";
export { type AttentionBackwardArgs, attentionBackward } from "./backward.js";
export { type DecodeAttentionArgs, type DecodeRope, decodeAttention, ropedDecodeFits } from "./decode.js";
export { type AttentionForwardArgs, attentionForward } from "./forward.js";
export { MAX_HEAD_DIM } from "./shared.js";
export { attentionTuning } from "./tiles.js";
