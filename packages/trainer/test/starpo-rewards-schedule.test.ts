/**
 * StarPO's reward normalisation, in-reward KL and learning-rate schedule through the training job: each
 * run sets them on the command line, trains, and the logged metrics are checked against what the
 * options compute from the run's own trajectories; a killed run resumes them exactly.
 */
import { normalizeRewards } from "@ragen/algos-ppo";
import { describe, expect, it } from "vitest";
import { MemoryRunStorage } from "../src/index.js";
import { learned, train, trained } from "./helpers/starpo-runs.js";

describe("reward normalisation through ragen train", () => {
  it("z-scores each env group's rewards (state, mean_std) before the update; the score stays raw", async () => {
    const { storage, metrics } = await train([
      "steps=1",
      "starpo.rewardNormGrouping=state",
      "starpo.rewardNormMethod=mean_std",
    ]);
    const records = trained(storage, 1);
    const normalized = normalizeRewards(
      records.map((t) => t.totalReward),
      { groupIds: records.map((t) => t.group) },
      { grouping: "state", method: "mean_std" },
    );
    expect(metrics(1)["critic/rewards/max"]).toBeCloseTo(Math.max(...normalized), 5);
    expect(metrics(1)["critic/rewards/min"]).toBeCloseTo(Math.min(...normalized), 5);
    expect(metrics(1)["critic/score/max"]).toBeCloseTo(Math.max(...records.map((t) => t.totalReward)), 6);
  });
});

/** A run kept in memory that is killed once, when it is about to log step `killAt` (after its update). */
class KilledOnce extends MemoryRunStorage {
  constructor(private killAt: number | undefined) {
    super("killed");
  }

  override openLogs(lastDone: number) {
    const logs = super.openLogs(lastDone);
    return {
      ...logs,
      log: (step: number, metrics: Record<string, number>) => {
        if (step === this.killAt) {
          this.killAt = undefined;
          throw new Error("killed");
        }
        logs.log(step, metrics);
      },
    };
  }
}

describe("in-reward KL and the learning-rate schedule through ragen train", () => {
  // No KL loss: the reference is loaded for the in-reward KL alone. A checkpoint after every step. The
  // actor's rate is pinned: at half of it one update leaves the sampled tokens' KL estimate (k1, which
  // can be negative) too close to 0 for its sign to show that the policy moved.
  const options = [
    "steps=2",
    "starpo.actorLr=5e-4",
    "checkpointEvery=1",
    "starpo.klCoeff=0",
    "starpo.klInReward=true",
    "starpo.klRewardCoeff=0.01",
    "starpo.klController=adaptive",
    "starpo.klHorizon=100",
    "starpo.lrSchedule=cosine",
    "starpo.lrWarmupRatio=0.9",
  ];

  it("logs the KL penalty and its adaptive coefficient, decays the rates, and resumes both exactly", async () => {
    const { metrics } = await train(options);
    const [first, second] = [metrics(1), metrics(2)];
    expect(first["actor/reward_kl_penalty_coeff"]).toBe(0.01);
    // After each step: x (1 + clip(KL / 0.1 - 1, ±0.2) x 8 trajectories / 100).
    const error = Math.min(0.2, Math.max(-0.2, first["actor/reward_kl_penalty"]! / 0.1 - 1));
    expect(second["actor/reward_kl_penalty_coeff"]).toBeCloseTo(0.01 * (1 + (error * 8) / 100), 12);
    expect(second["actor/reward_kl_penalty"]).toBeGreaterThan(0);
    // Two updates of two optimiser steps: the last step of the first starts at 1/4 of the run and ends
    // at 1/2 (half of the 0.9 warm-up); the last of the second starts at 3/4, past the warm-up.
    const cosine = (share: number) => (1 + Math.cos(Math.PI * share)) / 2;
    expect(first["actor/lr"]).toBeCloseTo(5e-4 * (0.5 / 0.9) * cosine(0.25), 12);
    expect(first["critic/lr"]).toBeCloseTo(1e-3 * (0.5 / 0.9) * cosine(0.25), 12);
    expect(second["actor/lr"]).toBeCloseTo(5e-4 * cosine(0.75), 12);

    // Killed after step 2's update, before its row and checkpoint: the run resumes from step 1's.
    const killed = new KilledOnce(2);
    await expect(train(options, { storage: killed })).rejects.toThrow(/killed/);
    await train(options, { storage: killed });
    const resumed = killed.rows.find((row) => row.step === 2)!.metrics;
    expect(learned(resumed)).toEqual(learned(second));
  });
});
