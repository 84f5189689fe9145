import { createCpuBackend, tensor } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { applyKlRewardPenalty, KlController, klEstimate } from "../src/kl-reward.js";
import { klPenalty } from "../src/losses.js";
import { expectClose, f32 } from "./helpers.js";

const backend = createCpuBackend();

describe("klEstimate", () => {
  it("is klPenalty's estimator on numbers, for every type and far from the reference too", async () => {
    const logp = [-0.2, -1.5, -3, -25];
    const ref = [-0.5, -1.0, -3, 0];
    for (const type of ["kl", "abs", "mse", "low_var_kl"] as const) {
      const expected = await klPenalty(
        tensor([logp], undefined, { backend }),
        tensor([ref], undefined, { backend }),
        type,
      ).floats();
      expectClose(
        logp.map((l, i) => klEstimate(l, ref[i]!, type)),
        [...expected],
        4,
      );
    }
  });
});

describe("applyKlRewardPenalty", () => {
  it("takes coefficient x KL off every sampled token's reward and reports the mean of sequence means", () => {
    const { tokenRewards, meanKl } = applyKlRewardPenalty(
      [f32([0, 0, 1]), f32([0, 0.5])],
      [
        [0, 1, 1],
        [1, 1],
      ],
      [f32([0, -1, -2]), f32([-1, -1])],
      [f32([-9, -1.5, -2.5]), f32([-1.2, -1.4])],
      0.1,
      "kl",
    );
    // KL (k1): sequence 0 [-, 0.5, 0.5], sequence 1 [0.2, 0.4]; the unsampled token keeps its reward.
    expectClose(tokenRewards[0]!, [0, -0.05, 0.95]);
    expectClose(tokenRewards[1]!, [-0.02, 0.46]);
    expect(meanKl).toBeCloseTo((0.5 + 0.3) / 2, 6);
  });
});

describe("KlController", () => {
  it("fixed keeps its coefficient", () => {
    const fixed = new KlController({ type: "fixed", initialCoeff: 0.01, targetKl: 0.1, horizon: 100 });
    fixed.update(5, 64);
    expect(fixed.coefficient).toBe(0.01);
  });

  it("adaptive multiplies it by 1 + clip(KL / target - 1, ±0.2) * n / horizon, as verl does", () => {
    const adaptive = new KlController({ type: "adaptive", initialCoeff: 0.01, targetKl: 0.1, horizon: 100 });
    adaptive.update(0.11, 50); // error 0.1: x 1.05
    expect(adaptive.coefficient).toBeCloseTo(0.0105, 10);
    adaptive.update(1, 50); // error 9, clipped to 0.2: x 1.1
    expect(adaptive.coefficient).toBeCloseTo(0.01155, 10);
    adaptive.update(0, 100); // error -1, clipped to -0.2: x 0.8
    expect(adaptive.coefficient).toBeCloseTo(0.00924, 10);
  });
});
