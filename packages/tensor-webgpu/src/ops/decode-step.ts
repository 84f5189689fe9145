/**
 * A decoding step's attention straight from its fused q/k/v projection: rotary embedding of the new
 * token's query and key, the cache append, and attention over the cache. On a GPU a decoding step costs
 * what its dispatches cost, so a backend that can (Backend.decodeAttentionRoped) does all of it in one
 * kernel; otherwise ropeAppendPacked and decodeAttention run as they would be written, with the same
 * results.
 */
import { isGradEnabled } from "../autograd.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { type CacheAppend, type DecodeAttentionOptions, decodeAttention, ropeAppendPacked } from "./nn.js";
import { appendFits, backendOf, sharedFloatDtype } from "./util.js";

/**
 * qkv [batch, 1, numHeads + 2·numKvHeads, headDim] (each sequence's q heads, then k's, then v's): rope(q)
 * attends over the caches after rope(k) and v are written at slot `cache.at`, which must be
 * options.kvLen - 1. Returns [batch, 1, numHeads, headDim]. Not differentiable (generation).
 */
export function decodeAttentionPacked(
  qkv: Tensor,
  positions: Tensor,
  theta: number,
  cache: CacheAppend,
  options: DecodeAttentionOptions,
): Tensor {
  const { keys, values, at } = cache;
  const { numHeads, numKvHeads, kvLen } = options;
  const backend = backendOf("decodeAttentionPacked", qkv, positions, keys, values, options.kvStart);
  if (at !== kvLen - 1)
    throw new RangeError(
      `decodeAttentionPacked: the new token goes to slot kvLen - 1 (${kvLen - 1}), not ${at}`,
    );
  const [batch, seqLen, heads, headDim] = qkv.shape as [number, number, number, number];
  const fits =
    qkv.rank === 4 &&
    seqLen === 1 &&
    heads === numHeads + 2 * numKvHeads &&
    keys.rank === 4 &&
    keys.shape[2] === numKvHeads &&
    kvLen <= keys.shape[1]! &&
    appendFits(cache, positions, { batch, seqLen, headDim });
  const dtype = sharedFloatDtype([qkv, keys, values]);
  const recorded = isGradEnabled() && qkv.requiresGrad;
  if (fits && dtype && !recorded && backend.decodeAttentionRoped) {
    const out = emptyTensor(backend, [batch, 1, numHeads, headDim], dtype);
    const ran = backend.decodeAttentionRoped({
      q: qkv.buffer,
      kCache: keys.buffer,
      vCache: values.buffer,
      out: out.buffer,
      kvLen,
      capacity: keys.shape[1]!,
      kvStart: options.kvStart?.buffer,
      batch,
      numHeads,
      numKvHeads,
      headDim,
      scale: options.scale,
      positions: positions.buffer,
      theta,
      dtype,
    });
    if (ran) return out;
    out.dispose();
  }
  const rotated = ropeAppendPacked(qkv, positions, theta, cache, { numHeads, numKvHeads });
  try {
    return decodeAttention(rotated, keys, values, options);
  } finally {
    rotated.dispose();
  }
}
