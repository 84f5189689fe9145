import type { KlPenaltyType } from "./losses.js";

/**
 * KL to the reference policy as a reward penalty (verl's use_kl_in_reward, apply_kl_penalty): every sampled
 * token's reward loses coefficient x KL(policy || reference) at that token, before advantages are computed,
 * and the coefficient follows a fixed or an adaptive controller.
 */

export type KlControllerType = "fixed" | "adaptive";
export const KL_CONTROLLERS = ["fixed", "adaptive"] as const satisfies readonly KlControllerType[];

/** The per-token estimators of klPenalty (losses.ts), on numbers: k1, |k1|, k1²/2 and k3 clamped to ±10. */
export function klEstimate(logProb: number, refLogProb: number, type: KlPenaltyType): number {
  const k1 = logProb - refLogProb;
  if (type === "kl") return k1;
  if (type === "abs") return Math.abs(k1);
  if (type === "mse") return 0.5 * k1 * k1;
  const refMinusPolicy = Math.min(20, Math.max(-20, -k1));
  return Math.min(10, Math.max(-10, Math.exp(refMinusPolicy) - refMinusPolicy - 1));
}

export interface KlRewardPenalty {
  /** Token rewards less coefficient x KL on the sampled tokens. */
  tokenRewards: Float32Array[];
  /** Mean over sequences of each sequence's mean KL over its sampled tokens (verl's current_kl). */
  meanKl: number;
}

/**
 * Subtracts `coefficient` x KL on every sampled token (mask 1); the arrays are aligned (targets). `logProbs`
 * are the sampler's: the policy the rewards were earned under.
 */
export function applyKlRewardPenalty(
  tokenRewards: readonly Float32Array[],
  masks: readonly ArrayLike<number>[],
  logProbs: readonly ArrayLike<number>[],
  refLogProbs: readonly ArrayLike<number>[],
  coefficient: number,
  type: KlPenaltyType,
): KlRewardPenalty {
  let klSum = 0;
  const penalised = tokenRewards.map((rewards, i) => {
    const mask = masks[i]!;
    const out = rewards.slice();
    let total = 0;
    let count = 0;
    for (let t = 0; t < out.length; t++) {
      if (!mask[t]) continue;
      const kl = klEstimate(logProbs[i]![t]!, refLogProbs[i]![t]!, type);
      out[t]! -= coefficient * kl;
      total += kl;
      count++;
    }
    klSum += count === 0 ? 0 : total / count;
    return out;
  });
  return { tokenRewards: penalised, meanKl: tokenRewards.length === 0 ? 0 : klSum / tokenRewards.length };
}

export interface KlControllerOptions {
  type: KlControllerType;
  initialCoeff: number;
  /** Adaptive: the KL the coefficient steers towards (verl: 0.1). */
  targetKl: number;
  /** Adaptive: how many trajectories a full proportional correction is spread over (verl: 10000). */
  horizon: number;
}

/** The largest proportional error one update acts on (verl's clip). */
const MAX_KL_ERROR = 0.2;

/**
 * verl's KL controllers. Fixed keeps its coefficient. Adaptive (Ziegler et al.'s) multiplies it after each
 * batch by 1 + e * n / horizon, e = clip(KL / target - 1, ±0.2), n the batch's trajectories: above the
 * target KL the penalty grows, below it shrinks.
 */
export class KlController {
  coefficient: number;

  constructor(readonly options: KlControllerOptions) {
    this.coefficient = options.initialCoeff;
  }

  update(currentKl: number, trajectories: number): void {
    if (this.options.type === "fixed") return;
    const error = Math.min(MAX_KL_ERROR, Math.max(-MAX_KL_ERROR, currentKl / this.options.targetKl - 1));
    this.coefficient *= 1 + (error * trajectories) / this.options.horizon;
  }
}
