import type { Qwen2Model } from "@ragen/models";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { asyncScope, noGrad } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { ASTARPO_BOUNDS, AStarPO } from "../src/astar-po.js";
import { frozenCopy, tinyModel, trajectory } from "./fixtures.js";

const batchOf = (trajectories: Trajectory[]): TrajectoryBatch => ({
  mode: "train",
  trajectories,
  metrics: {},
});

const PROMPT = [3, 5, 7];

/** Sum of the log-probs `model` gives the sampled tokens of `t`. */
async function sampledLogProb(model: Qwen2Model, t: Trajectory): Promise<number> {
  const n = t.tokens.length - 1;
  const logProbs = await asyncScope(async () => {
    const out = noGrad(() =>
      model.sequenceLogProbs({ ids: t.tokens.subarray(0, n), batch: 1, seqLen: n }, t.tokens.slice(1)),
    );
    return out.logProbs.floats();
  });
  let total = 0;
  for (let i = 0; i < n; i++) if (t.lossMask[i + 1]) total += logProbs[i]!;
  return total;
}

/**
 * Two start states: one whose trajectory beat its V̂* (r − V = +0.5), one that fell short (−0.5). The
 * first has two sampled tokens and a template token after them, so rows differ in length.
 */
function contrastingBatch(): { batch: TrajectoryBatch; vstar: Map<number, number> } {
  const good = trajectory({
    seed: 1,
    tokens: Int32Array.from([...PROMPT, 9, 10, 2]),
    lossMask: Uint8Array.from([0, 0, 0, 1, 1, 0]),
    reward: 1,
  });
  const bad = trajectory({
    seed: 2,
    tokens: Int32Array.from([...PROMPT, 11]),
    lossMask: Uint8Array.from([0, 0, 0, 1]),
    reward: 0,
  });
  return {
    batch: batchOf([good, bad]),
    vstar: new Map([
      [1, 0.5],
      [2, 0.5],
    ]),
  };
}

describe("AStarPO", () => {
  it("uses the paper's defaults and checks its config", async () => {
    const actor = tinyModel(32, 1);
    const reference = await frozenCopy(actor);
    const trainer = new AStarPO({ actor, reference });
    expect(trainer.config).toMatchObject({
      beta2: 1e-3,
      entropyCoeff: 0.001,
      lr: 1e-6,
      maxGradNorm: 1,
      temperature: 1,
      vstarRefreshEvery: 0,
    });
    expect(trainer.optimizer.lr).toBe(1e-6);
    expect(() => new AStarPO({ actor, reference: actor })).toThrow(/frozen copy/);
    expect(() => new AStarPO({ actor, reference, config: { microBatchSize: 0 } })).toThrow(/microBatchSize/);
    expect(() => new AStarPO({ actor, reference, config: { beta2: 0 } })).toThrow(/beta2/);
    // Before stage 1 samples anything: the update's log-probs divide by the temperature.
    expect(() => new AStarPO({ actor, reference, config: { temperature: 0 } })).toThrow(
      /temperature must be > 0, got 0/,
    );
    expect(() => new AStarPO({ actor, reference, config: { lr: -1 } })).toThrow(/lr must be > 0/);
    expect(ASTARPO_BOUNDS.temperature).toEqual({ exclusiveMinimum: 0 });
  });

  it("names the start state a trajectory has no V̂* for", async () => {
    const actor = tinyModel(32, 1);
    const trainer = new AStarPO({ actor, reference: await frozenCopy(actor) });
    const { batch } = contrastingBatch();
    await expect(trainer.update(batch, (t) => (t.seed === 1 ? 0.5 : undefined))).rejects.toThrow(
      /no V\* estimate for start state Test:2/,
    );
  });

  it("refuses an episode a history window split into several training sequences", async () => {
    const actor = tinyModel(32, 1);
    const trainer = new AStarPO({ actor, reference: await frozenCopy(actor) });
    const { batch, vstar } = contrastingBatch();
    const [good, bad] = batch.trajectories as [Trajectory, Trajectory];
    const sequence = { ...good, firstTurn: 0, lastTurn: 0 };
    const split = { ...good, trainingSequences: [sequence, { ...sequence, firstTurn: 1, lastTurn: 1 }] };
    await expect(trainer.update(batchOf([bad, split]), (t) => vstar.get(t.seed))).rejects.toThrow(
      /Test:1\) was sampled with a history window that dropped turns/,
    );
  });

  it("lowers the loss on a fixed batch, moving log π/π_ref towards (r − V̂*) / beta2, reference untouched", async () => {
    const actor = tinyModel(32, 3);
    const reference = await frozenCopy(actor);
    const referenceWeights = await reference.stateDict();
    const trainer = new AStarPO({
      actor,
      reference,
      config: { beta2: 0.5, lr: 1e-2, entropyCoeff: 0, microBatchSize: 1, miniBatchSize: 2 },
    });
    const { batch, vstar } = contrastingBatch();
    const [good, bad] = batch.trajectories as [Trajectory, Trajectory];
    const before = [await sampledLogProb(actor, good), await sampledLogProb(actor, bad)];
    const losses: number[] = [];
    for (let step = 0; step < 6; step++) {
      const metrics = await trainer.update(batch, (t) => vstar.get(t.seed));
      // The loss metric is taken before the step, so step k reports the loss after k updates.
      losses.push(metrics["actor/apo_loss"]!);
      expect(metrics["actor/skipped_steps"]).toBe(0);
      expect(Number.isFinite(metrics["actor/grad_norm"])).toBe(true);
      expect(metrics["critic/score/max"]).toBe(Math.max(...batch.trajectories.map((t) => t.reward)));
    }
    // Before any step the log-ratio is 0, so the loss is the mean of (r − V̂*)² = 0.25.
    expect(losses[0]).toBeCloseTo(0.25, 5);
    expect(losses.at(-1)!).toBeLessThan(0.5 * losses[0]!);
    const after = [await sampledLogProb(actor, good), await sampledLogProb(actor, bad)];
    expect(after[0]).toBeGreaterThan(before[0]!);
    expect(after[1]).toBeLessThan(before[1]!);
    for (const [name, weights] of await reference.stateDict()) {
      expect(weights, name).toEqual(referenceWeights.get(name));
    }
    expect(trainer.updateCount).toBe(6);
    expect(trainer.optimizer.steps).toBe(6);
    trainer.dispose();
  });

  it("flags a V̂* refresh only when the experimental switch is on", async () => {
    const actor = tinyModel(32, 4);
    const reference = await frozenCopy(actor);
    const { batch, vstar } = contrastingBatch();
    const off = new AStarPO({ actor, reference });
    const on = new AStarPO({ actor, reference, config: { vstarRefreshEvery: 2 } });
    const due: boolean[] = [];
    for (let step = 0; step < 4; step++) {
      await off.update(batch, (t) => vstar.get(t.seed));
      await on.update(batch, (t) => vstar.get(t.seed));
      expect(off.vstarRefreshDue).toBe(false);
      due.push(on.vstarRefreshDue);
    }
    expect(due).toEqual([false, true, false, true]);
  });
});
