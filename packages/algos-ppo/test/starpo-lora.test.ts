import { Qwen2Model, type Qwen2Shape, Qwen2ValueModel } from "@ragen/models";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { asyncScope, createCpuBackend, noGrad } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { StarPO } from "../src/starpo.js";

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
const LORA = { rank: 4, alpha: 8, seed: 1 };

const PROMPT = [3, 5, 7];
const REWARDED = 9;
const PUNISHED = 11;

function trajectory(index: number, sampled: number, reward: number, oldLogProb: number): Trajectory {
  return {
    index,
    groupId: 0,
    tag: "Test",
    seed: 0,
    reward,
    turns: [],
    success: reward > 0,
    numActions: 1,
    actionIsValid: 1,
    actionIsEffective: 1,
    responseLength: 1,
    finishReason: "done",
    tokens: Int32Array.from([...PROMPT, sampled]),
    lossMask: Uint8Array.from([0, 0, 0, 1]),
    oldLogProbs: Float32Array.from([0, 0, 0, oldLogProb]),
    tokenRewards: Float32Array.from([0, 0, 0, reward]),
  };
}

/** Log-probs of every position of PROMPT + `next` under `model` (no gradients). */
async function logProbs(model: Qwen2Model, next: number): Promise<Float32Array> {
  const ids = Int32Array.from([...PROMPT, next]);
  const targets = Int32Array.from([...PROMPT.slice(1), next, 0]);
  return asyncScope(async () =>
    noGrad(() => model.sequenceLogProbs({ ids, batch: 1, seqLen: ids.length }, targets)).logProbs.floats(),
  );
}

const logProbOf = async (model: Qwen2Model, token: number) => (await logProbs(model, token))[2]!;

/** One group: the rewarded token scores 1, the punished one -1, sampled at the actor's own log-probs. */
async function contrastingBatch(actor: Qwen2Model): Promise<TrajectoryBatch> {
  return {
    mode: "train",
    trajectories: [
      trajectory(0, REWARDED, 1, await logProbOf(actor, REWARDED)),
      trajectory(1, PUNISHED, -1, await logProbOf(actor, PUNISHED)),
    ],
    metrics: {},
  };
}

async function weightsOf(model: Qwen2Model): Promise<Map<string, Float32Array>> {
  return model.stateDict();
}

describe("StarPO with LoRA adapters", () => {
  it("raises the rewarded token's log-prob through the adapters alone, leaving every base weight bit for bit", async () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    const base = await weightsOf(actor);
    actor.attachLora(LORA);
    const critic = await Qwen2ValueModel.fromPolicy(actor, 5);
    critic.backbone.attachLora({ ...LORA, seed: 2 });
    const criticBase = await critic.backbone.stateDict();
    const trainer = new StarPO({
      actor,
      critic,
      reference: actor,
      config: { actorLr: 1e-2, criticLr: 1e-2, klCoeff: 0.1, microBatchSize: 1 },
    });
    const before = await logProbOf(actor, REWARDED);
    const metrics = await trainer.update(await contrastingBatch(actor));
    expect(await logProbOf(actor, REWARDED)).toBeGreaterThan(before + 1e-3);
    expect(metrics["critic/vf_loss"]).toBeTypeOf("number");
    // Only the adapters (and the critic's head) are optimised.
    expect(trainer.actorOptimizer.params).toEqual(actor.adapters!.parameters());
    expect(trainer.criticOptimizer!.params).toEqual(critic.parameters());
    expect(critic.parameters()).toHaveLength(critic.backbone.adapters!.parameters().length + 2);
    expect(await weightsOf(actor)).toEqual(base);
    expect(await critic.backbone.stateDict()).toEqual(criticBase);
    trainer.dispose();
  });

  it("takes the actor as its own reference: the base model with the adapters off, the same as a frozen copy", async () => {
    // Two identical actors; one is its own reference, the other has a frozen copy of the start model.
    const own = Qwen2Model.random(tiny, 3, cpu);
    const copied = Qwen2Model.random(tiny, 3, cpu);
    const frozen = Qwen2Model.random(tiny, 3, cpu);
    own.attachLora(LORA);
    copied.attachLora(LORA);
    const config = { actorLr: 1e-2, klCoeff: 0.1, klInReward: true, klRewardCoeff: 0.05 };
    const ownTrainer = new StarPO({ actor: own, reference: own, config });
    const copiedTrainer = new StarPO({ actor: copied, reference: frozen, config });
    for (let update = 0; update < 2; update++) {
      const ownMetrics = await ownTrainer.update(await contrastingBatch(own));
      const copiedMetrics = await copiedTrainer.update(await contrastingBatch(copied));
      const learned = (m: Record<string, number>) =>
        Object.fromEntries(Object.entries(m).filter(([key]) => !key.startsWith("timing_s/")));
      expect(learned(ownMetrics)).toEqual(learned(copiedMetrics));
      // After the first update the adapters have moved, so a reference that kept them on would read 0.
      if (update === 1) {
        expect(Math.abs(ownMetrics["actor/kl_loss"]!)).toBeGreaterThan(1e-6);
        expect(Math.abs(ownMetrics["actor/reward_kl_penalty"]!)).toBeGreaterThan(1e-6);
      }
    }
    // The reference's log-probs: the trained actor with its adapters off gives the base model's exactly.
    expect(await own.withoutAdapters(() => logProbs(own, REWARDED))).toEqual(
      await logProbs(frozen, REWARDED),
    );
    expect(await logProbs(own, REWARDED)).not.toEqual(await logProbs(frozen, REWARDED));
    ownTrainer.dispose();
    copiedTrainer.dispose();
  });

  it("refuses the actor as its own reference when it has no adapters (the KL would always be 0)", () => {
    const actor = Qwen2Model.random(tiny, 3, cpu);
    expect(() => new StarPO({ actor, reference: actor, config: { klCoeff: 0.1 } })).toThrow(
      /own reference only with LoRA adapters/,
    );
  });
});
