import { Qwen2Model, type Qwen2Shape, Qwen2ValueModel } from "@ragen/models";
import { boundsProblem } from "@ragen/rl-core";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { asyncScope, createCpuBackend, noGrad, scale, type Tensor } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { STARPO_BOUNDS, StarPO, warmupFactor } from "../src/starpo.js";

const tiny: Qwen2Shape = {
  vocabSize: 32,
  hiddenSize: 16,
  intermediateSize: 32,
  numHiddenLayers: 1,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: true,
  initializerRange: 0.1,
};

const cpu = createCpuBackend();

function trajectory(
  fields: Pick<Trajectory, "tokens" | "lossMask" | "oldLogProbs" | "tokenRewards"> & Partial<Trajectory>,
): Trajectory {
  let reward = 0;
  for (const r of fields.tokenRewards) reward += r;
  return {
    index: 0,
    groupId: 0,
    tag: "Test",
    seed: 0,
    reward,
    turns: [],
    success: reward > 0,
    numActions: 1,
    actionIsValid: 1,
    actionIsEffective: 1,
    responseLength: fields.lossMask.reduce((a, b) => a + b, 0),
    finishReason: "done",
    ...fields,
  };
}

const batchOf = (trajectories: Trajectory[]): TrajectoryBatch => ({
  mode: "train",
  trajectories,
  metrics: {},
});

/** A second group (id 1) of the same trajectories all scoring 0.5: no reward spread, no signal. */
function flatGroupLike(trajectories: readonly Trajectory[], tag?: string): Trajectory[] {
  return trajectories.map((t, i) => ({
    ...t,
    index: 2 + i,
    groupId: 1,
    ...(tag === undefined ? {} : { tag }),
    reward: 0.5,
    tokenRewards: t.tokenRewards.map((r) => (r === 0 ? 0 : 0.5)),
  }));
}

/** Log-prob the actor gives `target` after `prefix`. */
async function logProbOf(model: Qwen2Model, prefix: number[], target: number): Promise<number> {
  const ids = Int32Array.from(prefix);
  const targets = new Int32Array(prefix.length);
  targets[prefix.length - 1] = target;
  return asyncScope(async () => {
    const { logProbs } = noGrad(() =>
      model.sequenceLogProbs({ ids, batch: 1, seqLen: prefix.length }, targets),
    );
    return (await logProbs.floats())[prefix.length - 1]!;
  });
}

const PROMPT = [3, 5, 7];
const REWARDED = 9;
const PUNISHED = 11;
const TEMPLATE_TAIL = 2;

/**
 * One group of two: the same prompt, then one sampled token each. The rewarded one is followed by a
 * template token (unsampled), so the rows have different lengths and padding is exercised.
 */
async function contrastingBatch(actor: Qwen2Model): Promise<TrajectoryBatch> {
  const good = trajectory({
    index: 0,
    tokens: Int32Array.from([...PROMPT, REWARDED, TEMPLATE_TAIL]),
    lossMask: Uint8Array.from([0, 0, 0, 1, 0]),
    oldLogProbs: Float32Array.from([0, 0, 0, await logProbOf(actor, PROMPT, REWARDED), 0]),
    tokenRewards: Float32Array.from([0, 0, 0, 1, 0]),
  });
  const bad = trajectory({
    index: 1,
    tokens: Int32Array.from([...PROMPT, PUNISHED]),
    lossMask: Uint8Array.from([0, 0, 0, 1]),
    oldLogProbs: Float32Array.from([0, 0, 0, await logProbOf(actor, PROMPT, PUNISHED)]),
    tokenRewards: Float32Array.from([0, 0, 0, -1]),
  });
  return batchOf([good, bad]);
}

describe("StarPO.batchTensors", () => {
  it("shifts targets and every per-token array one left of the inputs, right-padding short rows", () => {
    const trainer = new StarPO({ actor: Qwen2Model.random(tiny, 1, cpu) });
    const packed = trainer.batchTensors([
      trajectory({
        tokens: Int32Array.from([10, 11, 12, 13, 14]),
        lossMask: Uint8Array.from([0, 0, 1, 1, 0]),
        oldLogProbs: Float32Array.from([0, 0, -0.5, -0.25, 0]),
        tokenRewards: Float32Array.from([0, 0, 0, 2, 0]),
      }),
      trajectory({
        tokens: Int32Array.from([20, 21, 22]),
        lossMask: Uint8Array.from([0, 1, 1]),
        oldLogProbs: Float32Array.from([0, -1, -2]),
        tokenRewards: Float32Array.from([0, 0, 3]),
      }),
    ]);
    expect([packed.batch, packed.seqLen]).toEqual([2, 4]);
    expect(Array.from(packed.lengths)).toEqual([4, 2]);
    expect(Array.from(packed.inputIds)).toEqual([10, 11, 12, 13, 20, 21, 0, 0]);
    expect(Array.from(packed.targets)).toEqual([11, 12, 13, 14, 21, 22, 0, 0]);
    // Position t predicts token t + 1: row 0's sampled tokens 12 and 13 are predicted at positions 1, 2.
    expect(Array.from(packed.mask)).toEqual([0, 1, 1, 0, 1, 1, 0, 0]);
    expect(Array.from(packed.oldLogProbs)).toEqual([0, -0.5, -0.25, 0, -1, -2, 0, 0]);
    expect(Array.from(packed.tokenRewards)).toEqual([0, 0, 2, 0, 0, 3, 0, 0]);
  });

  it("refuses a trajectory whose first token is marked as sampled", () => {
    const trainer = new StarPO({ actor: Qwen2Model.random(tiny, 1, cpu) });
    expect(() =>
      trainer.batchTensors([
        trajectory({
          tokens: Int32Array.from([1, 2]),
          lossMask: Uint8Array.from([1, 1]),
          oldLogProbs: new Float32Array(2),
          tokenRewards: new Float32Array(2),
        }),
      ]),
    ).toThrow(/token 0/);
  });
});

describe("StarPO.update", () => {
  it("uses RAGEN's defaults: GRPO without a critic, GAE with one", () => {
    const actor = Qwen2Model.random(tiny, 1, cpu);
    const grpo = new StarPO({ actor });
    expect(grpo.config.advantageEstimator).toBe("grpo");
    expect(grpo.actorOptimizer.lr).toBe(1e-6);
    const ppo = new StarPO({ actor, critic: Qwen2ValueModel.random(tiny, 2, cpu) });
    expect(ppo.config.advantageEstimator).toBe("gae");
    expect(ppo.criticOptimizer?.lr).toBe(1e-5);
    expect(ppo.config).toMatchObject({ clipRatioLow: 0.2, clipRatioHigh: 0.28, dualClip: 3, maxGradNorm: 1 });
  });

  it("refuses a KL coefficient without a reference model, which would make the term silently zero", () => {
    const actor = Qwen2Model.random(tiny, 1, cpu);
    expect(() => new StarPO({ actor, config: { klCoeff: 0.1 } })).toThrow(
      /klCoeff 0.1 needs a reference model/,
    );
    expect(
      () => new StarPO({ actor, reference: Qwen2Model.random(tiny, 1, cpu), config: { klCoeff: 0.1 } }),
    ).not.toThrow();
  });

  it("refuses options outside STARPO_BOUNDS when built, before any rollout", () => {
    const actor = Qwen2Model.random(tiny, 1, cpu);
    expect(() => new StarPO({ actor, config: { rolloutFilterRatio: 0 } })).toThrow(
      /rolloutFilterRatio must be > 0, got 0/,
    );
    expect(() => new StarPO({ actor, config: { temperature: 0 } })).toThrow(/temperature must be > 0/);
    expect(() => new StarPO({ actor, config: { gamma: 1.5 } })).toThrow(/gamma must be <= 1/);
    expect(() => new StarPO({ actor, config: { actorLr: Number.NaN } })).toThrow(/actorLr/);
    expect(STARPO_BOUNDS.rolloutFilterRatio).toEqual({ exclusiveMinimum: 0, maximum: 1 });
    expect(boundsProblem(1, { exclusiveMaximum: 1 })).toBe("must be < 1, got 1");
    expect(boundsProblem(0.5, STARPO_BOUNDS.gamma)).toBeUndefined();
  });

  it("raises the rewarded token's log-prob and lowers the punished one's (GRPO)", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const trainer = new StarPO({ actor, config: { actorLr: 1e-2 } });
    const batch = await contrastingBatch(actor);
    const before = [await logProbOf(actor, PROMPT, REWARDED), await logProbOf(actor, PROMPT, PUNISHED)];
    const metrics = await trainer.update(batch);
    const after = [await logProbOf(actor, PROMPT, REWARDED), await logProbOf(actor, PROMPT, PUNISHED)];
    expect(after[0]).toBeGreaterThan(before[0]! + 1e-3);
    expect(after[1]).toBeLessThan(before[1]! - 1e-3);
    // Old log-probs equal the current ones, so the first step starts on-policy.
    expect(Math.abs(metrics["actor/ppo_kl"]!)).toBeLessThan(1e-5);
    expect(metrics["critic/advantages/max"]).toBeGreaterThan(0);
    expect(metrics["critic/advantages/min"]).toBeLessThan(0);
  });

  it("with f16 weights, recomputes the sampled rows' old log-probs with the training forward: the update starts on-policy", async () => {
    for (const dtype of ["f32", "f16"] as const) {
      const actor = Qwen2Model.random(tiny, 3, cpu).toDtype(dtype);
      const trainer = new StarPO({ actor, config: { actorLr: 1e-2 } });
      const batch = await contrastingBatch(actor);
      // A sampler whose log-probs are 0.05 above the training forward's (f16 rounding through a KV cache).
      for (const t of batch.trajectories) t.oldLogProbs[3]! += 0.05;
      const metrics = await trainer.update(batch);
      if (dtype === "f16") {
        expect(metrics["timing_s/old_log_prob"]).toBeGreaterThanOrEqual(0);
        expect(Math.abs(metrics["actor/ppo_kl"]!)).toBeLessThan(1e-6);
        expect(trainer.actorOptimizer.lossScaling).toBeDefined();
      } else {
        expect(metrics["timing_s/old_log_prob"]).toBeUndefined();
        expect(metrics["actor/ppo_kl"]).toBeCloseTo(0.05, 4);
        expect(trainer.actorOptimizer.lossScaling).toBeUndefined();
      }
    }
  });

  it("weighs each token's policy-gradient term by the trajectories' importance weights", async () => {
    const run = async (weights: number | undefined) => {
      const actor = Qwen2Model.random(tiny, 3, cpu);
      const trainer = new StarPO({ actor, config: { actorLr: 1e-2, entropyCoeff: 0, weightDecay: 0 } });
      const batch = await contrastingBatch(actor);
      if (weights !== undefined)
        for (const t of batch.trajectories)
          t.importanceWeights = new Float32Array(t.tokens.length).fill(weights);
      const metrics = await trainer.update(batch);
      return { metrics, rewarded: await logProbOf(actor, PROMPT, REWARDED) };
    };
    const plain = await run(undefined);
    const ones = await run(1);
    expect(ones.rewarded).toBeCloseTo(plain.rewarded, 6);
    const halves = await run(0.5);
    expect(halves.metrics["actor/pg_loss"]).toBeCloseTo(plain.metrics["actor/pg_loss"]! / 2, 5);
    // Weight 0 removes the term: nothing moves the policy (no entropy bonus, KL or weight decay).
    const before = await logProbOf(Qwen2Model.random(tiny, 3, cpu), PROMPT, REWARDED);
    expect((await run(0)).rewarded).toBeCloseTo(before, 6);
  });

  it("trains actor and critic with GAE and reports finite metrics under RAGEN's names", async () => {
    const actor = Qwen2Model.random(tiny, 4, cpu);
    const critic = Qwen2ValueModel.random(tiny, 5, cpu);
    const trainer = new StarPO({
      actor,
      critic,
      config: { actorLr: 1e-2, criticLr: 1e-2, microBatchSize: 1 },
    });
    const before = await logProbOf(actor, PROMPT, REWARDED);
    const metrics = await trainer.update(await contrastingBatch(actor));
    expect(await logProbOf(actor, PROMPT, REWARDED)).toBeGreaterThan(before + 1e-3);
    for (const name of [
      "actor/pg_loss",
      "actor/pg_clipfrac",
      "actor/pg_clipfrac_lower",
      "actor/ppo_kl",
      "actor/entropy",
      "actor/grad_norm",
      "actor/lr",
      "critic/vf_loss",
      "critic/vf_clipfrac",
      "critic/vpred_mean",
      "critic/grad_norm",
      "critic/score/mean",
      "critic/rewards/mean",
      "critic/advantages/mean",
      "critic/returns/mean",
      "critic/values/mean",
      "critic/vf_explained_var",
      "rollout/in_group_std",
      "timing_s/values",
      "timing_s/adv",
      "timing_s/update_critic",
      "timing_s/update_actor",
      "timing_s/step",
    ]) {
      expect(metrics[name], name).toBeDefined();
      expect(Number.isFinite(metrics[name]), name).toBe(true);
    }
    expect(metrics["actor/skipped_steps"]).toBe(0);
  });

  it("keeps only the most uncertain groups with StarPO-S filtering", async () => {
    const actor = Qwen2Model.random(tiny, 6, cpu);
    const contrasting = await contrastingBatch(actor);
    // A second group whose two trajectories score alike: it carries no signal and is filtered out.
    const flat = flatGroupLike(contrasting.trajectories);
    const trainer = new StarPO({ actor, config: { uncertaintyFilter: true, rolloutFilterRatio: 0.5 } });
    const metrics = await trainer.update(batchOf([...flat, ...contrasting.trajectories]));
    expect(metrics["rollout/chosen_in_group_std"]).toBeCloseTo(Math.SQRT2, 5);
    expect(metrics["rollout/in_group_std"]).toBeCloseTo(Math.SQRT2 / 2, 5);
    expect(metrics["critic/score/min"]).toBe(-1);
  });
});

describe("StarPO's multi-env and warm-up options", () => {
  it("keeps every env in the batch with filterPerEnv, where ranking the whole batch drops one", async () => {
    const actor = Qwen2Model.random(tiny, 6, cpu);
    const contrasting = await contrastingBatch(actor);
    const flat = flatGroupLike(contrasting.trajectories, "Other");
    const batch = batchOf([...flat, ...contrasting.trajectories]);
    const options = { uncertaintyFilter: true, rolloutFilterRatio: 0.5 };
    const global = await new StarPO({ actor, config: options }).update(batch);
    expect(global["rollout/chosen_in_group_std"]).toBeCloseTo(Math.SQRT2, 5);
    const perEnv = await new StarPO({ actor, config: { ...options, filterPerEnv: true } }).update(batch);
    expect(perEnv["rollout/chosen_in_group_std"]).toBeCloseTo(Math.SQRT2 / 2, 5);
  });

  it("warms both learning rates up linearly over lrWarmupSteps optimiser steps", async () => {
    expect([0, 1, 2, 3, 4, 9].map((k) => warmupFactor(k, 4))).toEqual([0.2, 0.4, 0.6, 0.8, 1, 1]);
    expect(warmupFactor(0, 0)).toBe(1);
    const actor = Qwen2Model.random(tiny, 4, cpu);
    const critic = Qwen2ValueModel.random(tiny, 5, cpu);
    const config = {
      actorLr: 1e-2,
      criticLr: 2e-2,
      ppoMiniBatchSize: 1,
      microBatchSize: 1,
      lrWarmupSteps: 4,
    };
    const trainer = new StarPO({ actor, critic, config });
    // Two trajectories in mini-batches of one: two steps, the second at 2/5 of the rate.
    const metrics = await trainer.update(await contrastingBatch(actor));
    expect(trainer.actorOptimizer.steps).toBe(2);
    expect(metrics["actor/lr"]).toBeCloseTo(1e-2 * 0.4, 12);
    expect(trainer.criticOptimizer!.lr).toBeCloseTo(2e-2 * 0.4, 12);
    expect(() => new StarPO({ actor, config: { lrWarmupSteps: 1.5 } })).toThrow(/lrWarmupSteps/);
  });
});

describe("StarPO gradient over micro-batches", () => {
  /** Eight trajectories of different lengths and sampled-token counts, in two groups of four. */
  function unevenBatch(): TrajectoryBatch {
    const rows: Trajectory[] = [];
    for (let i = 0; i < 8; i++) {
      const length = 4 + ((i * 5) % 9); // 4 .. 12 tokens
      const tokens = Int32Array.from({ length }, (_, t) => (i * 7 + t * 3) % tiny.vocabSize);
      const lossMask = Uint8Array.from({ length }, (_, t) => (t >= 2 && (t + i) % 3 !== 0 ? 1 : 0));
      const oldLogProbs = Float32Array.from({ length }, (_, t) => (lossMask[t] ? -3.4 + 0.01 * t : 0));
      const tokenRewards = new Float32Array(length);
      tokenRewards[length - 1] = i % 3 === 0 ? 1 : i % 3 === 1 ? -0.5 : 0.25;
      rows.push(
        trajectory({ index: i, groupId: Math.floor(i / 4), tokens, lossMask, oldLogProbs, tokenRewards }),
      );
    }
    return batchOf(rows);
  }

  /** The actor's gradient at the first optimiser step of one update with `microBatchSize`. */
  async function firstGradient(microBatchSize: number): Promise<Float32Array[]> {
    const trainer = new StarPO({
      actor: Qwen2Model.random(tiny, 1, cpu),
      config: { advantageEstimator: "grpo", ppoMiniBatchSize: 8, microBatchSize, aggregation: "token-mean" },
    });
    const optimizer = trainer.actorOptimizer;
    const step = optimizer.step.bind(optimizer);
    const captured: Tensor[] = [];
    optimizer.step = () => {
      if (captured.length === 0) {
        for (const p of trainer.actor.parameters()) captured.push(noGrad(() => scale(p.grad!, 1)).keep());
      }
      return step();
    };
    await trainer.update(unevenBatch());
    const grads = await Promise.all(captured.map((g) => g.floats()));
    for (const g of captured) g.dispose();
    return grads;
  }

  it("is the same for micro-batches of 1, 2 and 8 rows (token-mean weighs every token alike)", async () => {
    const whole = await firstGradient(8);
    for (const micro of [1, 2]) {
      const split = await firstGradient(micro);
      for (const [i, g] of split.entries()) {
        for (let j = 0; j < g.length; j++) {
          expect(
            Math.abs(g[j]! - whole[i]![j]!),
            `micro ${micro}, parameter ${i}, element ${j}`,
          ).toBeLessThan(1e-6 + 1e-5 * Math.abs(whole[i]![j]!));
        }
      }
    }
  });
});

describe("StarPO's estimator, normalisation, KL, schedule and filter options", () => {
  it("trains rloo and reinforce_plus_plus without a critic; gae and bi_level_gae need one", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const critic = Qwen2ValueModel.random(tiny, 2, cpu);
    // One group scoring 1 and -1: RLOO gives R - the other's R; REINFORCE++ whitens the returns.
    const expected = { rloo: 2, reinforce_plus_plus: Math.SQRT1_2 } as const;
    for (const advantageEstimator of ["rloo", "reinforce_plus_plus"] as const) {
      const trainer = new StarPO({ actor, critic, config: { advantageEstimator } });
      expect(trainer.criticOptimizer).toBeUndefined();
      const metrics = await trainer.update(await contrastingBatch(actor));
      expect(metrics["critic/vf_loss"]).toBeUndefined();
      expect(metrics["critic/advantages/max"]).toBeCloseTo(expected[advantageEstimator], 4);
      expect(metrics["critic/advantages/min"]).toBeCloseTo(-expected[advantageEstimator], 4);
    }
    expect(() => new StarPO({ actor, config: { advantageEstimator: "bi_level_gae" } })).toThrow(
      /"bi_level_gae" needs a critic/,
    );
    const biLevel = new StarPO({ actor, critic, config: { advantageEstimator: "bi_level_gae" } });
    expect(biLevel.criticOptimizer).toBeDefined();
    const metrics = await biLevel.update(await contrastingBatch(actor));
    expect(Number.isFinite(metrics["critic/vf_loss"])).toBe(true);
  });

  it("GRPO divides by the group's std unless normAdvByStd is false (Dr. GRPO)", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const withStd = await new StarPO({ actor }).update(await contrastingBatch(actor));
    expect(withStd["critic/advantages/max"]).toBeCloseTo(1 / (Math.SQRT2 + 1e-6), 5);
    const drGrpo = await new StarPO({ actor, config: { normAdvByStd: false } }).update(
      await contrastingBatch(actor),
    );
    expect(drGrpo["critic/advantages/max"]).toBeCloseTo(1, 6);
  });

  it("normalises the rewards over the whole batch before filtering; the filter ranks the raw ones", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const contrasting = await contrastingBatch(actor);
    const batch = batchOf([...flatGroupLike(contrasting.trajectories), ...contrasting.trajectories]);
    const trainer = new StarPO({
      actor,
      config: {
        rewardNormGrouping: "batch",
        rewardNormMethod: "mean_std",
        uncertaintyFilter: true,
        rolloutFilterRatio: 0.5,
      },
    });
    const metrics = await trainer.update(batch);
    // Batch [0.5, 0.5, 1, -1]: mean 0.25, sample std sqrt(0.75); the contrasting group is kept.
    const std = Math.sqrt(0.75);
    expect(metrics["critic/rewards/max"]).toBeCloseTo(0.75 / (std + 1e-6), 5);
    expect(metrics["critic/rewards/min"]).toBeCloseTo(-1.25 / (std + 1e-6), 5);
    expect(metrics["critic/score/max"]).toBe(1);
    expect(metrics["rollout/chosen_in_group_std"]).toBeCloseTo(Math.SQRT2, 5);
  });

  it("puts the KL to the reference in the reward, its coefficient steered by the adaptive controller", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const reference = Qwen2Model.random(tiny, 8, cpu);
    expect(() => new StarPO({ actor, config: { klInReward: true } })).toThrow(/klInReward needs a reference/);
    expect(() => new StarPO({ actor, reference, config: { klInReward: true, klRewardCoeff: 0 } })).toThrow(
      /klRewardCoeff above 0/,
    );
    const config = {
      klInReward: true,
      klController: "adaptive",
      klHorizon: 10,
      klRewardCoeff: 0.05,
    } as const;
    const trainer = new StarPO({ actor, reference, config });
    const batch = await contrastingBatch(actor);
    const first = await trainer.update(batch);
    expect(first["actor/reward_kl_penalty_coeff"]).toBe(0.05);
    const kl = first["actor/reward_kl_penalty"]!;
    expect(Math.abs(kl)).toBeGreaterThan(1e-4);
    // The rewards 1 and -1 lose 0.05 x KL of their one sampled token.
    expect(first["critic/rewards/mean"]).toBeCloseTo(-0.05 * kl, 5);
    const error = Math.min(0.2, Math.max(-0.2, kl / 0.1 - 1));
    const moved = 0.05 * (1 + (error * 2) / 10);
    expect(trainer.state()).toEqual({ updates: 1, klRewardCoeff: moved });
    const second = await trainer.update(batch);
    expect(second["actor/reward_kl_penalty_coeff"]).toBe(moved);
  });

  it("keeps its update count and KL coefficient in state() and continues from loadState()", () => {
    const trainer = new StarPO({ actor: Qwen2Model.random(tiny, 3, cpu) });
    expect(trainer.state()).toEqual({ updates: 0, klRewardCoeff: 0.001 });
    trainer.loadState({ updates: 3, klRewardCoeff: 0.5 });
    expect(trainer.state()).toEqual({ updates: 3, klRewardCoeff: 0.5 });
    expect(() => trainer.loadState({ updates: -1 })).toThrow(/updates/);
    expect(() => trainer.loadState({ klRewardCoeff: Number.NaN })).toThrow(/klRewardCoeff/);
  });

  it("decays both learning rates along a cosine over totalUpdates, resumed where it left off", async () => {
    const actor = Qwen2Model.random(tiny, 4, cpu);
    const critic = Qwen2ValueModel.random(tiny, 5, cpu);
    expect(() => new StarPO({ actor, config: { lrSchedule: "cosine" } })).toThrow(/set totalUpdates/);
    expect(() => new StarPO({ actor, config: { lrWarmupRatio: 0.1 } })).toThrow(/set totalUpdates/);
    const config = {
      actorLr: 1e-2,
      criticLr: 2e-2,
      ppoMiniBatchSize: 1,
      microBatchSize: 1,
      lrSchedule: "cosine",
      totalUpdates: 2,
    } as const;
    const trainer = new StarPO({ actor, critic, config });
    const batch = await contrastingBatch(actor);
    // Two steps an update, four in the run: the second starts at a quarter of it, the fourth at 3/4.
    const first = await trainer.update(batch);
    const cosine = (share: number) => (1 + Math.cos(Math.PI * share)) / 2;
    expect(first["actor/lr"]).toBeCloseTo(1e-2 * cosine(0.25), 12);
    expect(first["critic/lr"]).toBeCloseTo(2e-2 * cosine(0.25), 12);
    const resumed = new StarPO({ actor, critic, config });
    resumed.loadState(trainer.state());
    expect((await resumed.update(batch))["actor/lr"]).toBeCloseTo(1e-2 * cosine(0.75), 12);
  });

  it("skips the optimiser steps when the filter keeps no group, and scales the loss by the kept share", async () => {
    const actor = Qwen2Model.random(tiny, 6, cpu);
    const contrasting = await contrastingBatch(actor);
    const flat = flatGroupLike(contrasting.trajectories);
    const empty = new StarPO({ actor, config: { uncertaintyFilter: true, filterIncludeZero: false } });
    const skipped = await empty.update(batchOf(flat));
    expect(skipped["rollout/filter_kept_count"]).toBe(0);
    expect(skipped["actor/pg_loss"]).toBeUndefined();
    expect(empty.actorOptimizer.steps).toBe(0);
    expect(empty.state().updates).toBe(1);

    const options = { uncertaintyFilter: true, rolloutFilterRatio: 0.5 } as const;
    const batch = batchOf([...flat, ...contrasting.trajectories]);
    const full = await new StarPO({ actor, config: options }).update(batch);
    const scaled = await new StarPO({ actor, config: { ...options, filterLossScaling: "linear" } }).update(
      batch,
    );
    expect(scaled["rollout/filter_kept_ratio"]).toBe(0.5);
    expect(scaled["critic/advantages/max"]).toBeCloseTo(full["critic/advantages/max"]! * 0.5, 6);
    const sqrt = await new StarPO({ actor, config: { ...options, filterLossScaling: "sqrt" } }).update(batch);
    expect(sqrt["critic/advantages/max"]).toBeCloseTo(full["critic/advantages/max"]! * Math.SQRT1_2, 6);
  });

  it("ranks groups by the actor's entropy or the response length with filterMetric", async () => {
    const actor = Qwen2Model.random(tiny, 6, cpu);
    const contrasting = await contrastingBatch(actor);
    const batch = batchOf([...flatGroupLike(contrasting.trajectories), ...contrasting.trajectories]);
    const options = { uncertaintyFilter: true, rolloutFilterRatio: 0.5, filterKeep: "lowest" } as const;
    const byEntropy = await new StarPO({ actor, config: { ...options, filterMetric: "entropy_std" } }).update(
      batch,
    );
    expect(byEntropy["timing_s/filter_entropy"]).toBeGreaterThanOrEqual(0);
    expect(byEntropy["rollout/filter_kept_count"]).toBe(1);
    // The flat group copies the contrasting one's tokens: the same entropies, no spread in either; the
    // first group in the batch wins the tie.
    expect(byEntropy["rollout/chosen_in_group_std"]).toBe(0);
    const byLength = await new StarPO({ actor, config: { ...options, filterMetric: "length" } }).update(
      batch,
    );
    expect(byLength["rollout/filter_kept_count"]).toBe(1);
    expect(
      () =>
        new StarPO({
          actor,
          config: { uncertaintyFilter: true, filterStrategy: "top_p", filterKeep: "lowest" },
        }),
    ).toThrow(/top_k or min_p/);
  });
});
