import { describe, expect, it } from "vitest";
import { beta1Problem, estimateVStar, MIN_BETA1, summarizeSamples } from "../src/vstar.js";

/** N = 8 rewards, k of them 1 and the rest 0. */
const kOfEight = (k: number) => Array.from({ length: 8 }, (_, i) => (i < k ? 1 : 0));

describe("estimateVStar", () => {
  it("matches the paper's values for N = 8, beta1 = 0.5 and 0/1 rewards", () => {
    const published: [number, number][] = [
      [0, 0],
      [1, 0.293513],
      [2, 0.477229],
      [4, 0.71689],
      [7, 0.942809],
      [8, 1],
    ];
    for (const [k, expected] of published) {
      expect(Math.abs(estimateVStar(kOfEight(k), 0.5) - expected), `k = ${k}`).toBeLessThan(1e-6);
    }
    // 0.5 is the default.
    expect(estimateVStar(kOfEight(2))).toBe(estimateVStar(kOfEight(2), 0.5));
  });

  it("is the plain mean with beta1 = 0", () => {
    expect(estimateVStar([0.25, 1, -0.5, 0], 0)).toBeCloseTo(0.1875, 12);
  });

  it("lies between the mean and the maximum and stays finite for large rewards", () => {
    const rewards = [900, 1000, 950];
    const v = estimateVStar(rewards, 0.5);
    expect(Number.isFinite(v)).toBe(true);
    expect(v).toBeGreaterThan(950);
    expect(v).toBeLessThanOrEqual(1000);
    // logsumexp over identical rewards is exact: V̂* = r.
    expect(estimateVStar([-3, -3, -3], 0.5)).toBeCloseTo(-3, 12);
  });

  it("refuses an empty list, a negative beta1 and non-finite rewards", () => {
    expect(() => estimateVStar([])).toThrow(RangeError);
    expect(() => estimateVStar([1], -0.1)).toThrow(/beta1/);
    expect(() => estimateVStar([1, Number.NaN])).toThrow(/reward 1/);
  });

  it("refuses a beta1 so small that r / beta1 overflows, rather than returning NaN", () => {
    expect(() => estimateVStar([1, 0], 1e-320)).toThrow(
      /beta1 must be 0 \(the mean reward\) or a finite number >= 1e-6/,
    );
    expect(beta1Problem(1e-320)).toMatch(/NaN/);
    expect(beta1Problem(0)).toBeUndefined();
    expect(beta1Problem(MIN_BETA1)).toBeUndefined();
    expect(beta1Problem(Number.POSITIVE_INFINITY)).toBeDefined();
    expect(Number.isFinite(estimateVStar([1, 0], MIN_BETA1))).toBe(true);
  });
});

describe("summarizeSamples", () => {
  it("counts a state as passed when any sample succeeded and all-zero when none scored above 0", () => {
    expect(summarizeSamples([0.1, 0], [false, false])).toMatchObject({ pass: false, allZero: false });
    expect(summarizeSamples([-0.1, 0], [false, true])).toMatchObject({ pass: true, allZero: true });
    expect(() => summarizeSamples([1], [true, false])).toThrow(RangeError);
  });
});
