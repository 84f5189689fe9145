/**
 * Training runs for the StarPO settings' tests: a few steps of `ragen train` kept in memory, on the
 * embedded model (whose Bandit answers differ within a group) or the random tiny one, and the numbers
 * the tests recompute from the runs' own trajectories.
 */
import type { TrajectoryRecord } from "@ragen/logging";
import { Qwen2Model } from "@ragen/models";
import { type Backend, webGpuBackend } from "@ragen/tensor-webgpu";
import {
  MemoryRunStorage,
  type PolicyLoader,
  resolveSettings,
  runTraining,
  SMOKE_RUN_SETTINGS,
} from "../../src/index.js";
import { loadPolicy } from "../../src/node.js";
import { memoryPolicyLoader } from "./memory-policy.js";

/**
 * The embedded model answers Bandit well enough that a group's rewards differ (0 or 0.1): two groups of
 * four, one optimiser step per mini-batch of four, no filter and no warm-up unless a test sets them.
 */
export const BANDIT = [
  ...SMOKE_RUN_SETTINGS,
  "envs=Bandit",
  "model=embedded",
  "train.groupSize=4",
  "starpo.ppoMiniBatchSize=4",
  "starpo.microBatchSize=4",
  "rollout.maxNewTokens=24",
  "starpo.uncertaintyFilter=false",
  "starpo.lrWarmupSteps=0",
  "validation.every=10",
];

export async function train(
  overrides: string[],
  options: { storage?: MemoryRunStorage; tiny?: boolean } = {},
) {
  const storage = options.storage ?? new MemoryRunStorage("starpo-options");
  const base = options.tiny ? [...SMOKE_RUN_SETTINGS, "envs=Bandit", "model=tiny"] : BANDIT;
  const { settings, sources } = await resolveSettings({
    overrides: [...base, ...overrides],
    parameterCount: 1e6,
  });
  const loader = options.tiny ? memoryPolicyLoader(storage, settings.envs) : embeddedLoader(storage);
  await runTraining({
    settings,
    sources,
    backend: await webGpuBackend(),
    storage,
    loadPolicy: loader,
    say: () => {},
  });
  return { storage, metrics: (step: number) => storage.rows.find((row) => row.step === step)!.metrics };
}

/** The embedded model, or a checkpoint of it that the storage keeps (a resumed run's actor). */
function embeddedLoader(storage: MemoryRunStorage): PolicyLoader {
  return async (name: string, backend: Backend) => {
    const saved = storage.actors.get(name);
    const embedded = await loadPolicy(saved ? "embedded" : name, backend);
    if (!saved) return embedded;
    embedded.model.dispose();
    return { ...embedded, model: Qwen2Model.fromWeights(embedded.config, saved, backend), source: name };
  };
}

export const trained = (storage: MemoryRunStorage, step: number): TrajectoryRecord[] =>
  storage.trajectories.filter((t) => t.split === "train" && t.step === step);

/** Per trajectory, `advantage(reward, the other rewards of its group)`; the min and max of them. */
export function perGroup(
  records: readonly TrajectoryRecord[],
  advantage: (r: number, others: number[]) => number,
) {
  const values = records.map((t, i) =>
    advantage(
      t.totalReward,
      records.filter((o, j) => j !== i && o.group === t.group).map((o) => o.totalReward),
    ),
  );
  return { max: Math.max(...values), min: Math.min(...values) };
}

export const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** Bessel-corrected, as the filter measures a group's spread. */
export const sampleStd = (xs: readonly number[]) =>
  Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1));

/** Metrics that measure time rather than what was learned. */
export const learned = (metrics: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(metrics).filter(([key]) => !key.startsWith("timing_s/") && !key.startsWith("perf/")),
  );
