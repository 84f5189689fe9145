import { actionBudget } from "./budget.js";
import { createEnv, getEnvSpec, oracleAction, randomAction } from "./registry.js";
import { Rng } from "./rng.js";
import type { ActionPolicy, Env } from "./types.js";

/** What happened in one episode. */
export interface EpisodeSummary {
  seed: number;
  success: boolean;
  /** Sum of step rewards. */
  reward: number;
  actions: number;
  validActions: number;
  effectiveActions: number;
  /** The action budget ran out before the env said done. */
  truncated: boolean;
}

/** A policy's results over many seeds. */
export interface PolicyEvaluation {
  env: string;
  policy: string;
  maxActions: number;
  episodes: EpisodeSummary[];
  successRate: number;
  /** Standard error of the success rate. */
  successStderr: number;
  meanReward: number;
  meanActions: number;
  validRate: number;
  effectiveRate: number;
}

export interface EvaluateOptions {
  /** Seeds to play (default 0..99). */
  seeds?: readonly number[];
  /** Action budget per episode; defaults to `actionBudget(nameOrPreset)`: the preset's maxActionsPerTraj, else 10. */
  maxActions?: number;
  /** Config overrides. */
  config?: object;
  /** Called after each episode, e.g. to draw a progress bar. */
  onEpisode?: (done: number, total: number) => void;
}

/** Play one episode from `seed` with `policy`, within `maxActions` actions. */
export function runEpisode(env: Env, seed: number, policy: ActionPolicy, maxActions: number): EpisodeSummary {
  const rng = new Rng(seed, "policy");
  env.reset(seed);
  const summary: EpisodeSummary = {
    seed,
    success: false,
    reward: 0,
    actions: 0,
    validActions: 0,
    effectiveActions: 0,
    truncated: false,
  };
  while (!env.done && summary.actions < maxActions) {
    const result = env.step(policy(env, rng));
    summary.actions++;
    summary.reward += result.reward;
    if (result.info.actionIsValid) summary.validActions++;
    if (result.info.actionIsEffective) summary.effectiveActions++;
    summary.success = result.info.success;
  }
  summary.truncated = !env.done;
  return summary;
}

/** The built-in policies by name. */
export const BUILTIN_POLICIES: Record<"oracle" | "random", ActionPolicy> = {
  oracle: (env, rng) => oracleAction(env, rng),
  random: (env, rng) => randomAction(env, rng),
};

/** Play `policy` ("oracle", "random" or your own) on every seed and summarise. */
export function evaluatePolicy(
  nameOrPreset: string,
  policy: "oracle" | "random" | ActionPolicy,
  options: EvaluateOptions = {},
): PolicyEvaluation {
  getEnvSpec(nameOrPreset); // fail early with the list of names
  const seeds = options.seeds ?? Array.from({ length: 100 }, (_, i) => i);
  const maxActions = options.maxActions ?? actionBudget(nameOrPreset);
  const act = typeof policy === "string" ? BUILTIN_POLICIES[policy] : policy;
  const env = createEnv(nameOrPreset, options.config);
  const episodes: EpisodeSummary[] = [];
  for (const seed of seeds) {
    episodes.push(runEpisode(env, seed, act, maxActions));
    options.onEpisode?.(episodes.length, seeds.length);
  }
  const n = Math.max(episodes.length, 1);
  const totalActions = episodes.reduce((a, e) => a + e.actions, 0);
  const successRate = episodes.filter((e) => e.success).length / n;
  return {
    env: nameOrPreset,
    policy: typeof policy === "string" ? policy : policy.name || "custom",
    maxActions,
    episodes,
    successRate,
    successStderr: Math.sqrt((successRate * (1 - successRate)) / n),
    meanReward: episodes.reduce((a, e) => a + e.reward, 0) / n,
    meanActions: totalActions / n,
    validRate: totalActions === 0 ? 0 : episodes.reduce((a, e) => a + e.validActions, 0) / totalActions,
    effectiveRate:
      totalActions === 0 ? 0 : episodes.reduce((a, e) => a + e.effectiveActions, 0) / totalActions,
  };
}
