/** The paper's temperature of the soft maximum over reference samples. */
export const DEFAULT_BETA1 = 0.5;

/**
 * V̂*(x) = beta1 · (logsumexp(r_i / beta1) − log N): a soft maximum of the N reference rewards, between
 * their mean (beta1 → ∞) and their maximum (beta1 → 0). beta1 = 0 is taken as the plain mean, the
 * estimate A*-PO falls back to when the optimal policy should stay at the reference.
 */
export function estimateVStar(rewards: readonly number[], beta1: number = DEFAULT_BETA1): number {
  if (rewards.length === 0) throw new RangeError("estimateVStar: no rewards to estimate V* from");
  if (!(Number.isFinite(beta1) && beta1 >= 0))
    throw new RangeError(`estimateVStar: beta1 must be a finite number >= 0, got ${beta1}`);
  for (const [i, r] of rewards.entries()) {
    if (!Number.isFinite(r)) throw new RangeError(`estimateVStar: reward ${i} is not finite (${r})`);
  }
  const n = rewards.length;
  if (beta1 === 0) return rewards.reduce((a, b) => a + b, 0) / n;
  // Shifting by the largest exponent keeps exp() in range for any reward scale.
  const scaled = rewards.map((r) => r / beta1);
  const top = Math.max(...scaled);
  let total = 0;
  for (const s of scaled) total += Math.exp(s - top);
  return beta1 * (top + Math.log(total) - Math.log(n));
}

/** What stage 1 learns about one start state from its N reference samples. */
export interface VStarSummary {
  /** The N trajectory rewards, in sampling order. */
  rewards: number[];
  vstar: number;
  /** Some sample succeeded: this state counts towards the reference's pass@N. */
  pass: boolean;
  /** No sample scored above 0, so the regression target r − V̂* carries no signal towards success. */
  allZero: boolean;
}

export function summarizeSamples(
  rewards: readonly number[],
  successes: readonly boolean[],
  beta1: number = DEFAULT_BETA1,
): VStarSummary {
  if (successes.length !== rewards.length)
    throw new RangeError(`summarizeSamples: ${rewards.length} rewards but ${successes.length} success flags`);
  return {
    rewards: [...rewards],
    vstar: estimateVStar(rewards, beta1),
    pass: successes.some(Boolean),
    allZero: rewards.every((r) => r <= 0),
  };
}
