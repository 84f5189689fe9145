/**
 * The learner side of remote rollouts without servers: the settings and the errors that refuse them,
 * the staleness filter, the truncated importance weight, the correction an update trains on, and the
 * adapter versions the behaviour log-probs are recomputed under. The runs against a served model are in
 * packages/cli/test/remote-rollouts.test.ts.
 */
import { ConfigError } from "@ragen/envs";
import { Qwen2Model, type Qwen2Shape } from "@ragen/models";
import type { Trajectory } from "@ragen/rollout";
import { createCpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import {
  AdapterVersions,
  adapterNameFor,
  correctForSampler,
  freshTrajectories,
  LIBRARY_DEFAULTS,
  MemoryRunStorage,
  resolveSettings,
  runTraining,
  SMOKE_RUN_SETTINGS,
  settingsHelp,
  targetLogProbs,
  truncatedImportanceWeights,
} from "../src/index.js";
import { memoryPolicyLoader } from "./helpers/memory-policy.js";

const REMOTE = ["rollout.engine=vllm", "rollout.servers=http://10.0.0.5:8000,http://10.0.0.6:8000"];

/** The ConfigError resolving `overrides` throws, as "field: message" lines. */
async function refusal(overrides: string[]): Promise<string[]> {
  const error = await resolveSettings({ overrides, parameterCount: 5e8 }).catch((e) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).issues.map((issue) => `${issue.field}: ${issue.message}`);
}

describe("remote rollout settings", () => {
  it("default to the local engine, k = 1, C = 2 and shared storage, which change nothing", async () => {
    const { settings, sources } = await resolveSettings({ parameterCount: 5e8 });
    expect(settings.rollout).toMatchObject({
      engine: "local",
      servers: null,
      servedModel: null,
      maxStaleness: 1,
      importanceCap: 2,
      adapterPath: "{localPath}",
    });
    expect(sources["rollout.engine"]).toBe("default");
    expect(LIBRARY_DEFAULTS.rollout.importanceCap).toBe(2);
    for (const field of ["engine", "servers", "servedModel", "maxStaleness", "importanceCap", "adapterPath"])
      expect(settingsHelp("ragen train")).toContain(`rollout.${field}`);
  });

  it("read servers as a list and take a LoRA run to vLLM or SGLang", async () => {
    const { settings } = await resolveSettings({
      overrides: [...REMOTE, "lora.rank=64", "rollout.maxStaleness=0", "rollout.servedModel=qwen"],
      parameterCount: 5e8,
    });
    expect(settings.rollout.servers).toEqual(["http://10.0.0.5:8000", "http://10.0.0.6:8000"]);
    expect(settings.rollout.maxStaleness).toBe(0);
    expect(settings.rollout.servedModel).toBe("qwen");
    const sglang = await resolveSettings({
      overrides: ["rollout.engine=sglang", "rollout.servers=http://10.0.0.7:30000", "lora.rank=8"],
      parameterCount: 5e8,
    });
    expect(sglang.settings.rollout.engine).toBe("sglang");
  });

  it("refuse a remote engine without LoRA, saying why, and without servers, naming the command line", async () => {
    const issues = await refusal(["rollout.engine=vllm"]);
    expect(issues).toHaveLength(2);
    expect(issues[0]).toMatch(/^rollout\.servers: .*rollout\.servers=http/);
    expect(issues[1]).toMatch(/^lora\.rank: 0 with rollout\.engine=vllm/);
    expect(issues[1]).toContain("only adapters can be swapped into a running server");
    // The issue points where the refused value was written.
    const error = (await resolveSettings({
      overrides: [...REMOTE, "lora.rank=0"],
      parameterCount: 5e8,
    }).catch((e) => e)) as ConfigError;
    expect(error.issues[0]!.source).toBe("command line");
  });

  it("refuse A*-PO with a remote engine", async () => {
    const issues = await refusal([...REMOTE, "lora.rank=8", "algorithm=apo"]);
    expect(issues).toEqual([expect.stringMatching(/^algorithm: apo with rollout\.engine=vllm: A\*-PO/)]);
  });

  it("bound the staleness, the cap and the servers' URLs", async () => {
    expect(await refusal(["rollout.maxStaleness=-1"])).toEqual([
      expect.stringMatching(/^rollout\.maxStaleness/),
    ]);
    const cap = await refusal(["rollout.importanceCap=0.5"]);
    expect(cap).toEqual([
      expect.stringMatching(/^rollout\.importanceCap: .*shrink the tokens on which the engines agree/),
    ]);
    expect(await refusal([...REMOTE.slice(0, 1), "rollout.servers=10.0.0.5:8000", "lora.rank=8"])).toEqual([
      expect.stringMatching(/^rollout\.servers/),
    ]);
    expect(await refusal(["rollout.engine=ray"])).toEqual([expect.stringMatching(/^rollout\.engine/)]);
  });

  it("are refused by runTraining too when built in code, and need a storage with folders", async () => {
    const { settings } = await resolveSettings({
      overrides: [...SMOKE_RUN_SETTINGS, "model=tiny", "envs=Bandit", "steps=1"],
      parameterCount: 1e5,
    });
    const storage = new MemoryRunStorage("memory-run");
    const run = (rollout: Partial<typeof settings.rollout>, lora = settings.lora) =>
      runTraining({
        settings: { ...settings, rollout: { ...settings.rollout, ...rollout }, lora },
        backend: {} as never,
        storage,
        loadPolicy: memoryPolicyLoader(storage, settings.envs),
        say: () => {},
      });
    await expect(run({ engine: "vllm", servers: ["http://127.0.0.1:9"] })).rejects.toThrow(
      /lora\.rank: 0 with rollout\.engine=vllm/,
    );
    // With adapters, a storage in memory has no folder a server could load them from.
    await expect(
      runTraining({
        settings: {
          ...settings,
          rollout: { ...settings.rollout, engine: "vllm", servers: ["http://127.0.0.1:9"] },
          lora: { ...settings.lora, rank: 4, alpha: 8 },
        },
        backend: await webGpuBackend(),
        storage,
        loadPolicy: memoryPolicyLoader(storage, settings.envs),
        say: () => {},
      }),
    ).rejects.toThrow(/memory-run has no folders/);
  });
});

/** A trajectory of `tokens` whose positions 2 and 3 were sampled, with the sampler's log-probs `mu` there. */
function sampled(fields: Partial<Trajectory> & { mu?: [number, number] } = {}): Trajectory {
  const { mu = [-1, -2], ...rest } = fields;
  return {
    index: 0,
    groupId: 0,
    tag: "Bandit",
    seed: 0,
    tokens: Int32Array.from([3, 5, 7, 9, 2]),
    lossMask: Uint8Array.from([0, 0, 1, 1, 0]),
    oldLogProbs: Float32Array.from([0, 0, mu[0], mu[1], 0]),
    tokenRewards: Float32Array.from([0, 0, 0, 1, 0]),
    reward: 1,
    turns: [],
    success: true,
    numActions: 1,
    actionIsValid: 1,
    actionIsEffective: 1,
    responseLength: 2,
    finishReason: "done",
    ...rest,
  };
}

describe("the staleness filter", () => {
  it("keeps trajectories at most k versions behind the learner and counts the others", () => {
    const batch = [0, 1, 2, 3].map((v) => sampled({ index: v, policyVersion: v }));
    const { kept, dropped } = freshTrajectories(batch, 3, 1);
    expect(kept.map((t) => t.policyVersion)).toEqual([2, 3]);
    expect(dropped).toBe(2);
    expect(freshTrajectories(batch, 3, 0).kept.map((t) => t.policyVersion)).toEqual([3]);
    // Without a version a trajectory is the learner's own.
    expect(freshTrajectories([sampled()], 7, 0).dropped).toBe(0);
  });
});

describe("the truncated importance weight", () => {
  it("is min(π/μ, C) on sampled tokens, 1 elsewhere and where the server gave no log-prob", () => {
    const mask = Uint8Array.from([0, 1, 1, 1, 1]);
    const behaviour = Float32Array.from([0, -1, -1, -0.5, -3]);
    // π/μ: e^0 = 1, e^1 ≈ 2.72 (capped at 2), e^-0.5 ≈ 0.61; the last token's μ is NaN.
    const mu = Float32Array.from([0, -1, -2, 0, Number.NaN]);
    const weights = truncatedImportanceWeights(mask, behaviour, mu, 2);
    expect(Array.from(weights)).toEqual([1, 1, 2, expect.closeTo(Math.exp(-0.5), 6), 1]);
    expect(truncatedImportanceWeights(mask, behaviour, mu, 3)[2]).toBeCloseTo(Math.E, 5);
  });

  it("makes the rows an update trains on: π_v as old log-probs, the weights, the mismatch metrics", async () => {
    // Learner at version 3, k = 1: version 1 is too old; versions 2 and 3 are recomputed under their own.
    const batch = [
      sampled({ index: 0, policyVersion: 3, mu: [-1, -2] }),
      sampled({ index: 1, policyVersion: 2, mu: [-0.5, -0.5] }),
      sampled({ index: 2, policyVersion: 1 }),
    ];
    const asked: number[] = [];
    const { rows, metrics } = await correctForSampler(batch, {
      learnerVersion: 3,
      maxStaleness: 1,
      importanceCap: 2,
      behaviourLogProbs: async (version, group) => {
        asked.push(version);
        // Aligned to targets: positions 1 and 2 predict the sampled tokens 2 and 3.
        return group.map(() => Float32Array.from([0, -1, version === 3 ? -1 : -2, 0]));
      },
    });
    expect(asked).toEqual([2, 3]);
    expect(rows.map((r) => r.index)).toEqual([0, 1]);
    expect(Array.from(rows[0]!.oldLogProbs)).toEqual([0, 0, -1, -1, 0]);
    // Row 0: π/μ = e^0, e^1 → 1, 2 (capped). Row 1: e^-0.5, e^-1.5.
    expect(Array.from(rows[0]!.importanceWeights!)).toEqual([1, 1, 1, 2, 1]);
    expect(rows[1]!.importanceWeights![2]).toBeCloseTo(Math.exp(-0.5), 6);
    expect(rows[1]!.importanceWeights![3]).toBeCloseTo(Math.exp(-1.5), 6);
    expect(metrics["rollout/stale_dropped"]).toBe(1);
    expect(metrics["rollout/logprob_mismatch_max"]).toBeCloseTo(1.5, 6);
    expect(metrics["rollout/logprob_mismatch_mean"]).toBeCloseTo((0 + 1 + 0.5 + 1.5) / 4, 6);
    expect(metrics["rollout/importance_weight_capped"]).toBeCloseTo(1 / 4, 6);
    expect(metrics["rollout/staleness"]).toBeCloseTo(0.5, 6);
    // The sampler's log-probs stay in the batch for the records; the rows are new objects.
    expect(batch[0]!.oldLogProbs[3]).toBe(-2);
  });
});

describe("AdapterVersions", () => {
  const tiny: Qwen2Shape = {
    vocabSize: 16,
    hiddenSize: 8,
    intermediateSize: 16,
    numHiddenLayers: 1,
    numAttentionHeads: 2,
    numKeyValueHeads: 1,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
    initializerRange: 0.2,
  };

  it("recomputes log-probs under a kept version and puts the newest back exactly", async () => {
    const model = Qwen2Model.random(tiny, 1, createCpuBackend());
    const adapters = model.attachLora({ rank: 2, alpha: 4, seed: 3 });
    const versions = new AdapterVersions(adapters);
    const row = [sampled({ tokens: Int32Array.from([1, 2, 3, 4, 5]) })];
    const logProbs = async () => (await targetLogProbs(model, row, 4, 1))[0]!;
    await versions.record(0, 0);
    const atZero = await logProbs();
    // "Train": move every adapter weight, then record version 1 (k = 1 keeps version 0).
    adapters.load(
      new Map(
        [...(await adapters.stateDict())].map(([name, v]) => [
          name,
          v.map((x, i) => x + 0.05 * ((i % 3) - 1)),
        ]),
      ),
    );
    await versions.record(1, 0);
    const atOne = await logProbs();
    expect(Math.max(...atOne.map((x, i) => Math.abs(x - atZero[i]!)))).toBeGreaterThan(1e-4);
    expect(await versions.withVersion(0, logProbs)).toEqual(atZero);
    expect(await logProbs()).toEqual(atOne);
    // Version 2 with k = 1 forgets version 0: a trajectory that old cannot be recomputed.
    await versions.record(2, 1);
    expect(versions.versions()).toEqual([1, 2]);
    await expect(versions.withVersion(0, logProbs)).rejects.toThrow(/adapter version 0 is not kept/);
  });
});

describe("adapterNameFor", () => {
  it("names a run's adapter by its folder, told apart from folders of the same name", () => {
    expect(adapterNameFor("runs/quest")).toMatch(/^quest-[0-9a-f]{8}$/);
    expect(adapterNameFor("runs/quest")).not.toBe(adapterNameFor("other/quest"));
    expect(adapterNameFor("/tmp/a b@c/")).toMatch(/^a-b-c-[0-9a-f]{8}$/);
  });
});
