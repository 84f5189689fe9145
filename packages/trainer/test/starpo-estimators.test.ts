/**
 * StarPO's advantage estimators through the training job: each run sets them on the command line,
 * trains, and the logged advantages and returns are checked against what the estimator computes from
 * the run's own trajectories.
 */
import { describe, expect, it } from "vitest";
import { mean, perGroup, train, trained } from "./helpers/starpo-runs.js";

describe("advantage estimators through ragen train", () => {
  it("rloo: R minus the mean of the group's other rewards, and no critic", async () => {
    const { storage, metrics } = await train(["steps=1", "starpo.advantageEstimator=rloo"]);
    const expected = perGroup(trained(storage, 1), (r, others) => r - mean(others));
    expect(expected.max).toBeGreaterThan(0);
    expect(metrics(1)["critic/advantages/max"]).toBeCloseTo(expected.max, 5);
    expect(metrics(1)["critic/advantages/min"]).toBeCloseTo(expected.min, 5);
    expect(metrics(1)["critic/vf_loss"]).toBeUndefined();
  });

  it("grpo with normAdvByStd=false (Dr. GRPO): R minus the group mean, not divided by its std", async () => {
    const { storage, metrics } = await train([
      "steps=1",
      "starpo.advantageEstimator=grpo",
      "starpo.normAdvByStd=false",
    ]);
    const expected = perGroup(trained(storage, 1), (r, others) => r - mean([r, ...others]));
    expect(expected.max).toBeGreaterThan(0);
    expect(metrics(1)["critic/advantages/max"]).toBeCloseTo(expected.max, 5);
    expect(metrics(1)["critic/advantages/min"]).toBeCloseTo(expected.min, 5);
  });

  it("reinforce_plus_plus: returns-to-go whitened over the batch, no critic", async () => {
    const { storage, metrics } = await train(["steps=1", "starpo.advantageEstimator=reinforce_plus_plus"]);
    const rewards = trained(storage, 1).map((t) => t.totalReward);
    // gamma 1 and the reward on the last token: every token's return-to-go is the trajectory's reward.
    expect(metrics(1)["critic/returns/max"]).toBeCloseTo(Math.max(...rewards), 6);
    expect(metrics(1)["critic/returns/min"]).toBeCloseTo(Math.min(...rewards), 6);
    expect(Math.abs(metrics(1)["critic/advantages/mean"]!)).toBeLessThan(1e-6);
    expect(metrics(1)["critic/vf_loss"]).toBeUndefined();
  });

  it("bi_level_gae: the earlier turns' returns are the reward discounted by highLevelGamma per turn", async () => {
    // The random tiny model never answers in format: two turns of -0.1 each, the -0.2 on the last token.
    const { storage, metrics } = await train(
      ["steps=1", "starpo.advantageEstimator=bi_level_gae", "starpo.highLevelGamma=0.5"],
      { tiny: true },
    );
    // gamma = lambda = 1: turn k of T returns highLevelGamma^(T - 1 - k) x R, whatever the critic says.
    const returns = trained(storage, 1).flatMap((t) =>
      t.turns.map((_, k) => 0.5 ** (t.turns.length - 1 - k) * t.totalReward),
    );
    expect(Math.max(...returns)).not.toBeCloseTo(Math.min(...returns), 3);
    expect(metrics(1)["critic/returns/max"]).toBeCloseTo(Math.max(...returns), 6);
    expect(metrics(1)["critic/returns/min"]).toBeCloseTo(Math.min(...returns), 6);
    expect(Number.isFinite(metrics(1)["critic/vf_loss"])).toBe(true);
  });
});
