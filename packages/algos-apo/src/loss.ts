import { type Metrics, maskedMean } from "@ragen/rl-core";
import { affine, mean, mul, noGrad, scale, square, sub, sum, type Tensor } from "@ragen/tensor-webgpu";

export interface ApoLossInputs {
  /** Current policy log-probs of the target tokens, [batch, seqLen] (requires grad). */
  logProbs: Tensor;
  /** Frozen reference log-probs of the same tokens, [batch, seqLen] (constants). */
  refLogProbs: Tensor;
  /** f32 [batch, seqLen], 1 on the tokens the policy sampled. */
  mask: Tensor;
  /** Trajectory rewards r(x, y), [batch]. */
  rewards: Tensor;
  /** V̂*(x) of each trajectory's start state, [batch]. */
  vstar: Tensor;
  /** Per-token policy entropy, [batch, seqLen], for the bonus. */
  entropy?: Tensor;
}

export interface ApoLossOptions {
  /** Weight of the log-ratio in the regression (the paper's beta2, 1e-3). */
  beta2?: number;
  /** Entropy bonus weight (0.001 in the official code). */
  entropyCoeff?: number;
}

export const APO_LOSS_DEFAULTS = {
  beta2: 1e-3,
  entropyCoeff: 0.001,
} as const satisfies Required<ApoLossOptions>;

export type ApoMetricName =
  | "actor/loss"
  | "actor/apo_loss"
  | "actor/log_ratio_sum"
  | "actor/kl"
  | "actor/residual"
  | "actor/entropy";

/**
 * A*-PO's least-squares policy loss: with l(x, y) = Σ over sampled tokens of (log π_θ − log π_ref),
 *   loss = mean over the batch of (beta2 · l(x, y) − (r(x, y) − V̂*(x)))²  −  entropyCoeff · entropy.
 * At the optimum beta2 · log(π/π_ref) matches the advantage against V*, which is the optimal
 * KL-regularised policy, so there is no separate KL term, ratio clipping or critic. Gradients reach
 * only `logProbs`. Call inside `scope()` so intermediates are freed; metrics are detached scalars.
 */
export function apoLoss(
  inputs: ApoLossInputs,
  options: ApoLossOptions = {},
): {
  loss: Tensor;
  metrics: Partial<Metrics<ApoMetricName>> & Metrics<Exclude<ApoMetricName, "actor/entropy">>;
} {
  const { beta2, entropyCoeff } = { ...APO_LOSS_DEFAULTS, ...options };
  if (!(Number.isFinite(beta2) && beta2 > 0))
    throw new RangeError(`apoLoss: beta2 must be > 0, got ${beta2}`);
  const { logProbs, refLogProbs, mask, rewards, vstar, entropy } = inputs;
  const logRatio = sub(logProbs, refLogProbs);
  // A sum, not a mean: the regression target is the log-ratio of the whole sampled response.
  const logRatioSum = sum(mul(logRatio, mask), -1);
  const target = sub(rewards, vstar);
  const residual = sub(scale(logRatioSum, beta2), target);
  const regression = mean(square(residual));
  let loss = regression;
  const entropyTerm = entropy ? maskedMean(entropy, mask) : undefined;
  if (entropyTerm && entropyCoeff !== 0) loss = sub(loss, scale(entropyTerm, entropyCoeff));
  const metrics = noGrad(() => ({
    "actor/loss": affine(loss, 1, 0),
    "actor/apo_loss": affine(regression, 1, 0),
    "actor/log_ratio_sum": mean(logRatioSum),
    "actor/kl": maskedMean(logRatio, mask),
    "actor/residual": mean(residual),
    ...(entropyTerm ? { "actor/entropy": affine(entropyTerm, 1, 0) } : {}),
  }));
  return { loss, metrics };
}
