import { describe, expect, it } from "vitest";
import { NORMALIZATION_PRESETS, normalizeRewards, normalizeTokenRewards } from "../src/normalize.js";

const close = (actual: ArrayLike<number>, expected: number[]) => {
  expect(actual.length).toBe(expected.length);
  expected.forEach((e, i) => {
    expect(actual[i]).toBeCloseTo(e, 5);
  });
};

describe("normalizeRewards", () => {
  // Two groups: [1, 3] (mean 2, sample std sqrt(2)) and [0, 0, 6] (mean 2, sample std sqrt(12)).
  const rewards = [1, 3, 0, 0, 6];
  const groupIds = [0, 0, 1, 1, 1];

  it("ARPO leaves rewards untouched", () => {
    close(normalizeRewards(rewards, {}, "ARPO"), rewards);
  });

  it("GRPO z-scores within each env group", () => {
    const s1 = Math.SQRT2 + 1e-6;
    const s2 = Math.sqrt(12) + 1e-6;
    close(normalizeRewards(rewards, { groupIds }, "GRPO"), [-1 / s1, 1 / s1, -2 / s2, -2 / s2, 4 / s2]);
  });

  it("BRPO z-scores over the whole batch", () => {
    // mean 2, deviations [-1, 1, -2, -2, 4], sum of squares 26, sample variance 26 / 4 = 6.5
    const s = Math.sqrt(6.5) + 1e-6;
    close(normalizeRewards(rewards, {}, "BRPO"), [-1 / s, 1 / s, -2 / s, -2 / s, 4 / s]);
  });

  it("mean only centres; inductive groups by env tag", () => {
    const tags = ["A", "B", "A", "B", "A"];
    // A: [1, 0, 6] mean 7/3; B: [3, 0] mean 1.5
    close(normalizeRewards(rewards, { tags }, { grouping: "inductive", method: "mean" }), [
      1 - 7 / 3,
      1.5,
      -7 / 3,
      -1.5,
      6 - 7 / 3,
    ]);
  });

  it("asym_clip clamps z-scores to [-1, 3]", () => {
    // one success among eight: mean 1/8, sample std sqrt((7/64 * 1 + 49/64) / 7) = sqrt(1/8)
    const r = [0, 0, 0, 0, 0, 0, 0, 1];
    const s = Math.sqrt(1 / 8) + 1e-6;
    const out = normalizeRewards(r, {}, { grouping: "batch", method: "asym_clip" });
    expect(out[0]).toBeCloseTo(-0.125 / s, 5); // about -0.354, inside the clip
    expect(out[7]).toBeCloseTo(0.875 / s, 5); // 2.47: inside the clip
    const sharp = normalizeRewards(
      [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
      {},
      {
        grouping: "batch",
        method: "asym_clip",
      },
    );
    expect(sharp[16]).toBe(3);
    const failures = normalizeRewards(
      [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -5],
      {},
      {
        grouping: "batch",
        method: "asym_clip",
      },
    );
    expect(failures[16]).toBe(-1);
  });

  it("keeps a singleton group's raw reward and zeroes a group with no spread", () => {
    const out = normalizeRewards([5, 2, 2, 2], { groupIds: [0, 1, 1, 1] }, "GRPO");
    close(out, [5, 0, 0, 0]);
    // 0.1 three times: the float mean is not exactly 0.1, and dividing that noise by eps must not happen.
    close(normalizeRewards([0.1, 0.1, 0.1], {}, "BRPO"), [0, 0, 0]);
  });

  it("rejects a grouping without its keys", () => {
    expect(() => normalizeRewards([1, 2], {}, "GRPO")).toThrow(/groupIds/);
    expect(() => normalizeRewards([1, 2], { groupIds: [0] }, "GRPO")).toThrow(RangeError);
  });

  it("names the presets as RAGEN does", () => {
    expect(NORMALIZATION_PRESETS.GRPO).toEqual({ grouping: "state", method: "mean_std" });
  });
});

describe("normalizeTokenRewards", () => {
  it("puts each sequence's normalised score on its last sampled token, keeping the other rewards", () => {
    const f32 = (xs: number[]) => Float32Array.from(xs);
    // Scores 1 and 3 (batch mean_std: -1/sqrt(2), 1/sqrt(2)); the second has a reward on each turn.
    const out = normalizeTokenRewards(
      [f32([0, 0, 1, 0]), f32([0, 1, 0, 2])],
      [
        [0, 1, 1, 0],
        [0, 1, 0, 1],
      ],
      {},
      NORMALIZATION_PRESETS.BRPO,
    );
    const z = 1 / Math.SQRT2;
    close(out[0]!, [0, 0, -z, 0]);
    close(out[1]!, [0, 1, 0, z - 1]);
    // Identity changes nothing.
    close(normalizeTokenRewards([f32([0, 2])], [[0, 1]], {}, "ARPO")[0]!, [0, 2]);
  });
});
