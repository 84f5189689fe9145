import {
  EnvManager,
  type OpenAIChatPolicy,
  type OpenAIUsage,
  runRollout,
  type Trajectory,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import type { EvalOptions } from "./options.js";

/** One env preset played on its seeds. */
export interface EnvEvaluation {
  preset: string;
  trajectories: Trajectory[];
  /** What the server reported for this preset's requests. */
  usage: OpenAIUsage;
  seconds: number;
}

export type RolloutSettings = Pick<
  EvalOptions,
  "seeds" | "maxTurns" | "maxActionsPerTurn" | "maxTokens" | "temperature" | "topP" | "seed" | "think"
>;

function usageSince(before: OpenAIUsage, after: OpenAIUsage): OpenAIUsage {
  return {
    requests: after.requests - before.requests,
    requestsWithUsage: after.requestsWithUsage - before.requestsWithUsage,
    promptTokens: after.promptTokens - before.promptTokens,
    completionTokens: after.completionTokens - before.completionTokens,
    totalTokens: after.totalTokens - before.totalTokens,
  };
}

/**
 * Plays `settings.seeds` episodes of one preset with RAGEN's multi-turn prompt format, every episode's
 * turn in one batch of requests (the policy bounds how many are in flight). The seeds are RAGEN's
 * validation seeds (123, 124, ...), the same at every evaluation.
 */
export async function evaluatePreset(
  preset: string,
  policy: OpenAIChatPolicy,
  tokenizer: Tokenizer,
  settings: RolloutSettings,
  onTurn?: (turn: number, playing: number) => void,
): Promise<EnvEvaluation> {
  const manager = new EnvManager({
    envGroups: settings.seeds,
    groupSize: 1,
    tags: [{ tag: preset, nGroups: settings.seeds }],
  });
  const before = policy.usage;
  const started = performance.now();
  const batch = await runRollout(manager, policy, tokenizer, {
    mode: "val",
    maxTurns: settings.maxTurns,
    maxActionsPerTurn: settings.maxActionsPerTurn,
    enableThinking: settings.think,
    maxNewTokens: settings.maxTokens,
    temperature: settings.temperature,
    ...(settings.topP === undefined ? {} : { topP: settings.topP }),
    seed: settings.seed,
    ...(onTurn ? { onTurn } : {}),
  });
  return {
    preset,
    trajectories: batch.trajectories,
    usage: usageSince(before, policy.usage),
    seconds: (performance.now() - started) / 1000,
  };
}
