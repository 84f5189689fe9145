/**
 * Validation as RAGEN does it: the same envs (seeds 123, 124, ...) at every evaluation, sampled at the
 * validation temperature, so successes at different steps compare like with like; and the rollout
 * options and env groups of training, derived from the settings in one place.
 */
import { actionBudget as envActionBudget } from "@ragen/envs";
import { describeDrop, type ProgressStream, type TrajectoryRecord, validationDrops } from "@ragen/logging";
import {
  EnvManager,
  type EnvTagGroups,
  type LocalModelPolicyOptions,
  type Policy,
  type RolloutOptions,
  runRollout,
  type TrajectoryBatch,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import type { TrainingSettings } from "../settings/fields.js";
import { progressBar } from "./progress.js";
import { toTrajectoryRecord } from "./records.js";
import type { MetricsHistoryRow } from "./storage.js";

/**
 * The rollout options of the settings, for training (`seed`: the step's) or validation, which samples
 * with its own temperature, topP and topK.
 */
export function rolloutOptions(
  settings: TrainingSettings,
  mode: "train" | "val",
  seed: number,
): RolloutOptions {
  const {
    prefixCaching: _cached,
    prefillTokens: _prefill,
    historyWindow,
    temperature,
    topP,
    topK,
    ...rollout
  } = settings.rollout;
  const sampling = mode === "val" ? settings.validation : { temperature, topP, topK };
  return {
    mode,
    ...rollout,
    ...(historyWindow === null ? {} : { historyWindow }),
    temperature: sampling.temperature,
    topP: sampling.topP,
    topK: sampling.topK,
    seed,
  };
}

/** How the local engine samples, from the rollout settings (its prefix cache, seeds and prefill passes). */
export function localPolicyOptions(
  rollout: Pick<TrainingSettings["rollout"], "prefixCaching" | "seedPerPrompt" | "prefillTokens">,
): LocalModelPolicyOptions {
  return {
    prefixCaching: rollout.prefixCaching,
    seedPerPrompt: rollout.seedPerPrompt,
    prefillTokens: rollout.prefillTokens,
  };
}

/** The sampling seed of training step `step` (from 1): every step samples anew, reproducibly. */
export function trainingSeed(settings: TrainingSettings, step: number): number {
  return settings.seed * 1_000_003 + step;
}

/**
 * The training envs' tags with their groups per step: train.groupsPerEnv, or envGroups split evenly;
 * a tag with a server in envServers plays there.
 */
export function trainingGroups(settings: TrainingSettings): EnvTagGroups[] {
  const even = settings.train.envGroups / settings.envs.length;
  return settings.envs.map((tag) =>
    withServer(settings, { tag, nGroups: settings.train.groupsPerEnv?.[tag] ?? even }),
  );
}

/** `groups` with the env server envServers names for its tag, if any. */
function withServer(settings: TrainingSettings, groups: EnvTagGroups): EnvTagGroups {
  // Settings saved before envServers existed have no such field.
  const server = settings.envServers?.[groups.tag];
  return server ? { ...groups, server } : groups;
}

/** The training envs: envGroups groups of groupSize envs, each group sharing a start state. */
export function trainingManager(settings: TrainingSettings): EnvManager {
  return new EnvManager({
    envGroups: settings.train.envGroups,
    groupSize: settings.train.groupSize,
    tags: trainingGroups(settings),
  });
}

/** The env tags validated on: `validation.envs`, or the training envs. */
export function validationEnvs(settings: TrainingSettings): string[] {
  return settings.validation.envs ?? settings.envs;
}

/** Actions an episode can take: the env's budget, or fewer when the turns run out first. */
export function actionBudget(settings: TrainingSettings, envTag: string): number {
  return envActionBudget(envTag, settings.rollout);
}

/**
 * The validation seeds of one env tag: the start states validation plays for it. Groups are numbered
 * across tags, so the second tag plays 123 + groupsPerEnv, ..., not 123 again.
 */
export function validationSeeds(settings: TrainingSettings, envTag: string): number[] {
  return validationManager(settings).seedsOf(envTag, "val");
}

/** Every validation seed is a group of `validation.samples` envs: batchMetrics' pass@k is over them. */
export function validationManager(settings: TrainingSettings): EnvManager {
  const groups = settings.validation.groupsPerEnv;
  return new EnvManager({
    envGroups: groups * validationEnvs(settings).length,
    groupSize: settings.validation.samples,
    tags: validationEnvs(settings).map((tag) => withServer(settings, { tag, nGroups: groups })),
  });
}

export interface ValidationResult {
  batch: TrajectoryBatch;
  records: TrajectoryRecord[];
  /** val-env/{Tag}/success, .../pass@k (k = validation.samples), ... and timing_s/testing. */
  metrics: Record<string, number>;
}

/** Every env of every validation tag played `validation.samples` times, all together. */
export async function validate(
  manager: EnvManager,
  policy: Policy,
  tokenizer: Tokenizer,
  settings: TrainingSettings,
  step: number,
  progress?: ProgressStream,
): Promise<ValidationResult> {
  const start = performance.now();
  const bar = progressBar(progress, `validation (step ${step})`, settings.rollout.maxTurns);
  const batch = await runRollout(manager, policy, tokenizer, {
    ...rolloutOptions(settings, "val", settings.seed),
    onTurn: (_, active) => bar.tick(1, `${active} envs playing`),
  });
  bar.finish();
  return {
    batch,
    records: batch.trajectories.map((t) => toTrajectoryRecord(t, step, "val")),
    metrics: { ...batch.metrics, "timing_s/testing": (performance.now() - start) / 1000 },
  };
}

/**
 * Says so, as it happens, when the validation just logged at `step` put an env more than two standard
 * errors below its start (the report flags the same validations).
 */
export function warnOnCollapse(
  history: readonly MetricsHistoryRow[],
  step: number,
  settings: TrainingSettings,
  say: (line: string) => void,
): void {
  for (const drop of validationDrops(history, settings.validation.groupsPerEnv))
    if (drop.step === step) say(`collapse: ${describeDrop(drop)}`);
}
