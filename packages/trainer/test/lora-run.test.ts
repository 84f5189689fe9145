/**
 * LoRA through the training job on a storage in memory: the settings, one model in memory (the
 * reference is the actor with its adapters off), adapters-only checkpoints, and a resume that goes on
 * exactly as an uninterrupted run.
 */
import { ConfigError } from "@ragen/envs";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import {
  MemoryRunStorage,
  type PolicyLoader,
  resolveSettings,
  runTraining,
  SMOKE_RUN_SETTINGS,
} from "../src/index.js";
import { memoryPolicyLoader } from "./helpers/memory-policy.js";

const SMOKE = [...SMOKE_RUN_SETTINGS, "validation.every=2", "envs=Bandit", "model=tiny"];
const LORA = ["lora.rank=4", "lora.alpha=8"];

/** Metrics that measure time or memory rather than what was learned. */
const measured = (key: string) =>
  key.startsWith("timing_s/") || ["perf/time_per_step", "perf/throughput", "perf/max_memory"].includes(key);
const learned = (metrics: Record<string, number>) =>
  Object.fromEntries(Object.entries(metrics).filter(([key]) => !measured(key)));

/** Trains on `storage`; returns the names the loader was asked for (one per model loaded). */
async function train(storage: MemoryRunStorage, overrides: string[]): Promise<string[]> {
  const { settings, sources } = await resolveSettings({
    overrides: [...SMOKE, ...overrides],
    parameterCount: 1e5,
  });
  const loaded: string[] = [];
  const loader = memoryPolicyLoader(storage, settings.envs);
  const counting: PolicyLoader = (name, backend) => {
    loaded.push(name);
    return loader(name, backend);
  };
  await runTraining({
    settings,
    sources,
    backend: await webGpuBackend(),
    storage,
    loadPolicy: counting,
    say: () => {},
  });
  return loaded;
}

const trainTrajectories = (storage: MemoryRunStorage, step: number) =>
  storage.trajectories.filter((t) => t.split === "train" && t.step === step);

describe("LoRA settings", () => {
  it("are off by default, RAGEN's alpha and modules otherwise; LoRA runs get RAGEN's LoRA learning rate", async () => {
    const defaults = await resolveSettings({ parameterCount: 5e8 });
    expect(defaults.settings.lora).toEqual({
      rank: 0,
      alpha: 64,
      targetModules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
      critic: true,
    });
    expect(defaults.settings.starpo.actorLr).toBe(1e-6);
    const lora = await resolveSettings({ parameterCount: 5e8, overrides: ["lora.rank=64"] });
    expect(lora.settings.starpo.actorLr).toBe(1e-5);
    expect(lora.sources["starpo.actorLr"]).toBe("profile lora");
    // The small-model profile keeps its own rates; the command line wins over both.
    const small = await resolveSettings({ parameterCount: 1e5, overrides: ["lora.rank=8"] });
    expect(small.settings.starpo.actorLr).toBe(2.5e-4);
    const mine = await resolveSettings({
      parameterCount: 5e8,
      overrides: ["lora.rank=64", "starpo.actorLr=3e-5"],
    });
    expect(mine.settings.starpo.actorLr).toBe(3e-5);
  });

  it("read targetModules as a list or all-linear, and refuse a module that does not exist or a negative rank", async () => {
    const some = await resolveSettings({ overrides: ["lora.rank=8", "lora.targetModules=q_proj,v_proj"] });
    expect(some.settings.lora.targetModules).toEqual(["q_proj", "v_proj"]);
    const all = await resolveSettings({ overrides: ["lora.targetModules=all-linear"] });
    expect(all.settings.lora.targetModules).toHaveLength(7);
    const bad = await resolveSettings({ overrides: ["lora.targetModules=q_proj,wq"] }).catch(
      (e: unknown) => e,
    );
    expect(bad).toBeInstanceOf(ConfigError);
    expect(String(bad)).toMatch(/lora\.targetModules/);
    expect(String(bad)).toMatch(/down_proj/);
    await expect(resolveSettings({ overrides: ["lora.rank=-1"] })).rejects.toThrow(
      /lora\.rank: must be >= 0/,
    );
    await expect(resolveSettings({ overrides: ["lora.alpha=0"] })).rejects.toThrow(/lora\.alpha/);
  });
});

describe("a LoRA run through the job (storage in memory)", () => {
  it("loads one model, keeps adapters in its checkpoints and resumes exactly where a straight run would be", async () => {
    // GAE with a LoRA critic and the small-model profile's KL term: the reference is the actor itself.
    const straight = new MemoryRunStorage("straight");
    expect(await train(straight, [...LORA, "steps=3"])).toEqual(["tiny"]);
    expect(straight.rows.map((row) => row.step)).toEqual([0, 1, 2, 3]);
    const step3 = straight.rows[3]!.metrics;
    expect(step3["critic/vf_loss"]).toBeTypeOf("number");
    // After two updates the adapters have moved away from the base: the KL to it is no longer 0.
    expect(Math.abs(step3["actor/kl_loss"]!)).toBeGreaterThan(0);
    const checkpoint = straight.findCheckpoint()!;
    expect(checkpoint.state.lora).toEqual({
      rank: 4,
      alpha: 8,
      targets: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
      critic: true,
    });
    // Adapters alone: no actor of its own, the critic's adapters and its score head.
    expect(straight.actors.size).toBe(0);
    const actorAdapters = await checkpoint.loadAdapters!("actor");
    expect([...actorAdapters.keys()].every((name) => /\.lora_[AB]\.weight$/.test(name))).toBe(true);
    const criticTensors = [...(await checkpoint.loadAdapters!("critic")).keys()];
    expect(criticTensors).toContain("score.weight");
    expect(criticTensors.filter((name) => name.includes("lora_"))).toHaveLength(actorAdapters.size);

    const resumed = new MemoryRunStorage("resumed");
    await train(resumed, [...LORA, "steps=2"]);
    expect(await train(resumed, [...LORA, "steps=3"])).toEqual(["tiny"]);
    expect(resumed.rows.map((row) => row.step)).toEqual([0, 1, 2, 3]);
    expect(learned(resumed.rows[3]!.metrics)).toEqual(learned(step3));
    expect(trainTrajectories(resumed, 3)).toEqual(trainTrajectories(straight, 3));
  });

  it("refuses to resume with other adapters, or a LoRA run without them and the other way round", async () => {
    const storage = new MemoryRunStorage("lora");
    await train(storage, [...LORA, "steps=1", "starpo.advantageEstimator=grpo"]);
    await expect(
      train(storage, ["lora.rank=8", "steps=2", "starpo.advantageEstimator=grpo"]),
    ).rejects.toThrow(/other adapters \(rank 4, alpha 8\); resume it with lora\.rank=4 lora\.alpha=8/);
    await expect(train(storage, ["steps=2", "starpo.advantageEstimator=grpo"])).rejects.toThrow(
      /holds a LoRA run \(rank 4\)/,
    );
    const full = new MemoryRunStorage("full");
    await train(full, ["steps=1", "starpo.advantageEstimator=grpo"]);
    await expect(train(full, [...LORA, "steps=2", "starpo.advantageEstimator=grpo"])).rejects.toThrow(
      /trains every weight; resume it with lora\.rank=0/,
    );
  });

  it("trains A*-PO with LoRA on one model: stage 1 samples the start model, the actor with its adapters off", async () => {
    const storage = new MemoryRunStorage("apo");
    expect(await train(storage, [...LORA, "steps=1", "algorithm=apo"])).toEqual(["tiny"]);
    expect(storage.rows[1]!.metrics["vstar/mean"]).toBeTypeOf("number");
    expect(storage.rows[1]!.metrics["actor/apo_loss"]).toBeTypeOf("number");
    expect(storage.findCheckpoint()!.state.lora?.rank).toBe(4);
  });
});
