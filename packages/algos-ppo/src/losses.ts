import { type Metrics, maskedMean } from "@ragen/rl-core";
import {
  abs,
  add,
  affine,
  clamp,
  div,
  exp,
  greater,
  less,
  maximum,
  mean,
  minimum,
  mul,
  noGrad,
  scale,
  square,
  sub,
  sum,
  type Tensor,
  where,
} from "@ragen/tensor-webgpu";

/**
 * PPO losses on [batch, tokens] tensors. `mask` is f32 with 1 on sampled tokens. Each loss returns the
 * tensor to differentiate plus RAGEN's metrics as detached scalar tensors (read them with readMetrics
 * from @ragen/rl-core). Intermediates are not disposed here: call these inside `scope()` from
 * @ragen/tensor-webgpu.
 */

/** token-mean: every sampled token weighs the same; the seq-mean-* forms weigh every sequence the same. */
export type LossAggregation = "token-mean" | "seq-mean-token-sum" | "seq-mean-token-mean";

/** Reduces per-token values over the mask to one scalar (an empty sequence counts as having one token). */
export function aggregateLoss(
  values: Tensor,
  mask: Tensor,
  aggregation: LossAggregation = "token-mean",
): Tensor {
  if (aggregation === "token-mean") return maskedMean(values, mask);
  const perSequence = sum(mul(values, mask), -1);
  if (aggregation === "seq-mean-token-sum") return mean(perSequence);
  return mean(div(perSequence, maximum(sum(mask, -1), 1)));
}

export interface PolicyLossInputs {
  /** Current policy log-probs of the sampled tokens (requires grad). */
  logProbs: Tensor;
  /** Log-probs at sampling time. */
  oldLogProbs: Tensor;
  advantages: Tensor;
  mask: Tensor;
  /**
   * Detached per-token weights on the surrogate (none: 1): the truncated importance weight
   * min(pi_old / mu, C) when another engine sampled with log-probs mu, so the update corrects for the
   * difference between the sampler and the trainer's own old policy pi_old.
   */
  importanceWeights?: Tensor;
}

export interface PolicyLossOptions {
  /** Ratio floor 1 - low (default 0.2). */
  clipRatioLow?: number;
  /** Ratio ceiling 1 + high (default 0.28: clip-higher leaves room for rare tokens to grow). */
  clipRatioHigh?: number;
  /** Dual clip c (default 3): with A < 0 the loss is capped at -A * c so a huge ratio cannot blow up. */
  dualClip?: number;
  aggregation?: LossAggregation;
}

export const POLICY_LOSS_DEFAULTS = {
  clipRatioLow: 0.2,
  clipRatioHigh: 0.28,
  dualClip: 3,
  aggregation: "token-mean",
} as const satisfies Required<PolicyLossOptions>;

/** Beyond this a log-ratio only overflows exp; verl clamps at the same place. */
const MAX_LOG_RATIO = 20;

export type PolicyMetricName =
  | "actor/pg_loss"
  | "actor/pg_clipfrac"
  | "actor/pg_clipfrac_lower"
  | "actor/ppo_kl";

/** PPO clipped surrogate with clip-higher and dual clip, per token, then aggregated. */
export function ppoPolicyLoss(
  inputs: PolicyLossInputs,
  options: PolicyLossOptions = {},
): { loss: Tensor; metrics: Metrics<PolicyMetricName> } {
  const { clipRatioLow, clipRatioHigh, dualClip, aggregation } = { ...POLICY_LOSS_DEFAULTS, ...options };
  if (!(dualClip > 1)) throw new RangeError(`ppoPolicyLoss: dualClip must be > 1, got ${dualClip}`);
  const { logProbs, oldLogProbs, advantages, mask } = inputs;
  const logRatio = clamp(sub(logProbs, oldLogProbs), -MAX_LOG_RATIO, MAX_LOG_RATIO);
  const ratio = exp(logRatio);
  const negAdvantages = scale(advantages, -1);
  const unclipped = mul(negAdvantages, ratio);
  const clipped = mul(negAdvantages, clamp(ratio, 1 - clipRatioLow, 1 + clipRatioHigh));
  const pessimistic = maximum(unclipped, clipped);
  const dualBound = scale(negAdvantages, dualClip);
  const negative = less(advantages, 0);
  const clippedPerToken = where(negative, minimum(pessimistic, dualBound), pessimistic);
  // The weight scales the whole clipped term, so the clip still acts on the trainer's own ratio.
  const perToken = inputs.importanceWeights
    ? mul(clippedPerToken, inputs.importanceWeights)
    : clippedPerToken;
  const loss = aggregateLoss(perToken, mask, aggregation);
  const metrics = noGrad(() => ({
    "actor/pg_loss": affine(loss, 1, 0),
    "actor/pg_clipfrac": maskedMean(greater(clipped, unclipped), mask),
    "actor/pg_clipfrac_lower": maskedMean(mul(greater(pessimistic, dualBound), negative), mask),
    "actor/ppo_kl": maskedMean(scale(logRatio, -1), mask),
  }));
  return { loss, metrics };
}

/** k1 ("kl"), |k1| ("abs"), k1²/2 ("mse") and k3 ("low_var_kl": unbiased, always >= 0, clamped to ±10). */
export type KlPenaltyType = "kl" | "abs" | "mse" | "low_var_kl";

const LOW_VAR_KL_BOUND = 10;

/** Per-token KL estimate between the policy and the frozen reference, from sampled-token log-probs. */
export function klPenalty(logProbs: Tensor, refLogProbs: Tensor, type: KlPenaltyType): Tensor {
  if (type === "kl") return sub(logProbs, refLogProbs);
  if (type === "abs") return abs(sub(logProbs, refLogProbs));
  if (type === "mse") return scale(square(sub(logProbs, refLogProbs)), 0.5);
  // k3 = exp(ref - logp) - (ref - logp) - 1; clamping the log-ratio first keeps exp finite.
  const refMinusPolicy = clamp(sub(refLogProbs, logProbs), -MAX_LOG_RATIO, MAX_LOG_RATIO);
  const k3 = affine(sub(exp(refMinusPolicy), refMinusPolicy), 1, -1);
  return clamp(k3, -LOW_VAR_KL_BOUND, LOW_VAR_KL_BOUND);
}

export interface ActorLossInputs extends PolicyLossInputs {
  /** Per-token entropy of the policy (e.g. `entropy(logits)`), for the bonus. */
  entropy?: Tensor;
  /** Reference-policy log-probs, for the KL loss term. */
  refLogProbs?: Tensor;
}

export interface ActorLossOptions extends PolicyLossOptions {
  /** Entropy bonus weight (RAGEN: 0.001). */
  entropyCoeff?: number;
  /** KL loss weight; 0 in StarPO-S, which removes the KL term. */
  klCoeff?: number;
  klType?: KlPenaltyType;
}

export const ACTOR_LOSS_DEFAULTS = { entropyCoeff: 0.001, klCoeff: 0, klType: "low_var_kl" } as const;

export type ActorMetricName = PolicyMetricName | "actor/entropy" | "actor/kl_loss";

/** loss = pg_loss - entropyCoeff * entropy + klCoeff * kl_loss, each aggregated the same way. */
export function actorLoss(
  inputs: ActorLossInputs,
  options: ActorLossOptions = {},
): { loss: Tensor; metrics: Partial<Metrics<ActorMetricName>> & Metrics<PolicyMetricName> } {
  const { entropyCoeff, klCoeff, klType } = { ...ACTOR_LOSS_DEFAULTS, ...options };
  const aggregation = options.aggregation ?? POLICY_LOSS_DEFAULTS.aggregation;
  const policy = ppoPolicyLoss(inputs, options);
  const metrics: Partial<Metrics<ActorMetricName>> & Metrics<PolicyMetricName> = { ...policy.metrics };
  let loss = policy.loss;
  if (inputs.entropy) {
    const entropyTerm = aggregateLoss(inputs.entropy, inputs.mask, aggregation);
    if (entropyCoeff !== 0) loss = sub(loss, scale(entropyTerm, entropyCoeff));
    metrics["actor/entropy"] = noGrad(() => affine(entropyTerm, 1, 0));
  }
  if (inputs.refLogProbs) {
    const klTerm = aggregateLoss(
      klPenalty(inputs.logProbs, inputs.refLogProbs, klType),
      inputs.mask,
      aggregation,
    );
    if (klCoeff !== 0) loss = sub(loss, scale(klTerm, -klCoeff));
    metrics["actor/kl_loss"] = noGrad(() => affine(klTerm, 1, 0));
  }
  return { loss, metrics };
}

export interface ValueLossInputs {
  /** Current critic predictions (requires grad). */
  values: Tensor;
  /** Predictions at rollout time. */
  oldValues: Tensor;
  returns: Tensor;
  mask: Tensor;
}

export type ValueMetricName = "critic/vf_loss" | "critic/vf_clipfrac" | "critic/vpred_mean";

/**
 * 0.5 * max((v - R)², (v_clip - R)²) with v_clip = v_old + clamp(v - v_old, ±clipRange): the critic
 * cannot profit from moving further than clipRange (default 0.5) from its rollout-time prediction.
 */
export function valueLoss(
  inputs: ValueLossInputs,
  options: { clipRange?: number; aggregation?: LossAggregation } = {},
): { loss: Tensor; metrics: Metrics<ValueMetricName> } {
  const clipRange = options.clipRange ?? 0.5;
  const { values, oldValues, returns, mask } = inputs;
  const clippedValues = add(oldValues, clamp(sub(values, oldValues), -clipRange, clipRange));
  const unclippedError = square(sub(values, returns));
  const clippedError = square(sub(clippedValues, returns));
  const loss = scale(aggregateLoss(maximum(unclippedError, clippedError), mask, options.aggregation), 0.5);
  const metrics = noGrad(() => ({
    "critic/vf_loss": affine(loss, 1, 0),
    "critic/vf_clipfrac": maskedMean(greater(clippedError, unclippedError), mask),
    "critic/vpred_mean": maskedMean(values, mask),
  }));
  return { loss, metrics };
}
