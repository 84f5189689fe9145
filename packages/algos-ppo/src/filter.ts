import { groupIndices, meanOf, sampleStd } from "./stats.js";

export interface UncertaintyFilterOptions {
  /** Fraction of groups kept (RAGEN: 0.25); at least one group is always kept. */
  rolloutFilterRatio?: number;
  /** "highest" keeps the most uncertain groups (StarPO-S); "lowest" the most certain. */
  keep?: "highest" | "lowest";
  /**
   * A key per trajectory (its env tag) under which the ratio applies separately: each key keeps its own
   * share of its groups, at least one. Without it the ranking is over the whole batch, as in RAGEN.
   */
  quotaKeys?: ArrayLike<string>;
}

export interface UncertaintyFilterResult {
  /** Indices of the kept trajectories, ascending. */
  keptIndices: number[];
  /** Kept group ids, most preferred first. */
  keptGroups: number[];
  metrics: Record<
    | "rollout/in_group_std"
    | "rollout/in_group_max"
    | "rollout/in_group_mean"
    | "rollout/chosen_in_group_std"
    | "rollout/chosen_in_group_max"
    | "rollout/chosen_in_group_mean",
    number
  >;
}

/**
 * StarPO-S uncertainty filtering: a group whose trajectories all score alike teaches nothing, so rank
 * groups by U = sample std of their trajectory rewards (format penalties included, before any
 * normalisation: the rewards given are Trajectory.reward, which counts them) and keep
 * floor(ratio * groups) of them, at least one. Equal U keeps the group that appears first in the batch,
 * so the choice is deterministic. With `quotaKeys` each key (env) keeps its own share, so no env's
 * groups can crowd another's out of the batch. Metrics are means over groups of each group's std, max and mean.
 */
export function filterByUncertainty(
  rewards: ArrayLike<number>,
  groupIds: ArrayLike<number>,
  options: UncertaintyFilterOptions = {},
): UncertaintyFilterResult {
  const ratio = options.rolloutFilterRatio ?? 0.25;
  if (!(ratio > 0 && ratio <= 1)) throw new RangeError(`rolloutFilterRatio must be in (0, 1], got ${ratio}`);
  if (rewards.length !== groupIds.length) {
    throw new RangeError(`filterByUncertainty: ${rewards.length} rewards but ${groupIds.length} group ids`);
  }
  if (options.quotaKeys && options.quotaKeys.length !== rewards.length) {
    throw new RangeError(
      `filterByUncertainty: ${rewards.length} rewards but ${options.quotaKeys.length} quota keys`,
    );
  }
  const groups = [...groupIndices(groupIds)].map(([id, members], order) => {
    const values = members.map((i) => rewards[i]!);
    const quotaKey = options.quotaKeys ? options.quotaKeys[members[0]!]! : "";
    return { id, order, members, quotaKey, std: sampleStd(values), max: maxOf(values), mean: meanOf(values) };
  });
  if (groups.length === 0) throw new RangeError("filterByUncertainty: empty batch");
  const direction = options.keep === "lowest" ? 1 : -1;
  const preferred = (a: (typeof groups)[number], b: (typeof groups)[number]) =>
    direction * (a.std - b.std) || a.order - b.order;
  const chosen = [...groupIndices(groups.map((g) => g.quotaKey)).values()]
    .flatMap((indices) => {
      const ranked = indices.map((i) => groups[i]!).sort(preferred);
      return ranked.slice(0, Math.max(1, Math.floor(ratio * ranked.length)));
    })
    .sort(preferred);
  const summarise = (set: typeof groups) => ({
    std: meanOf(set.map((g) => g.std)),
    max: meanOf(set.map((g) => g.max)),
    mean: meanOf(set.map((g) => g.mean)),
  });
  const all = summarise(groups);
  const kept = summarise(chosen);
  return {
    keptIndices: chosen.flatMap((g) => g.members).sort((a, b) => a - b),
    keptGroups: chosen.map((g) => g.id),
    metrics: {
      "rollout/in_group_std": all.std,
      "rollout/in_group_max": all.max,
      "rollout/in_group_mean": all.mean,
      "rollout/chosen_in_group_std": kept.std,
      "rollout/chosen_in_group_max": kept.max,
      "rollout/chosen_in_group_mean": kept.mean,
    },
  };
}

function maxOf(values: readonly number[]): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  return max;
}
