/**
 * The shape of an attention problem, shared by the WGSL kernels (kernels/attention/), the CPU reference
 * (reference/attention.ts, which documents layouts and masking) and the backend interface.
 */

export interface AttentionDims {
  batch: number;
  seqLen: number;
  kvLen: number;
  /** Rows per sequence in the k and v buffers (>= kvLen); default kvLen. */
  kvCapacity?: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Mask keys after each query's own position; default true. */
  causal?: boolean;
  /** Multiplies Q·Kᵀ; default 1/sqrt(headDim). */
  scale?: number;
  /**
   * Elements of q, k, v, the output and their gradients (default f32). f16 is read and written as halves
   * by the kernels, which compute in f32; lse and the backward's row statistics stay f32.
   */
  dtype?: "f32" | "f16";
}

/**
 * The lse written for a query row that sees no key (only possible with kvStart): log(0) would be -inf,
 * which turns into NaN in the arithmetic of whoever reads it; this finite stand-in does not.
 */
export const EMPTY_ROW_LSE = -1e30;

/** Validate dimensions; throws a RangeError naming what is wrong. */
export function checkAttentionDims(dims: AttentionDims): void {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = dims;
  const capacity = dims.kvCapacity ?? kvLen;
  for (const [name, value] of Object.entries({ batch, seqLen, kvLen, numHeads, numKvHeads, headDim })) {
    if (!Number.isInteger(value) || value < 1) {
      throw new RangeError(`attention: ${name} must be a positive integer, got ${value}`);
    }
  }
  if (!Number.isInteger(capacity) || capacity < kvLen) {
    throw new RangeError(`attention: kvCapacity (${capacity}) must be an integer >= kvLen (${kvLen})`);
  }
  if (numHeads % numKvHeads !== 0) {
    throw new RangeError(
      `attention: numHeads (${numHeads}) must be a multiple of numKvHeads (${numKvHeads})`,
    );
  }
  if ((dims.causal ?? true) && seqLen > kvLen) {
    throw new RangeError(`attention: causal attention needs seqLen (${seqLen}) <= kvLen (${kvLen})`);
  }
}
