/**
 * Sampling one token per row of logits [rows, vocab], in float64: the ground truth of the GPU kernel and
 * the semantics of `sampleToken` (models' sampling.ts) without top-k/top-p. With scale = 1/T (1 when
 * T = 0), the weights are exp((l_i - max) * scale); greedy takes the argmax (first of ties); otherwise
 * target = u * sum, the weights are subtracted in order and the first i where target < 0 is the token (the
 * argmax should rounding leave none). logProb = (l_token - max) * scale - log(sum): NaN for a row holding
 * NaN or +Infinity (its sum is NaN), finite with -Infinity entries, which weigh 0.
 */

/** Draws of 1 (a draw in [0, 1) rounded to f32) count as this, as on the GPU. */
const LARGEST_F32_BELOW_ONE = 1 - 2 ** -24;

export interface SampledRows {
  tokens: Int32Array;
  logProbs: Float64Array;
}

export function sampleRowsRef({
  logits,
  uniforms,
  rows,
  vocab,
  temperature,
}: {
  logits: ArrayLike<number>;
  uniforms: ArrayLike<number>;
  rows: number;
  vocab: number;
  temperature: number;
}): SampledRows {
  const tokens = new Int32Array(rows);
  const logProbs = new Float64Array(rows);
  const scale = temperature === 0 ? 1 : 1 / temperature;
  for (let r = 0; r < rows; r++) {
    const base = r * vocab;
    let max = Number.NEGATIVE_INFINITY;
    let argmax = 0;
    for (let i = 0; i < vocab; i++) {
      if (logits[base + i]! > max) {
        max = logits[base + i]!;
        argmax = i;
      }
    }
    const weight = (i: number) => Math.exp((logits[base + i]! - max) * scale);
    let sum = 0;
    for (let i = 0; i < vocab; i++) sum += weight(i);
    let token = argmax;
    if (temperature !== 0) {
      let target = Math.min(uniforms[r]!, LARGEST_F32_BELOW_ONE) * sum;
      for (let i = 0; i < vocab; i++) {
        target -= weight(i);
        if (target < 0) {
          token = i;
          break;
        }
      }
    }
    tokens[r] = token;
    logProbs[r] = (logits[base + token]! - max) * scale - Math.log(sum);
  }
  return { tokens, logProbs };
}
