import { actionBudget, evaluatePolicy } from "@ragen/envs";
import { formatPercent, markdownTable } from "@ragen/logging";
import { parseResponse, type Trajectory } from "@ragen/rollout";
import type { EnvEvaluation, RolloutSettings } from "./evaluate.js";

/** Token counts as the server reported them; null when no reply carried usage. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Requests that reported usage, out of `requests`. */
  requestsWithUsage: number;
  requests: number;
}

export interface EnvSummary {
  env: string;
  episodes: number;
  seeds: number[];
  successRate: number;
  /** Standard error of the success rate. */
  successStderr: number;
  meanReward: number;
  /** Turns whose reply did not have the <think>…</think><answer>…</answer> layout. */
  formatErrorRate: number;
  /** Turns charged RAGEN's format penalty: bad layout, an answer part that is no action, or no valid action. */
  penalizedTurnRate: number;
  meanTurns: number;
  meanActions: number;
  /** Executed actions the env accepted. */
  validActionRate: number;
  /** The built-in oracle on the same seeds and action limits: the ceiling to read success against. */
  oracleSuccessRate: number;
  usage: TokenUsage | null;
  seconds: number;
}

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length;

/** The most actions an episode can take here: the preset's budget, and the turns times actions per turn. */
export function actionLimit(preset: string, settings: RolloutSettings): number {
  return actionBudget(preset, settings);
}

export function replyFollowsFormat(response: string, think: boolean): boolean {
  return parseResponse(response, { actions: null, maxActionsPerTurn: 1, enableThinking: think }).formatOk;
}

export function summarizeEnv(evaluation: EnvEvaluation, settings: RolloutSettings): EnvSummary {
  const { preset, trajectories: ts, usage } = evaluation;
  const turns = ts.flatMap((t) => t.turns);
  const executed = ts.reduce((sum, t) => sum + t.numActions, 0);
  const successRate = mean(ts.map((t) => Number(t.success)));
  const seeds = ts.map((t) => t.seed);
  const oracle = evaluatePolicy(preset, "oracle", { seeds, maxActions: actionLimit(preset, settings) });
  return {
    env: preset,
    episodes: ts.length,
    seeds,
    successRate,
    successStderr: Math.sqrt((successRate * (1 - successRate)) / Math.max(ts.length, 1)),
    meanReward: mean(ts.map((t) => t.reward)),
    formatErrorRate: mean(turns.map((turn) => Number(!replyFollowsFormat(turn.response, settings.think)))),
    penalizedTurnRate: mean(turns.map((turn) => Number(turn.formatPenalized))),
    meanTurns: mean(ts.map((t) => t.turns.length)),
    meanActions: mean(ts.map((t) => t.numActions)),
    validActionRate:
      executed === 0 ? 0 : ts.reduce((sum, t) => sum + t.actionIsValid * t.numActions, 0) / executed,
    oracleSuccessRate: oracle.successRate,
    usage:
      usage.requestsWithUsage === 0
        ? null
        : {
            promptTokens: usage.promptTokens,
            completionTokens: usage.completionTokens,
            totalTokens: usage.totalTokens,
            requestsWithUsage: usage.requestsWithUsage,
            requests: usage.requests,
          },
    seconds: evaluation.seconds,
  };
}

/** One JSON line per episode: what was seen, said and done, turn by turn (no token ids). */
export function trajectoryRecord(model: string, trajectory: Trajectory, think: boolean): object {
  return {
    model,
    env: trajectory.tag,
    seed: trajectory.seed,
    success: trajectory.success,
    reward: trajectory.reward,
    numActions: trajectory.numActions,
    actionIsValid: trajectory.actionIsValid,
    actionIsEffective: trajectory.actionIsEffective,
    finishReason: trajectory.finishReason,
    responseTokens: trajectory.responseLength,
    turns: trajectory.turns.map((turn) => ({
      observation: turn.observation,
      response: turn.response,
      formatOk: replyFollowsFormat(turn.response, think),
      formatPenalized: turn.formatPenalized,
      actions: turn.actions,
      executed: turn.executed,
      reward: turn.reward,
    })),
  };
}

const count = (n: number) => n.toLocaleString("en-US");

export const SUMMARY_HEADER = [
  "env",
  "episodes",
  "success",
  "oracle",
  "mean reward",
  "format errors",
  "penalised turns",
  "turns",
  "actions",
  "valid actions",
  "prompt tokens",
  "completion tokens",
];

export function summaryRows(summaries: readonly EnvSummary[]): string[][] {
  return summaries.map((s) => [
    s.env,
    String(s.episodes),
    `${formatPercent(s.successRate)} ± ${(s.successStderr * 100).toFixed(1)}`,
    formatPercent(s.oracleSuccessRate),
    s.meanReward.toFixed(3),
    formatPercent(s.formatErrorRate),
    formatPercent(s.penalizedTurnRate),
    s.meanTurns.toFixed(2),
    s.meanActions.toFixed(2),
    formatPercent(s.validActionRate),
    s.usage ? count(s.usage.promptTokens) : "not reported",
    s.usage ? count(s.usage.completionTokens) : "not reported",
  ]);
}

/** The summary table with every column padded to its widest cell, for a terminal. */
export function alignedSummaryTable(summaries: readonly EnvSummary[]): string {
  return markdownTable(SUMMARY_HEADER, summaryRows(summaries), { aligned: true });
}

export interface RunDescription {
  model: string;
  baseUrl: string;
  settings: RolloutSettings;
  startedAt: string;
  /** The preset and message of the error that stopped the run early, if one did. */
  stoppedBy?: { env: string; message: string };
}

export function summaryMarkdown(run: RunDescription, summaries: readonly EnvSummary[]): string {
  const s = run.settings;
  const lines = [
    `# ${run.model} on RAGEN's environments`,
    "",
    `- endpoint: ${run.baseUrl}`,
    `- started: ${run.startedAt}`,
    `- ${s.seeds} episodes per env on the validation seeds from 123; ${s.maxTurns} turns, ` +
      `${s.maxActionsPerTurn} actions per answer, max_tokens ${s.maxTokens}, temperature ${s.temperature}` +
      `${s.topP === undefined ? "" : `, top_p ${s.topP}`}, ${s.think ? "<think> and <answer>" : "<answer> only"}`,
    "",
    markdownTable(SUMMARY_HEADER, summaryRows(summaries)),
    "",
    "success ± one standard error; oracle: the built-in oracle on the same seeds and action limits; format " +
      "errors: turns whose reply broke the tag layout; penalised turns: RAGEN's format penalty (bad layout, " +
      "an answer part that is no action, or no valid action); tokens as the server reported them.",
  ];
  if (run.stoppedBy) lines.push("", `Stopped early at ${run.stoppedBy.env}: ${run.stoppedBy.message}`);
  return `${lines.join("\n")}\n`;
}
