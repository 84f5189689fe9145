import { describe, expect, it } from "vitest";
import {
  biLevelGaeAdvantages,
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rlooAdvantages,
  turnSpans,
  whitenMasked,
  whitenMaskedByKey,
} from "../src/advantages.js";
import { expectClose, f32 } from "./helpers.js";

// One two-turn chat: prompt, two sampled tokens, a template token, two sampled tokens.
const mask = [0, 1, 1, 0, 1, 1];
const rewards = f32([0, 0, 0.5, 0, 0, 1]);
const values = f32([9, 0.1, 0.2, 9, 0.3, 0.4]);

describe("gaeAdvantages", () => {
  it("with gamma = lambda = 1 gives R_to_go - V on sampled tokens only", () => {
    const { advantages, returns } = gaeAdvantages({ tokenRewards: [rewards], masks: [mask] }, [values]);
    expectClose(advantages[0]!, [0, 1.5 - 0.1, 1.5 - 0.2, 0, 1 - 0.3, 1 - 0.4]);
    expectClose(returns[0]!, [0, 1.5, 1.5, 0, 1, 1]);
  });

  it("matches hand-computed deltas with gamma 0.9, lambda 0.8, skipping the template token", () => {
    const { advantages, returns } = gaeAdvantages({ tokenRewards: [rewards], masks: [mask] }, [values], {
      gamma: 0.9,
      lambda: 0.8,
    });
    // t5: delta 1 - 0.4 = 0.6.  t4: 0.9*0.4 - 0.3 = 0.06, A = 0.06 + 0.72*0.6 = 0.492.
    // t2 bootstraps from t4's value (t3 is not a step): 0.5 + 0.9*0.3 - 0.2 = 0.57, A = 0.57 + 0.72*0.492.
    // t1: 0.9*0.2 - 0.1 = 0.08, A = 0.08 + 0.72*0.92424.
    expectClose(advantages[0]!, [0, 0.7454528, 0.92424, 0, 0.492, 0.6]);
    expectClose(returns[0]!, [0, 0.8454528, 1.12424, 0, 0.792, 1.0]);
  });

  it("equals the explicit sum of discounted deltas on random multi-turn sequences", () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let trial = 0; trial < 20; trial++) {
      const length = 1 + Math.floor(rand() * 12);
      const m = Array.from({ length }, () => (rand() < 0.6 ? 1 : 0));
      const r = f32(m.map((on) => (on && rand() < 0.4 ? rand() * 2 - 1 : 0)));
      const v = f32(Array.from({ length }, () => rand()));
      const gamma = rand();
      const lambda = rand();
      const got = gaeAdvantages({ tokenRewards: [r], masks: [m] }, [v], { gamma, lambda }).advantages[0]!;
      // Naive: list the steps, delta_k = r_k + gamma V_{k+1} - V_k, A_k = sum_l (gamma lambda)^l delta_{k+l}.
      const steps = m.flatMap((on, t) => (on ? [t] : []));
      const delta = steps.map((t, k) => {
        const next = k + 1 < steps.length ? v[steps[k + 1]!]! : 0;
        return r[t]! + gamma * next - v[t]!;
      });
      const expected = new Array<number>(length).fill(0);
      steps.forEach((t, k) => {
        let a = 0;
        for (let l = k; l < steps.length; l++) a += (gamma * lambda) ** (l - k) * delta[l]!;
        expected[t] = a;
      });
      expectClose(got, expected, 4);
    }
  });

  it("credits a reward on an unmasked token to the sampled token before it", () => {
    const { advantages } = gaeAdvantages({ tokenRewards: [f32([0, 0, 2])], masks: [[0, 1, 0]] }, [
      f32([0, 0, 0]),
    ]);
    expectClose(advantages[0]!, [0, 2, 0]);
  });

  it("rejects per-token arrays of different lengths", () => {
    expect(() => gaeAdvantages({ tokenRewards: [f32([1, 2])], masks: [[1, 1]] }, [f32([0])])).toThrow(
      RangeError,
    );
  });
});

// Group 0 scores [1, 0, 0.5] (mean 0.5, sample std 0.5); group 1 is a single trajectory scoring 2.
const outcomeBatch = {
  tokenRewards: [f32([0, 0, 1]), f32([0, 0]), f32([0, 0.5, 0]), f32([0, 2])],
  masks: [
    [0, 1, 1],
    [1, 1],
    [0, 1, 1],
    [0, 1],
  ],
};
const outcomeGroups = [0, 0, 0, 1];

describe("grpoAdvantages", () => {
  it("z-scores scores within the group and broadcasts them to sampled tokens", () => {
    const { advantages, returns } = grpoAdvantages(outcomeBatch, outcomeGroups);
    const s = 0.5 + 1e-6;
    expectClose(advantages[0]!, [0, 0.5 / s, 0.5 / s]);
    expectClose(advantages[1]!, [-0.5 / s, -0.5 / s]);
    expectClose(advantages[2]!, [0, 0, 0]);
    // A singleton keeps its score (mean 0, std 1).
    expectClose(advantages[3]!, [0, 2 / (1 + 1e-6)]);
    expectClose(returns[0]!, Array.from(advantages[0]!));
  });
});

describe("rlooAdvantages", () => {
  it("subtracts the mean of the other group members", () => {
    const { advantages } = rlooAdvantages(outcomeBatch, outcomeGroups);
    expectClose(advantages[0]!, [0, 1 - 0.25, 1 - 0.25]); // others 0 and 0.5
    expectClose(advantages[1]!, [0 - 0.75, 0 - 0.75]); // others 1 and 0.5
    expectClose(advantages[2]!, [0, 0, 0]); // others 1 and 0
    expectClose(advantages[3]!, [0, 2]); // no others: baseline 0
  });

  it("rejects a group id list of the wrong length", () => {
    expect(() => rlooAdvantages(outcomeBatch, [0, 0])).toThrow(RangeError);
  });
});

describe("reinforcePlusPlusAdvantages", () => {
  it("whitens discounted returns-to-go over the batch's sampled tokens", () => {
    const batch = {
      tokenRewards: [f32([0, 0, 0, 2]), f32([0, 1])],
      masks: [
        [1, 1, 0, 1],
        [0, 1],
      ],
    };
    const { advantages, returns } = reinforcePlusPlusAdvantages(batch, { gamma: 0.5 });
    // returns-to-go skip the template token: t3 = 2, t1 = 0.5 * 2, t0 = 0.5 * 1
    expectClose(returns[0]!, [0.5, 1, 0, 2]);
    expectClose(returns[1]!, [0, 1]);
    // masked values [0.5, 1, 2, 1]: mean 1.125, squared deviations sum 1.1875, sample variance 1.1875 / 3
    const sd = Math.sqrt(1.1875 / 3 + 1e-8);
    expectClose(advantages[0]!, [-0.625 / sd, -0.125 / sd, 0, 0.875 / sd]);
    expectClose(advantages[1]!, [0, -0.125 / sd]);
  });
});

describe("whitenMasked", () => {
  it("ignores unmasked tokens in the statistics and zeroes them", () => {
    const out = whitenMasked([f32([1, 1000, 3])], [[1, 0, 1]]);
    // mean 2, sample variance 2
    const sd = Math.sqrt(2 + 1e-8);
    expectClose(out[0]!, [-1 / sd, 0, 1 / sd]);
  });

  it("keeps the mean with shiftMean: false, (x - mean) / sd + mean as verl's masked_whiten", () => {
    const out = whitenMasked(
      [f32([1, 3]), f32([5, 99])],
      [
        [1, 1],
        [1, 0],
      ],
      { shiftMean: false },
    );
    // mean 3, sample variance 4
    const sd = Math.sqrt(4 + 1e-8);
    expectClose(out[0]!, [-2 / sd + 3, 0 / sd + 3]);
    expectClose(out[1]!, [2 / sd + 3, 0]);
  });
});

describe("whitenMaskedByKey", () => {
  it("whitens each key's sequences on their own statistics", () => {
    // A pays 0 or 1, B pays 0 or 0.1: together B's every token would sit below the batch mean.
    const values = [f32([1, 1]), f32([0.1, 0.1]), f32([0, 0]), f32([0, 0])];
    const masks = values.map(() => [1, 1]);
    const keys = ["A", "B", "A", "B"];
    const out = whitenMaskedByKey(values, masks, keys);
    const perA = whitenMasked([values[0]!, values[2]!], [masks[0]!, masks[2]!]);
    const perB = whitenMasked([values[1]!, values[3]!], [masks[1]!, masks[3]!]);
    expectClose(out[0]!, [...perA[0]!]);
    expectClose(out[2]!, [...perA[1]!]);
    expectClose(out[1]!, [...perB[0]!]);
    expectClose(out[3]!, [...perB[1]!]);
    // B's better response is pushed up, which whitening over the whole batch would not do.
    expect(out[1]![0]).toBeGreaterThan(0);
    expect(whitenMasked(values, masks)[1]![0]).toBeLessThan(0);
  });

  it("rejects a key list of the wrong length", () => {
    expect(() => whitenMaskedByKey([f32([1])], [[1]], [])).toThrow(RangeError);
  });

  it('with scale "batch" centres each key on its own mean and scales the whole batch alike', () => {
    const values = [f32([1, 1]), f32([0.1, 0.1]), f32([0, 0]), f32([0, 0])];
    const masks = values.map(() => [1, 1]);
    const keys = ["A", "B", "A", "B"];
    const out = whitenMaskedByKey(values, masks, keys, { scale: "batch" });
    // Centred: A ±0.5, B ±0.05 — then one spread for all, so B stays ten times smaller than A.
    const centred = [f32([0.5, 0.5]), f32([0.05, 0.05]), f32([-0.5, -0.5]), f32([-0.05, -0.05])];
    const expected = whitenMasked(centred, masks);
    for (let i = 0; i < 4; i++) expectClose(out[i]!, [...expected[i]!]);
    expect(out[0]![0]! / out[1]![0]!).toBeCloseTo(10, 4);
    expect(out[1]![0]).toBeGreaterThan(0);
  });

  it('with scale "none" only centres each key: a batch whose rewards barely differ keeps small advantages', () => {
    const masks = [
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ];
    const keys = ["A", "B", "A", "B"];
    const strong = [f32([1, 1]), f32([0.1, 0.1]), f32([0, 0]), f32([0, 0])];
    const weak = [f32([0.01, 0.01]), f32([0.1, 0.1]), f32([0, 0]), f32([0, 0])];
    const centred = whitenMaskedByKey(strong, masks, keys, { scale: "none" });
    expectClose(centred[0]!, [0.5, 0.5]);
    expectClose(centred[1]!, [0.05, 0.05]);
    expectClose(centred[2]!, [-0.5, -0.5]);
    expectClose(centred[3]!, [-0.05, -0.05]);
    // Whitened, A's tiny difference in the weak batch is blown up to the size of the strong batch's.
    const whitened = (batch: Float32Array[]) => whitenMaskedByKey(batch, masks, keys, { scale: "batch" });
    expect(Math.abs(whitened(weak)[0]![0]!)).toBeGreaterThan(0.1);
    expect(whitenMaskedByKey(weak, masks, keys, { scale: "none" })[0]![0]).toBeCloseTo(0.005, 6);
  });
});

describe("biLevelGaeAdvantages", () => {
  // Two turns of two sampled tokens, two template tokens between them.
  const twoTurns = [0, 1, 1, 0, 0, 1, 1];
  const turnValues = f32([0, 0.1, 0.2, 0, 0, 0.3, 0.4]);

  it("finds the turns as the runs of sampled tokens", () => {
    expect(turnSpans(twoTurns)).toEqual([
      { start: 1, end: 2 },
      { start: 5, end: 6 },
    ]);
    expect(turnSpans([1, 0, 1])).toEqual([
      { start: 0, end: 0 },
      { start: 2, end: 2 },
    ]);
    expect(turnSpans([0, 0])).toEqual([]);
  });

  it("discounts between turns by highLevelGamma, then runs token-level GAE back from each turn's end", () => {
    const { advantages, returns } = biLevelGaeAdvantages(
      { tokenRewards: [f32([0, 0, 0, 0, 0, 0, 1])], masks: [twoTurns] },
      [turnValues],
    );
    // Turns: last turn A1 = 1 - 0.4 = 0.6; first A0 = 0 + 0.95 * 0.4 - 0.2 + 0.95 * 0.6 = 0.75.
    // Tokens: t5 = (0.4 - 0.3) + 0.6 = 0.7; t1 = (0.2 - 0.1) + 0.75 = 0.85.
    expectClose(advantages[0]!, [0, 0.85, 0.75, 0, 0, 0.7, 0.6]);
    expectClose(returns[0]!, [0, 0.95, 0.95, 0, 0, 1, 1]);
  });

  it("credits each turn with its own reward (rewards per turn) and the text after it", () => {
    const { advantages } = biLevelGaeAdvantages(
      // The first turn's reward lies on the template token after it.
      { tokenRewards: [f32([0, 0, 0, 0.5, 0, 0, 1])], masks: [twoTurns] },
      [turnValues],
      { gamma: 0.9, lambda: 0.8, highLevelGamma: 0.5 },
    );
    // A1 = 0.6; A0 = 0.5 + 0.5 * 0.4 - 0.2 + 0.5 * 0.8 * 0.6 = 0.74.
    // t5 = (0.9 * 0.4 - 0.3) + 0.72 * 0.6 = 0.492; t1 = (0.9 * 0.2 - 0.1) + 0.72 * 0.74 = 0.6128.
    expectClose(advantages[0]!, [0, 0.6128, 0.74, 0, 0, 0.492, 0.6]);
  });

  it("is plain GAE on a single turn", () => {
    const batch = { tokenRewards: [f32([0, 0.2, 0, 1])], masks: [[0, 1, 1, 1]] };
    const v = [f32([0, 0.3, 0.1, 0.5])];
    const options = { gamma: 0.9, lambda: 0.7, highLevelGamma: 0.5 };
    const bi = biLevelGaeAdvantages(batch, v, options);
    const plain = gaeAdvantages(batch, v, options);
    expectClose(bi.advantages[0]!, [...plain.advantages[0]!]);
    expectClose(bi.returns[0]!, [...plain.returns[0]!]);
  });
});

describe("grpoAdvantages without the std (Dr. GRPO)", () => {
  it("gives R - group mean", () => {
    const batch = {
      tokenRewards: [f32([0, 1]), f32([0, 0]), f32([0, 0.5]), f32([0, 0.1])],
      masks: [
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 1],
      ],
    };
    const { advantages } = grpoAdvantages(batch, [0, 0, 0, 1], { normalizeByStd: false });
    expectClose(
      advantages.map((a) => a[1]!),
      [0.5, -0.5, 0, 0.1],
    );
  });
});
