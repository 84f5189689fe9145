import { groupIndices, meanOf, sampleStd } from "./stats.js";

/**
 * How many of the ranked groups a filter keeps. top_k: the top `value` share of the groups (RAGEN's
 * rollout_filter_ratio rule); top_p: the best groups until they hold `value` of the score mass (RAGEN-2's
 * linear top_p); min_p: every group scoring at least `value` times the best one (RAGEN-2).
 */
export type FilterStrategy = "top_k" | "top_p" | "min_p";
export const FILTER_STRATEGIES = ["top_k", "top_p", "min_p"] as const satisfies readonly FilterStrategy[];

/**
 * A group's score: the sample std of its members' values (their spread), its square (RAGEN-2's
 * reward_variance: the same order, but top_p's share of the summed scores keeps fewer low-spread
 * groups), or their mean.
 */
export type GroupStatistic = "std" | "variance" | "mean";

/** A score this close to 0 counts as 0 (RAGEN-2's). */
export const ZERO_SCORE = 1e-10;

/** RAGEN-2's selection_eps: top_p's kept mass may fall this far short of value x the total. */
export const TOP_P_SELECTION_EPS = 0.01;

export interface UncertaintyFilterOptions {
  /** The strategy's value (RAGEN: 0.25 of the groups with top_k; RAGEN-2 recommends top_p 0.9). */
  rolloutFilterRatio?: number;
  /** Default "top_k". */
  strategy?: FilterStrategy;
  /** "highest" keeps the most uncertain groups (StarPO-S, RAGEN's std); "lowest" the most certain (std_rev). */
  keep?: "highest" | "lowest";
  /**
   * Whether groups scoring 0 (no spread at all) may be kept (default true, as in RAGEN). Without them a
   * batch whose groups all scored alike keeps nothing.
   */
  includeZero?: boolean;
  /** Per-trajectory values the groups are scored by (default: the rewards), e.g. entropy or length. */
  scores?: ArrayLike<number>;
  /** The group score taken of those values (default "std"). */
  statistic?: GroupStatistic;
  /**
   * A key per trajectory (its env tag) under which the strategy applies separately: each key keeps its
   * own share of its groups. Without it the ranking is over the whole batch, as in RAGEN.
   */
  quotaKeys?: ArrayLike<string>;
}

export type FilterMetricName =
  | "rollout/in_group_std"
  | "rollout/in_group_max"
  | "rollout/in_group_mean"
  | "rollout/chosen_in_group_std"
  | "rollout/chosen_in_group_max"
  | "rollout/chosen_in_group_mean"
  | "rollout/filter_kept_count"
  | "rollout/filter_kept_ratio"
  | "rollout/filter_zero_count";

export interface UncertaintyFilterResult {
  /** Indices of the kept trajectories, ascending (empty when no group qualified). */
  keptIndices: number[];
  /** Kept group ids, most preferred first. */
  keptGroups: number[];
  /** Kept groups over all groups (RAGEN-2's filter_kept_ratio, which its loss scaling uses). */
  keptShare: number;
  metrics: Record<FilterMetricName, number>;
}

/**
 * StarPO-S uncertainty filtering: a group whose trajectories all score alike teaches nothing, so groups
 * are scored (by default U = sample std of their trajectory rewards, format penalties included, before
 * any normalisation) and the best are kept by `strategy`. top_k keeps floor(ratio * groups), at least one;
 * equal scores keep the group that appears first in the batch, so the choice is deterministic. top_p and
 * min_p (RAGEN-2) can keep nothing — top_p when the mass cannot be reached, either when
 * `includeZero: false` leaves no candidate — and top_p ranks from the highest only. With `quotaKeys` each
 * key (env) keeps its own share, so no env's groups can crowd another's out of the batch.
 * The in-group metrics are of the rewards whatever the groups are scored by (means over groups of each
 * group's std, max and mean): they are the echo trap's early warning.
 */
export function filterByUncertainty(
  rewards: ArrayLike<number>,
  groupIds: ArrayLike<number>,
  options: UncertaintyFilterOptions = {},
): UncertaintyFilterResult {
  const ratio = options.rolloutFilterRatio ?? 0.25;
  const strategy = options.strategy ?? "top_k";
  const keep = options.keep ?? "highest";
  if (!(ratio > 0 && ratio <= 1)) throw new RangeError(`rolloutFilterRatio must be in (0, 1], got ${ratio}`);
  if (!FILTER_STRATEGIES.includes(strategy))
    throw new RangeError(`filter strategy must be one of ${FILTER_STRATEGIES.join(", ")}, got ${strategy}`);
  if (strategy === "top_p" && keep === "lowest")
    throw new RangeError(
      'filter strategy top_p keeps the groups holding most of the score mass, from the highest: with keep "lowest" use top_k or min_p',
    );
  const sized = [
    ["group ids", groupIds],
    ["quota keys", options.quotaKeys],
    ["scores", options.scores],
  ] as const;
  for (const [name, values] of sized)
    if (values && values.length !== rewards.length)
      throw new RangeError(`filterByUncertainty: ${rewards.length} rewards but ${values.length} ${name}`);
  const scoreValues = options.scores ?? rewards;
  const statistic = options.statistic ?? "std";
  const groups = [...groupIndices(groupIds)].map(([id, members], order) => {
    const values = members.map((i) => rewards[i]!);
    const scored = members.map((i) => scoreValues[i]!);
    return {
      id,
      order,
      members,
      quotaKey: options.quotaKeys ? options.quotaKeys[members[0]!]! : "",
      score:
        statistic === "std"
          ? sampleStd(scored)
          : statistic === "variance"
            ? sampleStd(scored) ** 2
            : meanOf(scored),
      std: sampleStd(values),
      max: maxOf(values),
      mean: meanOf(values),
    };
  });
  if (groups.length === 0) throw new RangeError("filterByUncertainty: empty batch");
  const direction = keep === "lowest" ? 1 : -1;
  const preferred = (a: Group, b: Group) => direction * (a.score - b.score) || a.order - b.order;
  const chosen = [...groupIndices(groups.map((g) => g.quotaKey)).values()]
    .flatMap((indices) =>
      selectGroups(
        indices.map((i) => groups[i]!),
        { ratio, strategy, keep, includeZero: options.includeZero ?? true },
        preferred,
      ),
    )
    .sort(preferred);
  const summarise = (set: readonly Group[]) => ({
    std: meanOf(set.map((g) => g.std)),
    max: meanOf(set.map((g) => g.max)),
    mean: meanOf(set.map((g) => g.mean)),
  });
  const all = summarise(groups);
  const kept = summarise(chosen);
  const keptShare = chosen.length / groups.length;
  return {
    keptIndices: chosen.flatMap((g) => g.members).sort((a, b) => a - b),
    keptGroups: chosen.map((g) => g.id),
    keptShare,
    metrics: {
      "rollout/in_group_std": all.std,
      "rollout/in_group_max": all.max,
      "rollout/in_group_mean": all.mean,
      "rollout/chosen_in_group_std": kept.std,
      "rollout/chosen_in_group_max": kept.max,
      "rollout/chosen_in_group_mean": kept.mean,
      "rollout/filter_kept_count": chosen.length,
      "rollout/filter_kept_ratio": keptShare,
      "rollout/filter_zero_count": groups.filter((g) => Math.abs(g.score) <= ZERO_SCORE).length,
    },
  };
}

interface Group {
  id: number;
  order: number;
  members: number[];
  score: number;
  std: number;
  max: number;
  mean: number;
}

/** The groups of one quota key that the strategy keeps, most preferred first. */
function selectGroups(
  groups: readonly Group[],
  rule: { ratio: number; strategy: FilterStrategy; keep: "highest" | "lowest"; includeZero: boolean },
  preferred: (a: Group, b: Group) => number,
): Group[] {
  const candidates = rule.includeZero ? groups : groups.filter((g) => Math.abs(g.score) > ZERO_SCORE);
  if (candidates.length === 0) return [];
  const ranked = [...candidates].sort(preferred);
  if (rule.strategy === "top_k") {
    // The share is of all the key's groups, as RAGEN-2 counts it, and never more than the candidates.
    const count = Math.min(Math.floor(rule.ratio * groups.length), ranked.length);
    return ranked.slice(0, Math.max(1, count));
  }
  if (rule.strategy === "top_p") {
    if (rule.ratio >= 1) return ranked;
    const total = ranked.reduce((sum, g) => sum + g.score, 0);
    const threshold = rule.ratio * total - TOP_P_SELECTION_EPS;
    let mass = 0;
    let count = 0;
    for (const group of ranked) {
      if (mass >= threshold || group.score <= 0) break;
      mass += group.score;
      count++;
    }
    return mass >= threshold ? ranked.slice(0, count) : [];
  }
  // min_p: within a factor `ratio` of the best score (highest), or of the least divided by it (lowest).
  const best = ranked[0]!.score;
  return rule.keep === "highest"
    ? ranked.filter((g) => g.score >= best * rule.ratio - ZERO_SCORE)
    : ranked.filter((g) => g.score <= best / (rule.ratio + ZERO_SCORE) + ZERO_SCORE);
}

function maxOf(values: readonly number[]): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) if (v > max) max = v;
  return max;
}
