/**
 * StarPO's rollout filters through the training job (each run sets them on the command line, trains,
 * and the kept groups are checked against the run's own trajectories), and the StarPO settings that
 * refuse each other.
 */
import { filterByUncertainty } from "@ragen/algos-ppo";
import { ConfigError } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";
import { describe, expect, it } from "vitest";
import { resolveSettings } from "../src/index.js";
import { sampleStd, train, trained } from "./helpers/starpo-runs.js";

describe("rollout filters through ragen train", () => {
  /** The groups' reward stds of a step, by group id. */
  const groupStds = (records: readonly TrajectoryRecord[]) =>
    [...new Set(records.map((t) => t.group))].map((g) =>
      sampleStd(records.filter((t) => t.group === g).map((t) => t.totalReward)),
    );

  it("top_p without zero-spread groups keeps what RAGEN-2's rule keeps, and scales the loss by its share", async () => {
    const filter = [
      "starpo.uncertaintyFilter=true",
      "starpo.filterPerEnv=false",
      "starpo.filterStrategy=top_p",
      "starpo.rolloutFilterRatio=0.5",
      "starpo.filterIncludeZero=false",
    ];
    const plain = await train(["steps=1", ...filter]);
    const scaled = await train(["steps=1", ...filter, "starpo.filterLossScaling=linear"]);
    const records = trained(plain.storage, 1);
    const expected = filterByUncertainty(
      records.map((t) => t.totalReward),
      records.map((t) => t.group),
      { strategy: "top_p", rolloutFilterRatio: 0.5, includeZero: false },
    );
    expect(expected.keptShare).toBeGreaterThan(0);
    expect(expected.keptShare).toBeLessThan(1);
    expect(plain.metrics(1)["rollout/filter_kept_ratio"]).toBe(expected.keptShare);
    expect(plain.metrics(1)["rollout/filter_kept_count"]).toBe(expected.keptGroups.length);
    // The same rollout (same seed, same start model), its advantages times the kept share.
    expect(scaled.metrics(1)["critic/advantages/max"]).toBeCloseTo(
      plain.metrics(1)["critic/advantages/max"]! * expected.keptShare,
      6,
    );
  });

  it("filterKeep=lowest (RAGEN's std_rev) keeps the groups with the least reward spread", async () => {
    const { storage, metrics } = await train([
      "steps=1",
      "starpo.uncertaintyFilter=true",
      "starpo.filterPerEnv=false",
      "starpo.rolloutFilterRatio=0.5",
      "starpo.filterKeep=lowest",
    ]);
    const stds = groupStds(trained(storage, 1));
    expect(metrics(1)["rollout/chosen_in_group_std"]).toBeCloseTo(Math.min(...stds), 6);
    expect(metrics(1)["rollout/filter_kept_count"]).toBe(1);
  });

  it("filterMetric entropy (one more forward) with min_p, and length with top_k", async () => {
    const filter = ["steps=1", "starpo.uncertaintyFilter=true", "starpo.filterPerEnv=false"];
    const byEntropy = await train([
      ...filter,
      "starpo.filterMetric=entropy",
      "starpo.filterStrategy=min_p",
      "starpo.rolloutFilterRatio=0.5",
    ]);
    expect(byEntropy.metrics(1)["timing_s/filter_entropy"]).toBeGreaterThan(0);
    expect(byEntropy.metrics(1)["rollout/filter_kept_count"]).toBeGreaterThanOrEqual(1);
    expect(Number.isFinite(byEntropy.metrics(1)["actor/pg_loss"])).toBe(true);
    const byLength = await train([...filter, "starpo.filterMetric=length", "starpo.rolloutFilterRatio=0.5"]);
    expect(byLength.metrics(1)["rollout/filter_kept_count"]).toBe(1);
    expect(byLength.metrics(1)["timing_s/filter_entropy"]).toBeUndefined();
  });
});

describe("StarPO settings that refuse each other", () => {
  async function issues(overrides: string[]) {
    const error = await resolveSettings({ overrides }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).issues;
  }

  it("are named with the command line before anything is loaded", async () => {
    expect(
      await issues([
        "starpo.uncertaintyFilter=true",
        "starpo.filterStrategy=top_p",
        "starpo.filterKeep=lowest",
      ]),
    ).toContainEqual(
      expect.objectContaining({
        field: "starpo.filterKeep",
        message: expect.stringMatching(/top_k or min_p/),
      }),
    );
    expect(await issues(["starpo.klInReward=true", "starpo.klRewardCoeff=0"])).toContainEqual(
      expect.objectContaining({ field: "starpo.klRewardCoeff", message: expect.stringMatching(/above 0/) }),
    );
    const unknown = await issues(["starpo.advantageEstimator=ppo"]);
    expect(unknown[0]!.message).toMatch(/must be one of/);
    expect(unknown[0]!.allowed).toEqual(
      expect.arrayContaining(["rloo", "reinforce_plus_plus", "bi_level_gae"]),
    );
    expect((await issues(["starpo.lrWarmupRatio=1"]))[0]!.message).toMatch(/never reach the full rate/);
  });
});
