/**
 * The Quest training run: validate, then per step a batch of multi-turn rollouts and one StarPO update
 * (PPO with a GAE critic by default), validating every few steps; metrics, trajectories, checkpoints and
 * the HTML report go to the run folder, and a killed run resumes from its last checkpoint.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { StarPO } from "@ragen/algos-ppo";
import { ProgressBar } from "@ragen/logging";
import { RUN_FILES, RunLogger, TrajectoryLog, writeFileAtomic, writeReport } from "@ragen/logging/node";
import { Qwen2ValueModel } from "@ragen/models";
import { EnvManager, LocalModelPolicy, runRollout } from "@ragen/rollout";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { type EnvBaselines, measureBaselines } from "./baselines.js";
import {
  checkpointActorDir,
  findCheckpoint,
  loadCheckpointCritic,
  loadCheckpointOptimizers,
  saveCheckpoint,
} from "./checkpoint.js";
import { learningRates, type QuestConfig, validationEnvs } from "./config.js";
import { loadPolicy } from "./model.js";
import { toTrajectoryRecord } from "./records.js";
import { actionBudget, rolloutOptions, validate, validationManager, validationSeeds } from "./validate.js";

/** Per env tag: where the agent started, where it ended, and the two baselines on the same seeds. */
export interface QuestSummaryRow {
  env: string;
  budget: number;
  random: number;
  start: number;
  end: number;
  oracle: number;
  /** Standard error of the end success over the validation seeds. */
  endStderr: number;
}

export interface QuestSummary {
  model: string;
  steps: number;
  wallSeconds: number;
  rows: QuestSummaryRow[];
  report: string;
}

const SUMMARY_FILE = "summary.json";
const CONFIG_FILE = "config.json";

export async function runQuest(config: QuestConfig): Promise<QuestSummary> {
  const wallStart = performance.now();
  const { outDir } = config;
  const checkpoint = config.resume ? findCheckpoint(outDir) : undefined;
  if (!config.resume && existsSync(join(outDir, RUN_FILES.metrics)))
    throw new Error(`${outDir} already holds a run; pass resume=true to continue it or outDir=<new folder>`);
  if (checkpoint && checkpoint.state.model !== config.model)
    throw new Error(
      `${outDir} holds a run of model "${checkpoint.state.model}", not "${config.model}"; pass outDir=<new folder>`,
    );
  if (checkpoint) warnOnChangedSettings(outDir, config);

  const baselines = validationEnvs(config).map((env) =>
    measureBaselines(env, validationSeeds(config), actionBudget(config, env)),
  );

  const backend = await webGpuBackend();
  let download: ProgressBar | undefined;
  const loaded = await loadPolicy(
    checkpoint ? checkpointActorDir(checkpoint.dir) : config.model,
    backend,
    (done, total) => {
      download ??= new ProgressBar({
        label: "download (MB)",
        total: Math.ceil(total / 1e6),
        stream: process.stderr,
      });
      download.update(Math.floor(done / 1e6));
    },
  );
  download?.finish();
  const { model: actor, tokenizer } = loaded;
  const gae = config.starpo.advantageEstimator === "gae";
  let critic: Qwen2ValueModel | undefined;
  if (gae)
    critic = checkpoint
      ? loadCheckpointCritic(checkpoint.dir, loaded.config, backend)
      : await Qwen2ValueModel.fromPolicy(actor, config.seed);
  const { actorLr, criticLr } = learningRates(config);
  const s = config.starpo;
  const starpo = new StarPO({
    actor,
    critic,
    config: {
      advantageEstimator: s.advantageEstimator,
      actorLr,
      criticLr,
      ppoMiniBatchSize: s.ppoMiniBatchSize,
      microBatchSize: s.microBatchSize,
      ppoEpochs: s.ppoEpochs,
      entropyCoeff: s.entropyCoeff,
      klCoeff: s.klCoeff,
      clipRatioLow: s.clipRatioLow,
      clipRatioHigh: s.clipRatioHigh,
      maxGradNorm: s.maxGradNorm,
      gamma: s.gamma,
      lambda: s.lambda,
      uncertaintyFilter: s.uncertaintyFilter,
      rolloutFilterRatio: s.rolloutFilterRatio,
      temperature: config.rollout.temperature,
      shuffleSeed: config.seed,
    },
  });
  const optimizers = { actor: starpo.actorOptimizer, critic: starpo.criticOptimizer };
  if (checkpoint) loadCheckpointOptimizers(checkpoint.dir, optimizers);

  const perEnv = config.train.envGroups / config.envs.length;
  const trainManager = new EnvManager({
    envGroups: config.train.envGroups,
    groupSize: config.train.groupSize,
    tags: config.envs.map((tag) => ({ tag, nGroups: perEnv })),
  });
  if (checkpoint) trainManager.restoreTrainResets(checkpoint.state.trainResets);
  const valManager = validationManager(config);
  const policy = new LocalModelPolicy(actor, tokenizer, { prefixCaching: config.rollout.prefixCaching });

  // A run without a checkpoint starts over: its rows (if a kill came before the first checkpoint) go.
  const lastDone = checkpoint?.state.step ?? -1;
  const logger = new RunLogger(outDir, { resumeAfterStep: lastDone });
  const trajectories = new TrajectoryLog(outDir, { resumeAfterStep: lastDone });
  writeFileAtomic(
    join(outDir, CONFIG_FILE),
    `${JSON.stringify({ ...config, ...learningRatesUsed(config) }, null, 2)}\n`,
  );
  if (checkpoint && checkpoint.state.step >= config.steps)
    console.log(
      `${outDir} is complete (${checkpoint.state.step} steps); pass steps=<more> to go on or outDir=<new folder>`,
    );
  else if (checkpoint) console.log(`resuming ${outDir} after step ${checkpoint.state.step}`);

  const saveAt = async (step: number) =>
    saveCheckpoint(
      outDir,
      {
        actor,
        actorConfig: loaded.config,
        tokenizerFiles: loaded.tokenizerFiles,
        critic,
        optimizers,
      },
      { step, trainResets: trainManager.trainResets, model: config.model },
    );

  try {
    if (lastDone < 0) {
      const val = await validate(valManager, policy, tokenizer, config, 0);
      trajectories.append(...val.records);
      logger.log(0, val.metrics);
    }
    for (let step = Math.max(lastDone, 0) + 1; step <= config.steps; step++) {
      const stepStart = performance.now();
      const rollout = await runRollout(
        trainManager,
        policy,
        tokenizer,
        rolloutOptions(config, "train", config.seed * 1_000_003 + step),
      );
      const genSeconds = (performance.now() - stepStart) / 1000;
      const metrics: Record<string, number> = { ...rollout.metrics, ...(await starpo.update(rollout)) };
      metrics["timing_s/gen"] = genSeconds;
      const tokens = rollout.trajectories.reduce((sum, t) => sum + t.tokens.length, 0);
      const trainSeconds = (performance.now() - stepStart) / 1000;
      metrics["perf/time_per_step"] = trainSeconds;
      metrics["perf/throughput"] = tokens / trainSeconds;
      // Peak device memory held by tensors so far, in GiB.
      metrics["perf/max_memory"] = backend.ctx.pool.stats.peakInUseBytes / 2 ** 30;
      trajectories.append(...rollout.trajectories.map((t) => toTrajectoryRecord(t, step, "train")));
      if (step % config.validation.every === 0 || step === config.steps) {
        const val = await validate(valManager, policy, tokenizer, config, step);
        trajectories.append(...val.records);
        Object.assign(metrics, val.metrics);
      }
      metrics["timing_s/step"] = (performance.now() - stepStart) / 1000;
      logger.log(step, metrics);
      if ((config.checkpointEvery > 0 && step % config.checkpointEvery === 0) || step === config.steps) {
        await saveAt(step);
        writeReport(outDir, { title: `Quest — ${config.model}` });
      }
    }
    if (config.steps === 0 && lastDone < 0) await saveAt(0);
  } finally {
    trajectories.close();
    await logger.close();
    starpo.dispose();
  }

  const report = writeReport(outDir, { title: `Quest — ${config.model}` });
  const summary: QuestSummary = {
    model: config.model,
    steps: config.steps,
    wallSeconds: (performance.now() - wallStart) / 1000,
    rows: summaryRows(baselines, logger.history(), config),
    report,
  };
  writeFileAtomic(join(outDir, SUMMARY_FILE), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

/** A resumed run with other settings than it started with is allowed (e.g. more steps), but said. */
function warnOnChangedSettings(outDir: string, config: QuestConfig): void {
  const path = join(outDir, CONFIG_FILE);
  if (!existsSync(path)) return;
  const before = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  const now = { ...config, ...learningRatesUsed(config) } as Record<string, unknown>;
  const changed = Object.keys(now).filter(
    (key) => key !== "steps" && JSON.stringify(before[key]) !== JSON.stringify(now[key]),
  );
  if (changed.length > 0)
    console.warn(`resuming ${outDir} with changed settings: ${changed.join(", ")} (was: ${path})`);
}

function learningRatesUsed(config: QuestConfig) {
  return { starpo: { ...config.starpo, ...learningRates(config) } };
}

function summaryRows(
  baselines: readonly EnvBaselines[],
  history: readonly { step: number; metrics: Record<string, number> }[],
  config: QuestConfig,
): QuestSummaryRow[] {
  const validated = history.filter((row) =>
    validationEnvs(config).some((env) => `val-env/${env}/success` in row.metrics),
  );
  const first = validated[0]?.metrics ?? {};
  const last = validated.at(-1)?.metrics ?? {};
  const n = config.validation.groupsPerEnv;
  return baselines.map((b) => {
    const end = last[`val-env/${b.env}/success`] ?? Number.NaN;
    return {
      env: b.env,
      budget: b.maxActions,
      random: b.random.successRate,
      start: first[`val-env/${b.env}/success`] ?? Number.NaN,
      end,
      oracle: b.oracle.successRate,
      endStderr: Math.sqrt((end * (1 - end)) / n),
    };
  });
}

/** The table printed at the end of a run. */
export function formatQuestSummary(summary: QuestSummary): string {
  const percent = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "-");
  const header = ["env", "budget", "random", "start", "end", "oracle (ceiling)"];
  const rows = summary.rows.map((r) => [
    r.env,
    String(r.budget),
    percent(r.random),
    percent(r.start),
    `${percent(r.end)} ± ${percent(r.endStderr)}`,
    percent(r.oracle),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}
