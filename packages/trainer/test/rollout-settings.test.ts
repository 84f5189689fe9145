/**
 * RAGEN's rollout-side settings through the training job: the history window, reward placement, the
 * context limit, top-p / top-k sampling and pass@k validation, each run end to end on a tiny model.
 */
import { ConfigError } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";
import { LocalModelPolicy, runRollout, type Trajectory, trainingRows } from "@ragen/rollout";
import { asyncScope, noGrad, webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import {
  checkSettingsFit,
  longestSequence,
  MemoryRunStorage,
  resolveSettings,
  rolloutOptions,
  SMOKE_RUN_SETTINGS,
  trainingManager,
  trainingSeed,
} from "../src/index.js";
import { memoryPolicyLoader, trainInMemory } from "./helpers/memory-policy.js";

/** Seconds-long runs that train every rollout (no filter) in one optimiser step. */
const SMOKE = [
  ...SMOKE_RUN_SETTINGS,
  "model=tiny",
  "steps=1",
  "starpo.uncertaintyFilter=false",
  "starpo.ppoMiniBatchSize=64",
  "starpo.microBatchSize=4",
];

const settingsOf = async (overrides: string[]) =>
  resolveSettings({ overrides: [...SMOKE, ...overrides], parameterCount: 1e5 });

async function train(overrides: string[]) {
  const { settings, sources } = await settingsOf(overrides);
  const storage = new MemoryRunStorage("run");
  await trainInMemory({ settings, sources }, storage);
  const records = (split: "train" | "val", step: number) =>
    storage.trajectories.filter((t) => t.split === split && t.step === step);
  return { settings, storage, step1: storage.rows[1]!.metrics, records };
}

/** The largest gap between the log-probs the actor gives the sampled tokens and the sampler's. */
async function worstLogProbGap(
  model: { sequenceLogProbs: LocalModelPolicy["model"]["sequenceLogProbs"] },
  t: Pick<Trajectory, "tokens" | "lossMask" | "oldLogProbs">,
  temperature: number,
): Promise<number> {
  const n = t.tokens.length - 1;
  const recomputed = await asyncScope(() =>
    noGrad(() =>
      model.sequenceLogProbs(
        { ids: t.tokens.subarray(0, n), batch: 1, seqLen: n },
        t.tokens.slice(1),
        temperature,
      ),
    ).logProbs.floats(),
  );
  let gap = 0;
  for (let i = 1; i <= n; i++)
    if (t.lossMask[i]) gap = Math.max(gap, Math.abs(recomputed[i - 1]! - t.oldLogProbs[i]!));
  return gap;
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

/** Each sampled token's return at gamma = 1 under a placement, from the turns' rewards. */
function expectedReturns(records: readonly TrajectoryRecord[], placement: "trajectory" | "turn"): number[] {
  return records.flatMap((r) =>
    r.turns.map((_, k) =>
      placement === "trajectory" ? r.totalReward : r.turns.slice(k).reduce((sum, t) => sum + t.reward, 0),
    ),
  );
}

describe("rollout.historyWindow through the job", () => {
  const WINDOW = ["envs=FrozenLake", "rollout.maxTurns=3", "rollout.historyWindow=1"];

  it("trains each turn after exactly the prompt it was sampled in: recomputed log-probs are the sampler's", async () => {
    const { settings } = await settingsOf(WINDOW);
    const storage = new MemoryRunStorage("window");
    const loaded = await memoryPolicyLoader(storage, settings.envs)("tiny", await webGpuBackend());
    const policy = new LocalModelPolicy(loaded.model, loaded.tokenizer, {
      prefixCaching: settings.rollout.prefixCaching,
    });
    const batch = await runRollout(
      trainingManager(settings),
      policy,
      loaded.tokenizer,
      rolloutOptions(settings, "train", trainingSeed(settings, 1)),
    );
    expect(batch.trajectories.every((t) => t.turns.length === 3)).toBe(true);
    const rows = trainingRows(batch.trajectories);
    expect(rows).toHaveLength(3 * batch.trajectories.length);
    const temperature = settings.rollout.temperature;
    for (const row of rows) expect(await worstLogProbGap(loaded.model, row, temperature)).toBeLessThan(1e-5);
    // The whole chat puts earlier turns before later responses, which their sampler never saw.
    const chatGaps = await Promise.all(
      batch.trajectories.map((t) => worstLogProbGap(loaded.model, t, temperature)),
    );
    expect(Math.max(...chatGaps)).toBeGreaterThan(1e-3);
    loaded.model.dispose();
  });

  it("starts the update on-policy (ppo_kl 0, nothing clipped), on sequences one turn long", async () => {
    const windowed = await train(WINDOW);
    // Trained on the whole chats instead, this batch's mean log-ratio is about 3e-5.
    expect(Math.abs(windowed.step1["actor/ppo_kl"]!)).toBeLessThan(5e-6);
    expect(windowed.step1["actor/pg_clipfrac"]).toBe(0);
    // The trained sequences are single turns: shorter than the 3-turn chats of a run without the window.
    const whole = await train(["envs=FrozenLake", "rollout.maxTurns=3"]);
    expect(windowed.step1["perf/max_sequence_length"]).toBeLessThan(whole.step1["perf/max_sequence_length"]!);
    expect(Math.abs(whole.step1["actor/ppo_kl"]!)).toBeLessThan(1e-5);
  });

  it("is refused with A*-PO, whose loss needs the whole episode as one sequence", async () => {
    await expect(settingsOf([...WINDOW, "algorithm=apo"])).rejects.toThrow(
      /rollout\.historyWindow[\s\S]*A\*-PO regresses one log-ratio/,
    );
    await expect(
      settingsOf(["rollout.maxTurns=3", "rollout.historyWindow=3", "algorithm=apo"]),
    ).resolves.toBeDefined();
  });
});

describe("rollout.rewardPlacement through the job", () => {
  it("gives each sampled token the return of its placement: the episode's reward, or the rewards from its turn on", async () => {
    for (const placement of ["trajectory", "turn"] as const) {
      const run = await train([
        "envs=FrozenLake",
        "rollout.maxTurns=3",
        `rollout.rewardPlacement=${placement}`,
      ]);
      expect(run.settings.rollout.rewardPlacement).toBe(placement);
      const returns = expectedReturns(run.records("train", 1), placement);
      // gamma = lambda = 1: GAE's returns are the rewards to go.
      expect(run.step1["critic/returns/max"]).toBeCloseTo(Math.max(...returns), 5);
      expect(run.step1["critic/returns/min"]).toBeCloseTo(Math.min(...returns), 5);
    }
  });
});

describe("rollout.maxSequenceLength and rollout.contextOverflow through the job", () => {
  /** A limit that holds every first turn (prompt and full response) and no second one. */
  async function oneTurnLimit(): Promise<number> {
    const { settings } = await settingsOf(["envs=FrozenLake", "rollout.maxTurns=1"]);
    const loaded = await memoryPolicyLoader(new MemoryRunStorage("x"), settings.envs)(
      "tiny",
      await webGpuBackend(),
    );
    const limit = longestSequence(settings, loaded.tokenizer) + 20;
    loaded.model.dispose();
    return limit;
  }

  it("truncate (the default) ends an episode before the turn that would pass the limit; error stops the run naming it", async () => {
    const limit = await oneTurnLimit();
    const base = ["envs=FrozenLake", "rollout.maxTurns=3", `rollout.maxSequenceLength=${limit}`];
    const truncated = await train(base);
    expect(truncated.settings.rollout.contextOverflow).toBe("truncate");
    for (const split of ["train", "val"] as const)
      for (const record of truncated.records(split, 1)) expect(record.turns).toHaveLength(1);
    expect(truncated.step1["perf/max_sequence_length"]).toBeLessThanOrEqual(limit);

    await expect(train([...base, "rollout.contextOverflow=error"])).rejects.toThrow(
      new RegExp(`FrozenLake env \\(seed \\d+\\), turn 2: .* context limit of ${limit} tokens`),
    );
  });

  it("defaults to RAGEN's max_model_len and must fit the model's positions and a response", async () => {
    const { settings, sources } = await settingsOf(["rollout.maxSequenceLength=5000"]);
    expect((await settingsOf([])).settings.rollout.maxSequenceLength).toBe(3600);
    const issue = (positions: number, s = settings) => {
      try {
        checkSettingsFit(s, { maxPositionEmbeddings: positions }, sources);
      } catch (error) {
        return (error as ConfigError).issues;
      }
      return [];
    };
    expect(issue(4096)).toMatchObject([
      {
        field: "rollout.maxSequenceLength",
        message: expect.stringMatching(
          /5000 is more than the 4096 positions .* rollout\.maxSequenceLength=4096/,
        ),
        source: "command line",
      },
    ]);
    expect(issue(8192)).toEqual([]);
    const long = (await settingsOf(["rollout.maxSequenceLength=500", "rollout.maxNewTokens=500"])).settings;
    expect(issue(8192, long)).toMatchObject([
      { field: "rollout.maxNewTokens", message: expect.stringMatching(/no room for a prompt/) },
    ]);
  });
});

describe("rollout.topP / topK and validation.topP / topK through the job", () => {
  it("samples only the most likely token at topK 1, and keeps the old log-probs of the whole softmax", async () => {
    const run = await train(["envs=Bandit", "rollout.topK=1", "validation.topK=1", "validation.samples=2"]);
    // Top-1 sampling is deterministic: the members of a group (one start state) answer alike...
    const byGroup = groupBy(run.records("train", 1), (r) => r.group);
    for (const members of byGroup.values())
      expect(new Set(members.map((m) => JSON.stringify(m.turns))).size).toBe(1);
    // ...and so do a validation seed's samples.
    const bySeed = groupBy(run.records("val", 1), (r) => r.seed);
    for (const samples of bySeed.values())
      expect(new Set(samples.map((m) => JSON.stringify(m.turns))).size).toBe(1);
    // Log-probs of the truncated distribution would be 0 here: the update would start far off-policy.
    expect(Math.abs(run.step1["actor/ppo_kl"]!)).toBeLessThan(1e-5);
  });

  it("passes each its own sampling", async () => {
    const { settings } = await settingsOf([
      "rollout.topP=0.9",
      "rollout.topK=40",
      "validation.topP=0.95",
      "validation.topK=0",
      "rollout.historyWindow=2",
    ]);
    expect(rolloutOptions(settings, "train", 7)).toMatchObject({
      temperature: 1,
      topP: 0.9,
      topK: 40,
      historyWindow: 2,
    });
    expect(rolloutOptions(settings, "val", 7)).toMatchObject({ temperature: 0.5, topP: 0.95, topK: 0 });
    // RAGEN's defaults: no cut, no window.
    const defaults = (await settingsOf([])).settings;
    expect(rolloutOptions(defaults, "train", 7)).toMatchObject({ topP: 1, topK: 0 });
    expect(rolloutOptions(defaults, "train", 7)).not.toHaveProperty("historyWindow");
    await expect(settingsOf(["rollout.topP=0"])).rejects.toThrow(ConfigError);
    await expect(settingsOf(["validation.topK=-1"])).rejects.toThrow(ConfigError);
  });
});

describe("validation.samples through the job", () => {
  it("plays each validation seed k times and logs val-env/<Tag>/pass@k", async () => {
    const run = await train(["envs=Bandit", "validation.samples=3", "validation.groupsPerEnv=2"]);
    for (const step of [0, 1]) {
      const records = run.records("val", step);
      expect(records).toHaveLength(6);
      expect([...groupBy(records, (r) => r.seed).values()].map((samples) => samples.length)).toEqual([3, 3]);
      const metrics = run.storage.rows[step]!.metrics;
      const solved = [...groupBy(records, (r) => r.seed).values()].map((s) =>
        Number(s.some((r) => r.success)),
      );
      expect(metrics["val-env/Bandit/pass@3"]).toBe(solved.reduce((a, b) => a + b, 0) / solved.length);
      expect(metrics["val-env/Bandit/success"]).toBe(records.filter((r) => r.success).length / 6);
      expect(metrics).not.toHaveProperty("val-env/Bandit/pass@1");
    }
    // One sample (RAGEN's default) logs pass@1.
    expect((await settingsOf([])).settings.validation.samples).toBe(1);
  });

  it("refuses several greedy samples, which would be one episode repeated", async () => {
    await expect(settingsOf(["validation.samples=2", "validation.temperature=0"])).rejects.toThrow(
      /validation\.samples[\s\S]*greedy samples/,
    );
  });
});
