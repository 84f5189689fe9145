// Shared with the other algorithm; re-exported so a settings schema can take both packages' bounds from either.
export { boundsProblem, type NumberBounds } from "@ragen/rl-core";
export {
  type AdvantageResult,
  type GaeOptions,
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rlooAdvantages,
  type TokenBatch,
  trajectoryScores,
  WHITEN_EPS,
  whitenMasked,
  whitenMaskedByKey,
} from "./advantages.js";
export {
  filterByUncertainty,
  type UncertaintyFilterOptions,
  type UncertaintyFilterResult,
} from "./filter.js";
export {
  ACTOR_LOSS_DEFAULTS,
  type ActorLossInputs,
  type ActorLossOptions,
  type ActorMetricName,
  actorLoss,
  aggregateLoss,
  type KlPenaltyType,
  klPenalty,
  type LossAggregation,
  POLICY_LOSS_DEFAULTS,
  type PolicyLossInputs,
  type PolicyLossOptions,
  type PolicyMetricName,
  ppoPolicyLoss,
  type ValueLossInputs,
  type ValueMetricName,
  valueLoss,
} from "./losses.js";
export {
  ASYM_CLIP_HIGH,
  ASYM_CLIP_LOW,
  NORMALIZATION_PRESETS,
  type NormalizationGrouping,
  type NormalizationKeys,
  type NormalizationMethod,
  type NormalizationPreset,
  normalizeRewards,
  type RewardNormalization,
} from "./normalize.js";
export {
  type AdvantageEstimator,
  type ResolvedStarPOConfig,
  STARPO_BOUNDS,
  STARPO_DEFAULTS,
  StarPO,
  type StarPOConfig,
  type StarPOMetrics,
  type StarPOModels,
  warmupFactor,
} from "./starpo.js";
export { STD_EPS } from "./stats.js";
