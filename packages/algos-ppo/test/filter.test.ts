import { describe, expect, it } from "vitest";
import { filterByUncertainty } from "../src/filter.js";

// Four groups of two: stds (sample) are |a - b| / sqrt(2).
//   group 10: [0, 0]  std 0
//   group 11: [0, 2]  std sqrt(2)
//   group 12: [1, 1.5] std 0.5 / sqrt(2)
//   group 13: [3, 5]  std sqrt(2)  (ties with group 11, appears later)
const rewards = [0, 0, 0, 2, 1, 1.5, 3, 5];
const groupIds = [10, 10, 11, 11, 12, 12, 13, 13];

describe("filterByUncertainty", () => {
  it("keeps the top quarter of groups by reward std, earlier group first on ties", () => {
    const result = filterByUncertainty(rewards, groupIds);
    expect(result.keptGroups).toEqual([11]);
    expect(result.keptIndices).toEqual([2, 3]);
  });

  it("keeps half of the groups in order of decreasing std", () => {
    const result = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5 });
    expect(result.keptGroups).toEqual([11, 13]);
    expect(result.keptIndices).toEqual([2, 3, 6, 7]);
  });

  it("can keep the most certain groups instead", () => {
    const result = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5, keep: "lowest" });
    expect(result.keptGroups).toEqual([10, 12]);
    expect(result.keptIndices).toEqual([0, 1, 4, 5]);
  });

  it("reports RAGEN's in-group metrics before and after filtering", () => {
    const { metrics } = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5 });
    const s = Math.SQRT2;
    expect(metrics["rollout/in_group_std"]).toBeCloseTo((0 + s + 0.5 / s + s) / 4, 6);
    expect(metrics["rollout/in_group_max"]).toBeCloseTo((0 + 2 + 1.5 + 5) / 4, 6);
    expect(metrics["rollout/in_group_mean"]).toBeCloseTo((0 + 1 + 1.25 + 4) / 4, 6);
    expect(metrics["rollout/chosen_in_group_std"]).toBeCloseTo(s, 6);
    expect(metrics["rollout/chosen_in_group_max"]).toBeCloseTo((2 + 5) / 2, 6);
    expect(metrics["rollout/chosen_in_group_mean"]).toBeCloseTo((1 + 4) / 2, 6);
  });

  it("always keeps at least one group and keeps all at ratio 1", () => {
    expect(filterByUncertainty([1, 2], [0, 0], { rolloutFilterRatio: 0.25 }).keptIndices).toEqual([0, 1]);
    expect(filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 1 }).keptIndices).toHaveLength(8);
  });

  it("rejects bad ratios and mismatched inputs", () => {
    expect(() => filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0 })).toThrow(RangeError);
    expect(() => filterByUncertainty(rewards, [0])).toThrow(RangeError);
    expect(() => filterByUncertainty([], [])).toThrow(RangeError);
  });

  it("with quota keys keeps the ratio of each key's groups, so no env is crowded out", () => {
    // Groups 10 and 11 are env A, 12 and 13 env B; over the whole batch half would be 11 and 13.
    const keys = ["A", "A", "A", "A", "B", "B", "B", "B"];
    const perEnv = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5, quotaKeys: keys });
    expect(perEnv.keptGroups).toEqual([11, 13]);
    // Env B's spread is all in group 13 and env A's in 11; move A's spread to both groups instead.
    const skewed = [0, 4, 0, 2, 1, 1.5, 3, 5];
    const global = filterByUncertainty(skewed, groupIds, { rolloutFilterRatio: 0.5 });
    expect(global.keptGroups).toEqual([10, 11]);
    const quota = filterByUncertainty(skewed, groupIds, { rolloutFilterRatio: 0.5, quotaKeys: keys });
    expect(quota.keptGroups).toEqual([10, 13]);
    expect(quota.keptIndices).toEqual([0, 1, 6, 7]);
  });

  it("keeps at least one group per key and rejects a key list of the wrong length", () => {
    const keys = ["A", "A", "A", "A", "A", "A", "B", "B"];
    const result = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.25, quotaKeys: keys });
    expect(result.keptGroups).toEqual([11, 13]);
    expect(() => filterByUncertainty(rewards, groupIds, { quotaKeys: ["A"] })).toThrow(RangeError);
  });
});

describe("filterByUncertainty: RAGEN-2's strategies", () => {
  // Group stds: 10 -> 0, 11 -> sqrt(2), 12 -> 0.5 / sqrt(2), 13 -> sqrt(2). Total sqrt(2) * 2.25.
  const s = Math.SQRT2;

  it("reports the kept count and share and the groups scoring 0", () => {
    const { keptShare, metrics } = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5 });
    expect(keptShare).toBe(0.5);
    expect(metrics["rollout/filter_kept_count"]).toBe(2);
    expect(metrics["rollout/filter_kept_ratio"]).toBe(0.5);
    expect(metrics["rollout/filter_zero_count"]).toBe(1);
  });

  it("top_p keeps the best groups until they hold the share of the score mass (less 0.01)", () => {
    // 0.9 of the mass is 2.864 - 0.01: 11 and 13 hold 2.83, so 12 joins them.
    const p9 = filterByUncertainty(rewards, groupIds, { strategy: "top_p", rolloutFilterRatio: 0.9 });
    expect(p9.keptGroups).toEqual([11, 13, 12]);
    // 0.85 of it is 2.695: 11 and 13 are enough.
    const p85 = filterByUncertainty(rewards, groupIds, { strategy: "top_p", rolloutFilterRatio: 0.85 });
    expect(p85.keptGroups).toEqual([11, 13]);
    expect(2 * s).toBeGreaterThanOrEqual(0.85 * 2.25 * s - 0.01);
    // At 1 every candidate stays, the zero group included.
    const all = filterByUncertainty(rewards, groupIds, { strategy: "top_p", rolloutFilterRatio: 1 });
    expect(all.keptGroups).toEqual([11, 13, 12, 10]);
  });

  it("top_p over variances (RAGEN-2's reward_variance) weighs low-spread groups less than over stds", () => {
    // Variances 0, 2, 0.125, 2: 0.9 of 4.125 is 3.7 (less 0.01), which 11 and 13 already hold.
    const variance = filterByUncertainty(rewards, groupIds, {
      strategy: "top_p",
      rolloutFilterRatio: 0.9,
      statistic: "variance",
    });
    expect(variance.keptGroups).toEqual([11, 13]);
  });

  it("top_p keeps nothing when no group has spread, and refuses to rank from the lowest", () => {
    const flat = filterByUncertainty([1, 1, 0, 0], [0, 0, 1, 1], {
      strategy: "top_p",
      rolloutFilterRatio: 0.9,
    });
    expect(flat.keptIndices).toEqual([]);
    expect(flat.metrics["rollout/filter_kept_count"]).toBe(0);
    expect(() => filterByUncertainty(rewards, groupIds, { strategy: "top_p", keep: "lowest" })).toThrow(
      /top_k or min_p/,
    );
  });

  it("min_p keeps every group within a factor of the best (or, keeping the lowest, of the least)", () => {
    const high = filterByUncertainty(rewards, groupIds, { strategy: "min_p", rolloutFilterRatio: 0.3 });
    // 0.3 * sqrt(2) = 0.42 is above group 12's 0.35: it is out; at 0.2 (0.28) it stays.
    expect(high.keptGroups).toEqual([11, 13]);
    const wide = filterByUncertainty(rewards, groupIds, { strategy: "min_p", rolloutFilterRatio: 0.2 });
    expect(wide.keptGroups).toEqual([11, 13, 12]);
    // Keeping the lowest without zeros: the least is 0.35, so scores up to 0.35 / 0.2 = 1.77 stay.
    const low = filterByUncertainty(rewards, groupIds, {
      strategy: "min_p",
      rolloutFilterRatio: 0.2,
      keep: "lowest",
      includeZero: false,
    });
    expect(low.keptGroups).toEqual([12, 11, 13]);
  });

  it("without zero-score groups top_k keeps no flat group and counts its share of all groups", () => {
    const result = filterByUncertainty(rewards, groupIds, {
      rolloutFilterRatio: 0.5,
      keep: "lowest",
      includeZero: false,
    });
    expect(result.keptGroups).toEqual([12, 11]);
    const none = filterByUncertainty([1, 1, 2, 2], [0, 0, 1, 1], { includeZero: false });
    expect(none.keptIndices).toEqual([]);
  });

  it("scores groups by other values: their mean (reward_mean, length, entropy) or their spread", () => {
    // Means of the rewards: 0, 1, 1.25, 4.
    const byMean = filterByUncertainty(rewards, groupIds, { rolloutFilterRatio: 0.5, statistic: "mean" });
    expect(byMean.keptGroups).toEqual([13, 12]);
    const lengths = [10, 10, 30, 50, 5, 5, 1, 2];
    const byLength = filterByUncertainty(rewards, groupIds, {
      rolloutFilterRatio: 0.25,
      scores: lengths,
      statistic: "mean",
    });
    expect(byLength.keptGroups).toEqual([11]);
    // The in-group metrics stay the rewards'.
    expect(byLength.metrics["rollout/chosen_in_group_mean"]).toBe(1);
    expect(() => filterByUncertainty(rewards, groupIds, { scores: [1] })).toThrow(RangeError);
  });
});
