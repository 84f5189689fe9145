/**
 * Eval-only: a model — a run folder, its checkpoint, a Hugging Face folder, "embedded" or a Hub id — plays
 * the validation seeds exactly as the training job validates (same envs, seeds, sampling and code), beside
 * the oracle and random baselines on the same seeds. The metrics, every trajectory, a summary and the
 * HTML report go to the out folder; an earlier evaluation there is replaced.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { ConfigError } from "@ragen/envs";
import { formatPercent, textTable } from "@ragen/logging";
import { RunLogger, TrajectoryLog, writeFileAtomic, writeReport } from "@ragen/logging/node";
import { LocalModelPolicy } from "@ragen/rollout";
import { type Backend, webGpuBackend } from "@ragen/tensor-webgpu";
import { type EnvBaselines, measureBaselines } from "../run/baselines.js";
import {
  actionBudget,
  localPolicyOptions,
  validate,
  validationEnvs,
  validationManager,
  validationSeeds,
} from "../run/validation.js";
import { EMBEDDED_MODEL, type TrainingSettings } from "../settings/fields.js";
import { CHECKPOINT_DIR, checkpointActorDir, findCheckpoint } from "./checkpoint-files.js";
import { loadPolicy } from "./load-policy.js";
import { acquireRunLock } from "./run-lock.js";
import { prepareRunFolder } from "./storage.js";

export interface EvalRow {
  env: string;
  /** Actions per episode (the env's budget, or fewer when the turns run out). */
  budget: number;
  random: number;
  success: number;
  /** Standard error of the success over the validation seeds. */
  stderr: number;
  oracle: number;
}

export interface EvalSummary {
  /** The model as named, and the folder its weights were read from. */
  model: string;
  weights: string;
  rows: EvalRow[];
  wallSeconds: number;
  report: string;
}

const SUMMARY_FILE = "summary.json";
const CONFIG_FILE = "config.json";

/**
 * The model folder to load for `reference`: a run folder or a `checkpoint/` folder means the actor of
 * its checkpoint; anything else (a Hugging Face folder, "embedded", a Hub id) is loaded as it is.
 */
export function evalModelSource(reference: string): string {
  if (reference === EMBEDDED_MODEL || !existsSync(reference)) return reference;
  const run = findCheckpoint(reference);
  if (run) return checkpointActorDir(run.dir);
  if (basename(reference) === CHECKPOINT_DIR && existsSync(join(reference, "state.json")))
    return checkpointActorDir(reference);
  return reference;
}

/**
 * What in `dir` shows that a training run keeps it — its checkpoint (or a swap's halves) or its
 * config.json of `{ settings, sources }` — or undefined for a fresh folder or an earlier evaluation.
 * (A lock is not a mark: evaluations take it too, and a live one is refused when the eval takes it.)
 */
export function trainingRunMark(dir: string): string | undefined {
  const marks = [CHECKPOINT_DIR, `${CHECKPOINT_DIR}.previous`, `${CHECKPOINT_DIR}.partial`];
  const found = marks.find((name) => existsSync(join(dir, name)));
  if (found) return join(dir, found);
  const configPath = join(dir, CONFIG_FILE);
  if (!existsSync(configPath)) return undefined;
  try {
    const saved = JSON.parse(readFileSync(configPath, "utf8")) as Record<string, unknown> | null;
    return saved && typeof saved === "object" && "settings" in saved && "sources" in saved
      ? configPath
      : undefined;
  } catch {
    return undefined;
  }
}

/** An evaluation replaces its out folder's logs, so it must never be pointed at a training run. */
function refuseTrainingRunFolder(config: TrainingSettings): void {
  const mark = trainingRunMark(config.outDir);
  if (!mark) return;
  const sameAsModel = existsSync(config.model) && resolve(config.model) === resolve(config.outDir);
  throw new ConfigError("eval settings", [
    {
      field: "outDir",
      message: `${config.outDir} holds a training run (${mark}); an evaluation there would replace its metrics and trajectories${sameAsModel ? " — the model is read from it, the results must go elsewhere" : ""}; pass outDir=<another folder>`,
    },
  ]);
}

export async function runEval(config: TrainingSettings, backend?: Backend): Promise<EvalSummary> {
  const start = performance.now();
  const { outDir } = config;
  refuseTrainingRunFolder(config);
  prepareRunFolder(outDir);
  // Like a training run, an evaluation holds its folder: a second one (or a run started there) would
  // interleave their logs.
  const lock = acquireRunLock(outDir);
  try {
    return await evaluateInLockedFolder(config, backend, start);
  } finally {
    lock.release();
  }
}

async function evaluateInLockedFolder(
  config: TrainingSettings,
  backend: Backend | undefined,
  start: number,
): Promise<EvalSummary> {
  const baselines = validationEnvs(config).map((env) =>
    measureBaselines(env, validationSeeds(config, env), actionBudget(config, env), process.stderr),
  );
  if (backend) return evaluateOnDevice(config, backend, baselines, start);
  // A device acquired here is released at once: one process may evaluate many checkpoints.
  const device = await webGpuBackend();
  try {
    return await evaluateOnDevice(config, device, baselines, start);
  } finally {
    device.destroy();
  }
}

async function evaluateOnDevice(
  config: TrainingSettings,
  backend: Backend,
  baselines: readonly EnvBaselines[],
  start: number,
): Promise<EvalSummary> {
  const { outDir } = config;
  const loaded = await loadPolicy(evalModelSource(config.model), backend);
  const logger = new RunLogger(outDir, { resumeAfterStep: -1, console: null, wandb: null });
  const trajectories = new TrajectoryLog(outDir, { resumeAfterStep: -1 });
  let metrics: Record<string, number>;
  try {
    const policy = new LocalModelPolicy(loaded.model, loaded.tokenizer, localPolicyOptions(config.rollout));
    const result = await validate(
      validationManager(config),
      policy,
      loaded.tokenizer,
      config,
      0,
      process.stderr,
    );
    trajectories.append(...result.records);
    logger.log(0, result.metrics);
    metrics = result.metrics;
  } finally {
    trajectories.close();
    await logger.close();
    loaded.model.dispose();
  }
  writeFileAtomic(join(outDir, CONFIG_FILE), `${JSON.stringify(config, null, 2)}\n`);
  const summary: EvalSummary = {
    model: config.model,
    weights: loaded.source,
    rows: evalRows(baselines, metrics, config.validation.groupsPerEnv),
    report: writeReport(outDir, { title: `Evaluation — ${config.model}` }),
    wallSeconds: (performance.now() - start) / 1000,
  };
  writeFileAtomic(join(outDir, SUMMARY_FILE), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

function evalRows(baselines: readonly EnvBaselines[], metrics: Record<string, number>, n: number): EvalRow[] {
  return baselines.map((b) => {
    const success = metrics[`val-env/${b.env}/success`] ?? Number.NaN;
    return {
      env: b.env,
      budget: b.maxActions,
      random: b.random.successRate,
      success,
      stderr: Math.sqrt((success * (1 - success)) / n),
      oracle: b.oracle.successRate,
    };
  });
}

/** The table `ragen eval` prints. */
export function formatEvalSummary(summary: EvalSummary): string {
  const header = ["env", "budget", "random", "model", "oracle (ceiling)"];
  const rows = summary.rows.map((r) => [
    r.env,
    String(r.budget),
    formatPercent(r.random),
    `${formatPercent(r.success)} ± ${formatPercent(r.stderr)}`,
    formatPercent(r.oracle),
  ]);
  return textTable(header, rows);
}
