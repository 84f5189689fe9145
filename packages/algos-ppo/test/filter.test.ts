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
