import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { DEFAULT_PREFILL_TOKENS, estimateTrainingMemory, QWEN2_5_0_5B_INSTRUCT_CONFIG } from "@ragen/models";
import type { WebGpuBackend } from "@ragen/tensor-webgpu";
import { Tokenizer } from "@ragen/tokenizer";
import { describe, expect, it } from "vitest";
import {
  checkMemoryFit,
  localPolicyOptions,
  longestSequence,
  MemoryRunStorage,
  resolveSettings,
  SMOKE_RUN_SETTINGS,
  trainingMemoryOptions,
} from "../src/index.js";
import { deviceMemoryBudget, EMBEDDED_MODEL_DIR } from "../src/node.js";
import { trainInMemory } from "./helpers/memory-policy.js";

const GiB = 2 ** 30;
const tokenizer = Tokenizer.fromFiles(
  readFileSync(join(EMBEDDED_MODEL_DIR, "tokenizer.json"), "utf8"),
  readFileSync(join(EMBEDDED_MODEL_DIR, "tokenizer_config.json"), "utf8"),
);
const settingsFor = async (overrides: string[]) =>
  (await resolveSettings({ overrides, parameterCount: 494_032_768 })).settings;

describe("longestSequence", () => {
  it("grows by a full response and the next state's text per turn, for a one-action env too", async () => {
    const bandit = await settingsFor(["envs=Bandit", "rollout.maxNewTokens=40", "rollout.maxTurns=1"]);
    const banditLonger = await settingsFor(["envs=Bandit", "rollout.maxNewTokens=80", "rollout.maxTurns=1"]);
    expect(longestSequence(banditLonger, tokenizer) - longestSequence(bandit, tokenizer)).toBe(40);
    // A turn that names no action spends none of Bandit's one-action budget: every turn can be played.
    const bandit3 = await settingsFor(["envs=Bandit", "rollout.maxNewTokens=40", "rollout.maxTurns=3"]);
    expect(longestSequence(bandit3, tokenizer)).toBeGreaterThan(longestSequence(bandit, tokenizer) + 2 * 40);
    const lake1 = await settingsFor(["envs=FrozenLake", "rollout.maxNewTokens=40", "rollout.maxTurns=1"]);
    const lake3 = await settingsFor(["envs=FrozenLake", "rollout.maxNewTokens=40", "rollout.maxTurns=3"]);
    const perTurn = (longestSequence(lake3, tokenizer) - longestSequence(lake1, tokenizer)) / 2;
    // A further turn holds a response of 40 tokens and the state's text besides.
    expect(perTurn).toBeGreaterThan(40 + 16);
    // Two envs: the longer one's.
    const both = await settingsFor([
      "envs=FrozenLake,Bandit",
      "rollout.maxNewTokens=40",
      "rollout.maxTurns=3",
    ]);
    expect(longestSequence(both, tokenizer)).toBe(
      Math.max(longestSequence(lake3, tokenizer), longestSequence(bandit3, tokenizer)),
    );
  });
});

describe("trainingMemoryOptions", () => {
  it("reads the batches, the critic, LoRA and the reference from the settings", async () => {
    const ragen = await settingsFor(["profile=ragen"]);
    expect(trainingMemoryOptions(ragen, 1000)).toMatchObject({
      microBatch: 4,
      batch: 32,
      seqLen: 1000,
      critic: true,
      referenceModel: false,
      rollout: { batch: 128, promptLength: 600, newTokens: 400 },
    });
    const kl = trainingMemoryOptions({ ...ragen, starpo: { ...ragen.starpo, klCoeff: 0.01 } }, 1000);
    expect(kl.referenceModel).toBe(true);
    // With LoRA the reference is the base model with its adapters off: no second copy.
    const lora = trainingMemoryOptions(
      { ...ragen, starpo: { ...ragen.starpo, klCoeff: 0.01 }, lora: { rank: 64 } },
      1000,
    );
    expect(lora).toMatchObject({ referenceModel: false, lora: { rank: 64 } });
    const grpo = await settingsFor(["profile=ragen", "starpo.advantageEstimator=grpo"]);
    expect(trainingMemoryOptions(grpo, 1000).critic).toBe(false);
    // f16: half the weights' and gradients' bytes, f32 masters; f16 activations (attention's in f32).
    const half = await settingsFor(["profile=ragen", "precision=f16"]);
    expect(trainingMemoryOptions(half, 1000)).toMatchObject({
      weights: "f16",
      gradients: "f16",
      activations: "f16",
    });
    const [full, mixed] = [ragen, half].map((s) =>
      estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, trainingMemoryOptions(s, 1000)),
    );
    expect(mixed!.bytes.weights).toBe(full!.bytes.weights / 2);
    expect(mixed!.bytes.masterWeights).toBe(full!.bytes.weights);
    expect(mixed!.bytes.gradients).toBe(full!.bytes.gradients / 2);
    expect(mixed!.bytes.logits).toBe(full!.bytes.logits / 2);
    // Generation runs on the f16 weights, with an f16 KV cache.
    expect(mixed!.bytes.kvCache).toBe(full!.bytes.kvCache / 2);
    expect(mixed!.bytes.packedWeights).toBe(full!.bytes.packedWeights / 2);
  });

  it("counts the rollout's prefill passes of rollout.prefillTokens, which the local engine is given", async () => {
    const ragen = await settingsFor(["profile=ragen"]);
    expect(trainingMemoryOptions(ragen, 1000).rollout?.prefillTokens).toBe(DEFAULT_PREFILL_TOKENS);
    const small = await settingsFor(["profile=ragen", "rollout.prefillTokens=2048"]);
    expect(trainingMemoryOptions(small, 1000).rollout?.prefillTokens).toBe(2048);
    const peak = (s: typeof ragen) =>
      estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, trainingMemoryOptions(s, 1000)).rolloutPeak;
    expect(peak(small)).toBeLessThan(peak(ragen));
    expect(localPolicyOptions(small.rollout)).toEqual({
      prefixCaching: true,
      seedPerPrompt: false,
      prefillTokens: 2048,
    });
    await expect(settingsFor(["rollout.prefillTokens=0"])).rejects.toThrow(/rollout\.prefillTokens/);
  });
});

describe("checkMemoryFit", () => {
  it("refuses a full fine-tune of Qwen2.5-0.5B in 12 GiB, naming the estimate and settings that fit", async () => {
    const ragen = await settingsFor([
      "profile=ragen",
      "envs=Bandit",
      "train.envGroups=1",
      "train.groupSize=2",
    ]);
    const attempt = () =>
      checkMemoryFit(ragen, QWEN2_5_0_5B_INSTRUCT_CONFIG, 1024, 12 * GiB, "deviceMemoryGiB");
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (error) {
      const issue = (error as ConfigError).issues[0]!;
      expect(issue.field).toBe("deviceMemoryGiB");
      expect(issue.message).toMatch(/needs about \d+\.\d GiB of device memory/);
      expect(issue.message).toMatch(/deviceMemoryGiB allows 12\.0 GiB/);
      expect(issue.message).toMatch(/settings that fit: lora\.rank=64 lora\.critic=true/);
    }
    // What it suggests does fit.
    const withLora = { ...ragen, lora: { rank: 64, critic: true } };
    expect(checkMemoryFit(withLora, QWEN2_5_0_5B_INSTRUCT_CONFIG, 1024, 12 * GiB, "x").peak).toBeLessThan(
      12 * GiB,
    );
  });
});

describe("deviceMemoryBudget", () => {
  const adapter = (isSoftware: boolean) =>
    ({ ctx: { info: { adapter: { isSoftware } } } }) as unknown as WebGpuBackend;
  it("takes deviceMemoryGiB, else three quarters of the host on a software adapter, else nothing", () => {
    expect(deviceMemoryBudget({ deviceMemoryGiB: 80 }, adapter(false))).toEqual({
      bytes: 80 * GiB,
      source: "deviceMemoryGiB",
    });
    expect(deviceMemoryBudget({ deviceMemoryGiB: null }, adapter(true), 24 * GiB)?.bytes).toBe(18 * GiB);
    expect(deviceMemoryBudget({ deviceMemoryGiB: null }, adapter(false))).toBeUndefined();
  });
});

describe("a run that does not fit", () => {
  it("stops at start-up, before any rollout or record", async () => {
    const storage = new MemoryRunStorage("too-small");
    const { settings, sources } = await resolveSettings({
      overrides: [...SMOKE_RUN_SETTINGS, "envs=Bandit", "model=tiny"],
      parameterCount: 1e5,
    });
    const run = trainInMemory({ settings, sources }, storage, {
      deviceMemory: { bytes: 1024, source: "deviceMemoryGiB" },
    });
    await expect(run).rejects.toThrow(/deviceMemoryGiB allows 0\.0 GiB/);
    expect(storage.rows).toHaveLength(0);
    expect(storage.trajectories).toHaveLength(0);
  });
});
