/**
 * Validation as RAGEN does it: the same envs (seeds 123, 124, ...) at every evaluation, sampled at the
 * validation temperature, so successes at different steps compare like with like.
 */
import { actionBudget as envActionBudget } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";
import { ProgressBar } from "@ragen/logging";
import {
  EnvManager,
  type Policy,
  type RolloutOptions,
  runRollout,
  type TrajectoryBatch,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import { type QuestConfig, validationEnvs } from "./config.js";
import { toTrajectoryRecord } from "./records.js";

/** The rollout options of the config (training or validation sampling). */
export function rolloutOptions(config: QuestConfig, mode: "train" | "val", seed: number): RolloutOptions {
  const r = config.rollout;
  return {
    mode,
    maxTurns: r.maxTurns,
    maxActionsPerTurn: r.maxActionsPerTurn,
    maxNewTokens: r.maxNewTokens,
    enableThinking: r.enableThinking,
    formatPenalty: r.formatPenalty,
    penalizeExtraActions: r.penalizeExtraActions,
    temperature: mode === "val" ? config.validation.temperature : r.temperature,
    seed,
  };
}

/** Actions an episode can take: the env's budget, or fewer when the turns run out first. */
export function actionBudget(config: QuestConfig, envTag: string): number {
  return envActionBudget(envTag, config.rollout);
}

/**
 * The validation seeds of one env tag: the start states validation plays for it. Groups are numbered
 * across tags, so the second tag plays 123 + groupsPerEnv, ..., not 123 again.
 */
export function validationSeeds(config: QuestConfig, envTag: string): number[] {
  return validationManager(config).seedsOf(envTag, "val");
}

export function validationManager(config: QuestConfig): EnvManager {
  const groups = config.validation.groupsPerEnv;
  return new EnvManager({
    envGroups: groups * validationEnvs(config).length,
    groupSize: 1,
    tags: validationEnvs(config).map((tag) => ({ tag, nGroups: groups })),
  });
}

export interface ValidationResult {
  batch: TrajectoryBatch;
  records: TrajectoryRecord[];
  /** val-env/{Tag}/success, ... and timing_s/testing. */
  metrics: Record<string, number>;
}

/** Every env of every tag played once, all together. */
export async function validate(
  manager: EnvManager,
  policy: Policy,
  tokenizer: Tokenizer,
  config: QuestConfig,
  step: number,
): Promise<ValidationResult> {
  const start = performance.now();
  const bar = new ProgressBar({
    label: `validation (step ${step})`,
    total: config.rollout.maxTurns,
    stream: process.stderr,
  });
  const batch = await runRollout(manager, policy, tokenizer, {
    ...rolloutOptions(config, "val", config.seed),
    onTurn: (_, active) => bar.tick(1, `${active} envs playing`),
  });
  bar.finish();
  return {
    batch,
    records: batch.trajectories.map((t) => toTrajectoryRecord(t, step, "val")),
    metrics: { ...batch.metrics, "timing_s/testing": (performance.now() - start) / 1000 },
  };
}
