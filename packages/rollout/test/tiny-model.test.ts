import { Qwen2Model } from "@ragen/models";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { EnvManager } from "../src/env-manager.js";
import { LocalModelPolicy } from "../src/local-model-policy.js";
import { runRollout } from "../src/rollout.js";
import { envTokenizer } from "./fixtures.js";

function tinyModel(vocabSize: number, seed = 1) {
  return Qwen2Model.random(
    {
      vocabSize,
      hiddenSize: 32,
      intermediateSize: 64,
      numHiddenLayers: 1,
      numAttentionHeads: 4,
      numKeyValueHeads: 2,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      tieWordEmbeddings: true,
      initializerRange: 0.3,
    },
    seed,
    createCpuBackend(),
  );
}

describe("prefix caching in LocalModelPolicy", () => {
  it("plays the same trajectories as recomputing every prompt, running the model on a fraction of the tokens", async () => {
    const tokenizer = envTokenizer(320);
    const model = tinyModel(tokenizer.vocabSize, 4);
    const play = async (policy: LocalModelPolicy) => {
      const manager = new EnvManager({
        envGroups: 3,
        groupSize: 1,
        tags: [{ tag: "FrozenLake", nGroups: 3 }],
      });
      return runRollout(manager, policy, tokenizer, { maxTurns: 3, maxNewTokens: 6, seed: 2 });
    };
    const cachedPolicy = new LocalModelPolicy(model, tokenizer);
    const cached = await play(cachedPolicy);
    const fresh = await play(new LocalModelPolicy(model, tokenizer, { prefixCaching: false }));
    expect(cached.trajectories.map((t) => Array.from(t.tokens))).toEqual(
      fresh.trajectories.map((t) => Array.from(t.tokens)),
    );
    const stats = cachedPolicy.prefixCache!.stats;
    // Turn 1 computes every prompt whole; turns 2 and 3 reuse them.
    expect(stats.reusedTokens).toBeGreaterThan(stats.computedTokens);
    // The cache is dropped at the end of the rollout: the next one may run with other weights.
    expect(cachedPolicy.prefixCache!.match([cached.trajectories[0]!.tokens])[0]!.length).toBe(0);
  });
});

describe("prefill passes in LocalModelPolicy", () => {
  it("plays the same trajectories prefilling one prompt per pass, and hands generate its setting", async () => {
    const tokenizer = envTokenizer(320);
    const model = tinyModel(tokenizer.vocabSize, 5);
    const play = (policy: LocalModelPolicy) =>
      runRollout(
        new EnvManager({ envGroups: 3, groupSize: 2, tags: [{ tag: "FrozenLake", nGroups: 3 }] }),
        policy,
        tokenizer,
        { maxTurns: 2, maxNewTokens: 6, seed: 3 },
      );
    const whole = await play(new LocalModelPolicy(model, tokenizer));
    const oneByOne = await play(new LocalModelPolicy(model, tokenizer, { prefillTokens: 1 }));
    expect(oneByOne.trajectories.map((t) => Array.from(t.tokens))).toEqual(
      whole.trajectories.map((t) => Array.from(t.tokens)),
    );
    await expect(play(new LocalModelPolicy(model, tokenizer, { prefillTokens: 0 }))).rejects.toThrow(
      /prefillTokens must be a positive integer, got 0/,
    );
  });
});

describe("a 2-turn FrozenLake rollout with a tiny random Qwen2 model", () => {
  it("runs end to end on the CPU backend and turns nonsense into format penalties", async () => {
    const tokenizer = envTokenizer(320);
    const model = Qwen2Model.random(
      {
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 32,
        intermediateSize: 64,
        numHiddenLayers: 1,
        numAttentionHeads: 4,
        numKeyValueHeads: 2,
        rmsNormEps: 1e-6,
        ropeTheta: 10000,
        tieWordEmbeddings: true,
      },
      1,
      createCpuBackend(),
    );
    const manager = new EnvManager({ envGroups: 2, groupSize: 2, tags: [{ tag: "FrozenLake", nGroups: 2 }] });
    const batch = await runRollout(manager, new LocalModelPolicy(model, tokenizer), tokenizer, {
      maxTurns: 2,
      maxNewTokens: 8,
      seed: 1,
    });
    expect(batch.trajectories).toHaveLength(4);
    for (const t of batch.trajectories) {
      expect(t.turns).toHaveLength(2);
      const sampled = t.lossMask.reduce((n, m) => n + m, 0);
      expect(sampled).toBe(t.responseLength);
      expect(sampled).toBeGreaterThan(0);
      // Real sampling log-probs on sampled tokens, zero elsewhere.
      t.lossMask.forEach((m, i) => {
        if (m === 1) expect(t.oldLogProbs[i]).toBeLessThanOrEqual(0);
        else expect(t.oldLogProbs[i]).toBe(0);
      });
      expect(t.turns.every((turn) => turn.formatPenalized)).toBe(true);
      expect(t.reward).toBeCloseTo(-0.2);
    }
    expect(batch.metrics["train/FrozenLake/success"]).toBe(0);
  });
});
