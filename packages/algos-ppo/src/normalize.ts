import { groupIndices, meanOf, STD_EPS, sampleStd } from "./stats.js";

/**
 * Which trajectories share statistics: "state" = one env group (same seed, same start state),
 * "batch" = the whole batch, "inductive" = every trajectory of one env tag.
 */
export type NormalizationGrouping = "state" | "batch" | "inductive";

/** "asym_clip" is the mean_std z-score clamped to [-1, 3]: failures are bounded, rare successes keep weight. */
export type NormalizationMethod = "identity" | "mean_std" | "mean" | "asym_clip";

export interface RewardNormalization {
  grouping: NormalizationGrouping;
  method: NormalizationMethod;
}

/** RAGEN's named settings: ARPO trains on raw rewards, BRPO normalises over the batch, GRPO per group. */
export const NORMALIZATION_PRESETS = {
  ARPO: { grouping: "batch", method: "identity" },
  BRPO: { grouping: "batch", method: "mean_std" },
  GRPO: { grouping: "state", method: "mean_std" },
} as const satisfies Record<string, RewardNormalization>;

export type NormalizationPreset = keyof typeof NORMALIZATION_PRESETS;

export const ASYM_CLIP_LOW = -1;
export const ASYM_CLIP_HIGH = 3;

/** What each trajectory is grouped by; only the key the grouping needs must be given. */
export interface NormalizationKeys {
  /** Env group per trajectory (grouping "state"). */
  groupIds?: ArrayLike<number>;
  /** Env tag per trajectory (grouping "inductive"). */
  tags?: readonly string[];
}

/**
 * Normalises one reward per trajectory before advantages are computed.
 *
 * Edge cases, chosen explicitly: a set of one trajectory has no peers to compare with, so it keeps its
 * raw reward (verl's GRPO does the same: mean 0, std 1 for a singleton); a set whose rewards are all
 * equal (std below 1e-6) carries no learning signal, so every method but identity gives it 0s rather
 * than dividing rounding noise by eps.
 */
export function normalizeRewards(
  rewards: ArrayLike<number>,
  keys: NormalizationKeys,
  normalization: RewardNormalization | NormalizationPreset,
): Float32Array {
  const { grouping, method } =
    typeof normalization === "string" ? NORMALIZATION_PRESETS[normalization] : normalization;
  const out = Float32Array.from(rewards);
  if (method === "identity") return out;
  for (const members of groupsFor(rewards.length, keys, grouping).values()) {
    const values = members.map((i) => rewards[i]!);
    if (values.length === 1) continue;
    const mean = meanOf(values);
    const std = sampleStd(values);
    for (const i of members) out[i] = normalizeOne(rewards[i]!, mean, std, method);
  }
  return out;
}

function normalizeOne(reward: number, mean: number, std: number, method: NormalizationMethod): number {
  if (method === "identity") return reward;
  if (std < STD_EPS) return 0;
  if (method === "mean") return reward - mean;
  const z = (reward - mean) / (std + STD_EPS);
  return method === "asym_clip" ? Math.min(ASYM_CLIP_HIGH, Math.max(ASYM_CLIP_LOW, z)) : z;
}

function groupsFor(
  count: number,
  keys: NormalizationKeys,
  grouping: NormalizationGrouping,
): Map<number | string, number[]> {
  if (grouping === "batch") return new Map([[0, Array.from({ length: count }, (_, i) => i)]]);
  const key = grouping === "state" ? keys.groupIds : keys.tags;
  if (!key) {
    throw new Error(
      `normalizeRewards: grouping "${grouping}" needs ${grouping === "state" ? "groupIds" : "tags"}`,
    );
  }
  if (key.length !== count) {
    throw new RangeError(`normalizeRewards: ${count} rewards but ${key.length} ${grouping} keys`);
  }
  return groupIndices<number | string>(key);
}

/** The groupings and methods, for schemas and option checks. */
export const NORMALIZATION_GROUPINGS = [
  "state",
  "batch",
  "inductive",
] as const satisfies readonly NormalizationGrouping[];
export const NORMALIZATION_METHODS = [
  "identity",
  "mean_std",
  "mean",
  "asym_clip",
] as const satisfies readonly NormalizationMethod[];

/**
 * Per-token rewards with each sequence's score (the sum of its token rewards) normalised by
 * normalizeRewards: the difference is added on the sequence's last sampled token, so a trajectory whose
 * reward sits on its last token (the rollout's default) carries the normalised score there, and one with
 * rewards on every turn keeps their shape with its total moved to the normalised score. A sequence
 * without a sampled token has no token to carry it and keeps its rewards.
 */
export function normalizeTokenRewards(
  tokenRewards: readonly Float32Array[],
  masks: readonly ArrayLike<number>[],
  keys: NormalizationKeys,
  normalization: RewardNormalization | NormalizationPreset,
): Float32Array[] {
  const scores = tokenRewards.map((rewards) => rewards.reduce((a, b) => a + b, 0));
  const normalized = normalizeRewards(scores, keys, normalization);
  return tokenRewards.map((rewards, i) => {
    const out = rewards.slice();
    const mask = masks[i]!;
    let last = mask.length - 1;
    while (last >= 0 && !mask[last]) last--;
    if (last >= 0) out[last]! += normalized[i]! - scores[i]!;
    return out;
  });
}
