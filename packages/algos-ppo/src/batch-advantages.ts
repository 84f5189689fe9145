import {
  type AdvantageResult,
  biLevelGaeAdvantages,
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rlooAdvantages,
  type TokenBatch,
  whitenMasked,
  whitenMaskedByKey,
} from "./advantages.js";

/**
 * The advantages of one StarPO batch: the configured estimator, the whitening of the critic-based ones,
 * and the scaling a filter's loss scaling asks for.
 */

/** gae and bi_level_gae use the critic; grpo, rloo and reinforce_plus_plus only the rewards. */
export type AdvantageEstimator = "gae" | "grpo" | "rloo" | "reinforce_plus_plus" | "bi_level_gae";
export const ADVANTAGE_ESTIMATORS = [
  "gae",
  "grpo",
  "rloo",
  "reinforce_plus_plus",
  "bi_level_gae",
] as const satisfies readonly AdvantageEstimator[];

export function usesCritic(estimator: AdvantageEstimator): boolean {
  return estimator === "gae" || estimator === "bi_level_gae";
}

export interface BatchAdvantageOptions {
  estimator: AdvantageEstimator;
  gamma: number;
  lambda: number;
  highLevelGamma: number;
  /** GRPO only: divide by the group's std (false: Dr. GRPO). */
  normAdvByStd: boolean;
  /** Critic-based estimators: whiten within each env (tags) rather than over the batch. */
  whitenPerEnv: boolean;
  whitenScale: "env" | "batch" | "none";
}

/** Per-trajectory group ids and env tags, as the estimators and the per-env whitening group by them. */
export interface BatchKeys {
  groupIds: readonly number[];
  tags: readonly string[];
}

/**
 * The batch's advantages. The critic-based estimators are whitened over every sampled token of the batch
 * (verl's masked_whiten; RAGEN's bi-level GAE does the same), or per env with whitenPerEnv; GRPO and RLOO
 * compare trajectories within their group; REINFORCE++ whitens its returns-to-go over the batch itself.
 */
export function batchAdvantages(
  batch: TokenBatch,
  values: readonly Float32Array[] | undefined,
  keys: BatchKeys,
  options: BatchAdvantageOptions,
): AdvantageResult {
  const { estimator } = options;
  if (usesCritic(estimator)) {
    if (!values) throw new Error(`advantage estimator ${estimator} needs the critic's values`);
    const raw =
      estimator === "gae"
        ? gaeAdvantages(batch, values, options)
        : biLevelGaeAdvantages(batch, values, options);
    const advantages = options.whitenPerEnv
      ? whitenMaskedByKey(raw.advantages, batch.masks, keys.tags, {
          scale: options.whitenScale === "env" ? "key" : options.whitenScale,
        })
      : whitenMasked(raw.advantages, batch.masks);
    return { advantages, returns: raw.returns };
  }
  if (estimator === "grpo")
    return grpoAdvantages(batch, keys.groupIds, { normalizeByStd: options.normAdvByStd });
  if (estimator === "rloo") return rlooAdvantages(batch, keys.groupIds);
  return reinforcePlusPlusAdvantages(batch, { gamma: options.gamma });
}

/**
 * RAGEN-2's filter_loss_scaling: after an aggressive filter the update learns from a few groups, so the
 * policy-gradient term is scaled by the share of groups kept (linear) or its square root (sqrt).
 */
export type FilterLossScaling = "none" | "linear" | "sqrt";
export const FILTER_LOSS_SCALINGS = [
  "none",
  "linear",
  "sqrt",
] as const satisfies readonly FilterLossScaling[];

export function filterLossScale(scaling: FilterLossScaling, keptShare: number): number {
  if (scaling === "linear") return keptShare;
  if (scaling === "sqrt") return Math.sqrt(keptShare);
  return 1;
}

/** Advantages times `factor` (as RAGEN-2 applies its loss scaling: the PPO loss is linear in them). */
export function scaleAdvantages(advantages: readonly Float32Array[], factor: number): Float32Array[] {
  return advantages.map((row) => (factor === 1 ? row : row.map((a) => a * factor)));
}
