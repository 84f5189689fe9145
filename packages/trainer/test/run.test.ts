import { webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { MemoryRunStorage, resolveSettings, runTraining, SMOKE_RUN_SETTINGS } from "../src/index.js";
import { memoryPolicyLoader, trainInMemory } from "./helpers/memory-policy.js";

/** Settings that make a run take seconds on a software GPU. */
const SMOKE = [...SMOKE_RUN_SETTINGS, "validation.every=2", "envs=Bandit", "model=tiny"];

/** Metrics that measure time or memory rather than what was learned. */
const measured = (key: string) =>
  key.startsWith("timing_s/") || ["perf/time_per_step", "perf/throughput", "perf/max_memory"].includes(key);
const learned = (metrics: Record<string, number>) =>
  Object.fromEntries(Object.entries(metrics).filter(([key]) => !measured(key)));

async function train(storage: MemoryRunStorage, overrides: string[]) {
  const { settings, sources } = await resolveSettings({
    overrides: [...SMOKE, ...overrides],
    parameterCount: 1e5,
  });
  return trainInMemory({ settings, sources }, storage);
}

describe("runTraining on a storage in memory (no files: the browser path)", () => {
  it("logs, validates, checkpoints and resumes exactly where a straight run would be", async () => {
    const straight = new MemoryRunStorage("straight");
    const summary = await train(straight, ["steps=3"]);
    expect(summary.steps).toBe(3);
    expect(straight.rows.map((row) => row.step)).toEqual([0, 1, 2, 3]);
    expect(straight.rows[0]!.metrics["val-env/Bandit/success"]).toBeGreaterThanOrEqual(0);
    expect(straight.rows[2]!.metrics["val-env/Bandit/success"]).toBeDefined();
    expect(straight.rows[1]!.metrics["actor/pg_loss"]).toBeTypeOf("number");
    expect(straight.trajectories.filter((t) => t.split === "train")).toHaveLength(3 * 4);
    expect(straight.report).toMatch(/<html/i);
    const saved = straight.readJson("config.json") as {
      settings: { steps: number };
      sources: Record<string, string>;
    };
    expect(saved.settings.steps).toBe(3);
    expect(saved.sources.steps).toBe("command line");
    expect(straight.readJson("summary.json")).toMatchObject({ steps: 3 });

    const resumed = new MemoryRunStorage("resumed");
    await train(resumed, ["steps=2"]);
    await train(resumed, ["steps=3"]);
    expect(resumed.rows.map((row) => row.step)).toEqual([0, 1, 2, 3]);
    expect(learned(resumed.rows[3]!.metrics)).toEqual(learned(straight.rows[3]!.metrics));
  });

  it("trains in f16 mixed precision: loss-scaled f16 actor and critic, resumed exactly where a straight run would be", async () => {
    const straight = new MemoryRunStorage("f16-straight");
    await train(straight, ["steps=2", "precision=f16", "starpo.klCoeff=0.01"]);
    const step = straight.rows[2]!.metrics;
    expect(step["actor/loss_scale"]).toBeGreaterThan(0);
    expect(step["critic/loss_scale"]).toBeGreaterThan(0);
    expect(step["actor/pg_loss"]).toBeTypeOf("number");
    expect(Number.isFinite(step["critic/vf_loss"])).toBe(true);
    const saved = straight.readJson("config.json") as { settings: { precision: string } };
    expect(saved.settings.precision).toBe("f16");

    const resumed = new MemoryRunStorage("f16-resumed");
    await train(resumed, ["steps=1", "precision=f16", "starpo.klCoeff=0.01"]);
    await train(resumed, ["steps=2", "precision=f16", "starpo.klCoeff=0.01"]);
    expect(learned(resumed.rows[2]!.metrics)).toEqual(learned(step));
  });

  it("trains with A*-PO, its V* cache kept in the storage", async () => {
    const storage = new MemoryRunStorage("apo");
    const summary = await train(storage, ["steps=1", "algorithm=apo"]);
    expect(summary.steps).toBe(1);
    expect(storage.rows[1]!.metrics["vstar/mean"]).toBeTypeOf("number");
  });

  it("refuses to overwrite a run it was told not to resume", async () => {
    const storage = new MemoryRunStorage("taken");
    await train(storage, ["steps=0"]);
    await expect(train(storage, ["steps=1", "resume=false"])).rejects.toThrow(/already holds a run/);
  });

  it("checks the loaded model's positions before anything is rolled out (a Hub model's config is only read then)", async () => {
    const storage = new MemoryRunStorage("too-long");
    const { settings, sources } = await resolveSettings({
      overrides: [...SMOKE, "rollout.maxNewTokens=5000", "rollout.maxTurns=2"],
      parameterCount: 1e5,
    });
    const loader = memoryPolicyLoader(storage, settings.envs);
    const error = await runTraining({
      settings,
      sources,
      backend: await webGpuBackend(),
      storage,
      loadPolicy: async (name, backend) => {
        const loaded = await loader(name, backend);
        return { ...loaded, config: { ...loaded.config, maxPositionEmbeddings: 4096 } };
      },
      say: () => {},
    }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/rollout\.maxNewTokens[\s\S]*10000 response tokens[\s\S]*places 4096/);
    expect(storage.rows).toHaveLength(0);
  });
});
