import { webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it, vi } from "vitest";

// An update whose loss is NaN from the second step on, as a diverged run's would be.
const losses = vi.hoisted(() => ({ updates: 0 }));
vi.mock("../src/run/updaters.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../src/run/updaters.js")>()),
  createUpdater: async () => ({
    critic: undefined,
    optimizers: {},
    beforeStep: async () => ({}),
    update: async () => {
      losses.updates++;
      return { "actor/pg_loss": losses.updates === 1 ? 0.5 : Number.NaN, "actor/entropy": 1 };
    },
    dispose: () => {},
  }),
}));

const { MemoryRunStorage, resolveSettings, runTraining, SMOKE_RUN_SETTINGS } = await import(
  "../src/index.js"
);
const { memoryPolicyLoader } = await import("./helpers/memory-policy.js");

/** A smoke run of 10 steps on Bandit with `extra` settings, whose updates the mock makes non-finite. */
async function runWithLosses(name: string, extra: string[] = []) {
  losses.updates = 0;
  const storage = new MemoryRunStorage(name);
  const { settings } = await resolveSettings({
    overrides: [
      ...SMOKE_RUN_SETTINGS,
      "validation.every=100",
      "envs=Bandit",
      "model=tiny",
      "steps=10",
      ...extra,
    ],
    parameterCount: 1e5,
  });
  const run = runTraining({
    settings,
    backend: await webGpuBackend(),
    storage,
    loadPolicy: memoryPolicyLoader(storage, settings.envs),
    say: () => {},
  });
  return { storage, run };
}

describe("a run whose loss stays non-finite", () => {
  it("stops after 3 steps in a row, naming the step and the metric", async () => {
    const { storage, run } = await runWithLosses("nan");
    await expect(run).rejects.toThrow(/step 4: actor\/pg_loss = NaN .*not been finite for 3 steps in a row/);
    // Steps 2 and 3 (one non-finite step at a time) were logged as before.
    expect(storage.rows.map((row) => row.step)).toEqual([0, 1, 2, 3]);
  });

  it("on f16 weights, also names f16's range and precision=f32", async () => {
    const { run } = await runWithLosses("nan-f16", ["precision=f16"]);
    await expect(run).rejects.toThrow(
      /not been finite for 3 steps in a row.*f16's range \(65504\).*precision=f32 avoids it/,
    );
  });
});
