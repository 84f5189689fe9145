/**
 * The training run: validate, then per step a batch of multi-turn rollouts and one update (StarPO, or
 * A*-PO), validating every few steps; metrics, trajectories, checkpoints and the report go to the run's
 * storage, and a killed run resumes from its last checkpoint. No file or process I/O here: the storage,
 * the model loader and the progress stream come from the caller (see "@ragen/trainer/node").
 */
import { usesCritic } from "@ragen/algos-ppo";
import type { ProgressStream } from "@ragen/logging";
import {
  LocalModelPolicy,
  type Policy,
  runRollout,
  type TrajectoryBatch,
  trainingRows,
} from "@ragen/rollout";
import type { WebGpuBackend } from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";
import { checkSettingsFit } from "../settings/fit.js";
import { describeProfileChoice } from "../settings/print.js";
import { remoteRolloutProblems, type SettingSource } from "../settings/resolve.js";
import { type EnvBaselines, measureBaselines } from "./baselines.js";
import { type KernelChoiceStore, KernelTuner } from "./kernel-tuning.js";
import { attachActorAdapters, checkLoraResume, loraCheckpointState, usesLora } from "./lora.js";
import { checkMemoryFit, longestSequence } from "./memory-fit.js";
import { NonFiniteLossGuard } from "./non-finite.js";
import { type PolicyLoader, parameterCount } from "./policy.js";
import { toTrajectoryRecord } from "./records.js";
import { RemoteRollouts, usesRemoteEngine } from "./remote-rollouts.js";
import { findResumePoint } from "./resume-point.js";
import type { RunStorage } from "./storage.js";
import { lastLogged, summaryRows, type TrainingSummary } from "./summary.js";
import { createUpdater } from "./updaters.js";
import {
  actionBudget,
  localPolicyOptions,
  rolloutOptions,
  trainingManager,
  trainingSeed,
  validate,
  validationEnvs,
  validationManager,
  validationSeeds,
  warnOnCollapse,
} from "./validation.js";

/** The documents a run keeps beside its logs. */
export const RUN_DOCUMENTS = { settings: "config.json", summary: "summary.json" } as const;
export const GENERATED_TOKENS = "perf/generated_tokens_total";
/** A*-PO stage 1's generated tokens, counted over the whole run (a resumed one included). */
export const VSTAR_GENERATED_TOKENS = "vstar/generated_tokens";
export interface TrainingRun {
  settings: TrainingSettings;
  /** Where each setting came from (resolveSettings'), saved with the settings. */
  sources?: Record<string, SettingSource>;
  backend: WebGpuBackend;
  storage: RunStorage;
  loadPolicy: PolicyLoader;
  /** Where progress bars go (none without). */
  progress?: ProgressStream;
  /** Where messages go ("resuming ...", the parameter count); default console.log. */
  say?: (line: string) => void;
  /**
   * The device memory the run may use, and what says so ("deviceMemoryGiB", "the host's memory"): a run
   * whose estimated peak is larger stops at start-up (checkMemoryFit). None: not checked.
   */
  deviceMemory?: { bytes: number; source: string };
  /** Where kernel measurements (settings.kernelTuning) are kept between runs; none: not kept. */
  kernelChoices?: KernelChoiceStore;
}

/** The settings document a run saves: the resolved settings and where each came from. */
export interface SavedSettings {
  settings: TrainingSettings;
  sources: Record<string, SettingSource>;
}

/** The training-step metrics besides the rollout's and the update's: time, tokens, memory. */
export function stepPerformance(
  rollout: TrajectoryBatch,
  stepStart: number,
  backend: WebGpuBackend,
): Record<string, number> {
  // What the update trains: with a history window, an episode's sampled contexts rather than its chat.
  const rows = trainingRows(rollout.trajectories);
  const tokens = rows.reduce((sum, t) => sum + t.tokens.length, 0);
  const seconds = (performance.now() - stepStart) / 1000;
  return {
    "perf/time_per_step": seconds,
    "perf/throughput": tokens / seconds,
    // The longest trained sequence sets the activations' size (estimateTrainingMemory's seqLen).
    "perf/max_sequence_length": Math.max(0, ...rows.map((t) => t.tokens.length)),
    // Peak device memory held by tensors so far, in GiB.
    "perf/max_memory": backend.ctx.pool.stats.peakInUseBytes / 2 ** 30,
  };
}

/** Tokens the policy generated in a batch (the budget algorithms are compared on). */
export function generatedTokens(rollout: TrajectoryBatch): number {
  return rollout.trajectories.reduce((sum, t) => sum + t.responseLength, 0);
}

export async function runTraining(run: TrainingRun): Promise<TrainingSummary> {
  if (run.settings.seeds !== null)
    throw new Error(
      `runTraining trains one seed; settings.seeds (${run.settings.seeds.join(", ")}) is a sweep: run it with runSeedSweep`,
    );
  run.storage.acquire?.();
  try {
    return await trainWithStorageHeld(run);
  } finally {
    run.storage.release?.();
  }
}

async function trainWithStorageHeld(run: TrainingRun): Promise<TrainingSummary> {
  const wallStart = performance.now();
  const { settings, storage, backend, progress } = run;
  // Settings resolved from a file or the command line were checked already; these may come from code.
  const remoteProblem = remoteRolloutProblems(settings)[0];
  if (remoteProblem) throw new Error(`${remoteProblem.field}: ${remoteProblem.message}`);
  const say = run.say ?? ((line: string) => console.log(line));
  const checkpoint = findResumePoint(storage, settings, say);
  checkLoraResume(settings, checkpoint, storage.location);

  const baselines: EnvBaselines[] = validationEnvs(settings).map((env) =>
    measureBaselines(env, validationSeeds(settings, env), actionBudget(settings, env), progress),
  );

  // A LoRA run's checkpoint holds adapters alone: the run resumes on the start model with them put back.
  const loaded = await run.loadPolicy(
    checkpoint && !checkpoint.state.lora ? checkpoint.actorSource : settings.model,
    backend,
  );
  const { model: actor, tokenizer } = loaded;
  // Before any adapter or optimiser is made over the weights (both take the weights' element type).
  actor.toDtype(settings.precision);
  // Checked before loading when the model's config.json is on disk; a Hub model's only now, still
  // before anything is written or rolled out.
  checkSettingsFit(settings, loaded.config, run.sources);
  if (run.deviceMemory) {
    const seqLen = longestSequence(settings, tokenizer);
    const { bytes, source } = run.deviceMemory;
    const estimate = checkMemoryFit(settings, loaded.config, seqLen, bytes, source);
    say(
      `memory: about ${(estimate.peak / 2 ** 30).toFixed(1)} GiB at the peak for sequences of up to ${seqLen} tokens; ${source} allows ${(bytes / 2 ** 30).toFixed(1)} GiB`,
    );
  }
  const tuner = KernelTuner.forRun(settings.kernelTuning, backend, run.kernelChoices, say, {
    budgetSeconds: settings.kernelTuningSeconds ?? undefined,
  });
  const saved: SavedSettings = { settings, sources: run.sources ?? {} };
  if (checkpoint) warnOnChangedSettings(storage, settings, say);
  for (const line of describeProfileChoice({ settings, sources: run.sources ?? {} })) say(line);
  const s = settings.starpo;
  say(
    `${(parameterCount(actor) / 1e6).toFixed(1)}M parameters; learning rates: ${settings.algorithm === "apo" ? `A*-PO ${settings.apo.lr}` : `actor ${s.actorLr}, critic ${s.criticLr}; KL coefficient ${s.klCoeff}`}`,
  );
  if (usesLora(settings)) {
    await attachActorAdapters(actor, settings, checkpoint);
    const { rank, alpha, targetModules, critic } = settings.lora;
    const loraCritic =
      critic && settings.algorithm === "starpo" && usesCritic(settings.starpo.advantageEstimator);
    say(
      `LoRA rank ${rank}, alpha ${alpha} on ${targetModules.join(",")}${loraCritic ? " (the critic's too)" : ""}: the actor trains ${(parameterCount(actor) / 1e6).toFixed(2)}M parameters; the reference is the start model with the adapters off`,
    );
  }
  const updater = await createUpdater({
    settings,
    policy: loaded,
    backend,
    loadPolicy: run.loadPolicy,
    storage,
    checkpoint,
    ...(progress ? { progress } : {}),
  });
  const { critic, optimizers } = updater;
  if (checkpoint) await checkpoint.loadOptimizers(optimizers);

  const trainManager = trainingManager(settings);
  if (checkpoint) trainManager.restoreTrainResets(checkpoint.state.trainResets);
  const valManager = validationManager(settings);

  // A run without a checkpoint starts over: its rows (if a kill came before the first checkpoint) go.
  const lastDone = checkpoint?.state.step ?? -1;
  // Remote engines sample on inference servers with the actor's adapter as of each version (started in
  // the loop's try, so a failed start still closes what the run opened); the local one samples the actor.
  let remote: RemoteRollouts | undefined;
  let policy: Policy = new LocalModelPolicy(actor, tokenizer, localPolicyOptions(settings.rollout));
  const logs = storage.openLogs(lastDone);
  const reportOptions = { validationEpisodes: settings.validation.groupsPerEnv };
  storage.writeJson(RUN_DOCUMENTS.settings, saved);
  let tokensSoFar = lastLogged(logs.history(), GENERATED_TOKENS) ?? 0;
  let vstarTokensSoFar = lastLogged(logs.history(), VSTAR_GENERATED_TOKENS) ?? 0;
  const budgetSpent = () => settings.train.tokenBudget > 0 && tokensSoFar >= settings.train.tokenBudget;
  if (checkpoint && (checkpoint.state.step >= settings.steps || budgetSpent()))
    say(
      `${storage.location} is complete (${checkpoint.state.step} steps, ${tokensSoFar} generated tokens); pass steps=<more> or train.tokenBudget=<more> to go on, or outDir=<new folder>`,
    );
  else if (checkpoint) say(`resuming ${storage.location} after step ${checkpoint.state.step}`);

  const title = `${settings.profile === "embedded" ? "Quest" : "Training"} — ${settings.model}`;
  // Where the training seeds stand after the last trained batch: a producer sampling ahead has moved
  // the env manager further, and a resumed run must sample those batches again.
  let trainResets = trainManager.trainResets;
  const saveAt = (step: number) =>
    storage.saveCheckpoint(
      { actor, actorConfig: loaded.config, tokenizerFiles: loaded.tokenizerFiles, critic, optimizers },
      {
        step,
        trainResets,
        model: settings.model,
        ...(updater.state ? { algorithm: updater.state() } : {}),
        ...(usesLora(settings) ? { lora: loraCheckpointState(settings) } : {}),
      },
    );

  let lastStep = Math.max(lastDone, 0);
  const lossGuard = new NonFiniteLossGuard(settings.precision);
  let finished = false;
  try {
    if (usesRemoteEngine(settings)) {
      remote = await RemoteRollouts.start(
        { settings, storage, actor, tokenizer, manager: trainManager, startVersion: lastStep, say },
        lastStep + 1,
        settings.steps,
      );
      policy = remote.validationPolicy;
    }
    if (lastDone < 0) {
      const val = await validate(valManager, policy, tokenizer, settings, 0, progress);
      sayLostEpisodes(val.batch, "validation at step 0", say);
      logs.appendTrajectories(val.records);
      logs.log(0, val.metrics);
    }
    for (let step = lastStep + 1; step <= settings.steps && !budgetSpent(); step++) {
      // Timed apart from the step (timing_s/vstar), so the two add up to the run's time.
      const stage1 = await updater.beforeStep(trainManager.trainResets);
      // Kernel problems met since the last step (the first step's, validation's) are timed before this one.
      const tuning = await tuner?.tunePending(progress);
      const stepStart = performance.now();
      let rollout: TrajectoryBatch;
      let genSeconds: number;
      let updateMetrics: Record<string, number>;
      const remoteMetrics: Record<string, number> = {};
      if (remote) {
        const sampled = await remote.take(step);
        rollout = sampled.batch;
        genSeconds = sampled.genSeconds;
        trainResets = sampled.trainResets;
        Object.assign(remoteMetrics, {
          "rollout/adapter_version": sampled.version,
          "rollout/versions_in_flight": sampled.versionsInFlight,
          "timing_s/wait_rollout": sampled.waitSeconds,
        });
        const corrected = await remote.correct(rollout);
        Object.assign(remoteMetrics, corrected.metrics);
        // Every trajectory too stale to train leaves nothing to update on; the version moves on alike.
        updateMetrics = corrected.batch.trajectories.length > 0 ? await updater.update(corrected.batch) : {};
        Object.assign(remoteMetrics, await remote.publish(step));
      } else {
        rollout = await runRollout(
          trainManager,
          policy,
          tokenizer,
          rolloutOptions(settings, "train", trainingSeed(settings, step)),
        );
        genSeconds = (performance.now() - stepStart) / 1000;
        trainResets = trainManager.trainResets;
        updateMetrics = await updater.update(rollout);
      }
      sayLostEpisodes(rollout, `step ${step}`, say);
      lossGuard.check(step, updateMetrics);
      const metrics: Record<string, number> = { ...rollout.metrics, ...updateMetrics, ...remoteMetrics };
      // Stage-1 metrics (A*-PO) go with the step they were estimated for.
      Object.assign(metrics, stage1);
      if (tuning) metrics["timing_s/kernel_tuning"] = tuning.seconds;
      // Stage 1 reports what the estimates it covered cost, reused ones included, each reset once a run.
      const stage1Tokens = stage1[VSTAR_GENERATED_TOKENS];
      if (stage1Tokens !== undefined) {
        vstarTokensSoFar += stage1Tokens;
        metrics[VSTAR_GENERATED_TOKENS] = vstarTokensSoFar;
      }
      metrics["timing_s/gen"] = genSeconds;
      tokensSoFar += generatedTokens(rollout);
      metrics[GENERATED_TOKENS] = tokensSoFar;
      Object.assign(metrics, stepPerformance(rollout, stepStart, backend));
      logs.appendTrajectories(rollout.trajectories.map((t) => toTrajectoryRecord(t, step, "train")));
      lastStep = step;
      const last = step === settings.steps || budgetSpent();
      if (step % settings.validation.every === 0 || last) {
        const val = await validate(valManager, policy, tokenizer, settings, step, progress);
        sayLostEpisodes(val.batch, `validation at step ${step}`, say);
        logs.appendTrajectories(val.records);
        Object.assign(metrics, val.metrics);
      }
      metrics["timing_s/step"] = (performance.now() - stepStart) / 1000;
      logs.log(step, metrics);
      warnOnCollapse(logs.history(), step, settings, say);
      if ((settings.checkpointEvery > 0 && step % settings.checkpointEvery === 0) || last) {
        await saveAt(step);
        remote?.checkpointed(step);
        storage.writeReport(title, reportOptions);
      }
    }
    if (settings.steps === 0 && lastDone < 0) await saveAt(0);
    finished = true;
  } finally {
    // A finished run (a token budget may end it early) lets a batch being sampled ahead complete; a
    // failed one does not wait for it.
    await remote?.close({ wait: finished });
    await logs.close();
    updater.dispose();
    // Remote env sessions end with the run; a server already gone has nothing left to free.
    await Promise.allSettled([trainManager.close(), valManager.close()]);
  }

  const summary: TrainingSummary = {
    model: settings.model,
    steps: lastStep,
    generatedTokens: tokensSoFar,
    wallSeconds: (performance.now() - wallStart) / 1000,
    rows: summaryRows(baselines, logs.history(), settings),
    report: storage.writeReport(title, reportOptions),
  };
  storage.writeJson(RUN_DOCUMENTS.summary, summary);
  return summary;
}

/** Episodes whose env server failed are left out of their batch; the person running the job hears why. */
function sayLostEpisodes(batch: TrajectoryBatch, where: string, say: (line: string) => void): void {
  if (!batch.lost) return;
  const groups = new Set(batch.lost.map((episode) => episode.groupId)).size;
  say(
    `${where}: ${batch.lost.length} episode(s) lost their env server and ${groups} group(s) were left out of the batch; the first: ${batch.lost[0]!.reason}`,
  );
}

/** A resumed run with other settings than it started with is allowed (e.g. more steps), but said. */
function warnOnChangedSettings(
  storage: RunStorage,
  settings: TrainingSettings,
  say: (line: string) => void,
): void {
  const before = (storage.readJson(RUN_DOCUMENTS.settings) as Partial<SavedSettings> | undefined)?.settings;
  if (!before) return;
  const changed = Object.entries(settings)
    .filter(
      ([key, value]) =>
        key !== "steps" &&
        JSON.stringify((before as unknown as Record<string, unknown>)[key]) !== JSON.stringify(value),
    )
    .map(([key]) => key);
  if (changed.length > 0) say(`resuming ${storage.location} with changed settings: ${changed.join(", ")}`);
}
