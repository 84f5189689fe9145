import type { Tokenizer } from "@ragen/tokenizer";
import { Conversation } from "./conversation.js";
import type { EnvManager, EnvSlot, RolloutMode, TurnOutcome } from "./env-manager.js";
import { deservesFormatPenalty, type ParsedResponse, parseResponse } from "./parse.js";
import type { Policy, PolicyOutput } from "./policy.js";
import { instructionText, type PromptFormat } from "./prompt.js";
import {
  placeChatRewards,
  type RewardPlacement,
  splitTrainingSequences,
  type TrainingSequence,
} from "./training-sequences.js";

/**
 * RAGEN's rollout settings (max_turn, max_actions_per_turn, response_length, ...): the defaults of the
 * options below, and of the training job's `rollout` section.
 */
export const ROLLOUT_DEFAULTS = {
  maxTurns: 5,
  maxActionsPerTurn: 5,
  maxNewTokens: 400,
  enableThinking: true,
  temperature: 1,
  /** 1: no nucleus cut (verl's top_p). */
  topP: 1,
  /** 0: no top-k cut (verl's top_k -1). */
  topK: 0,
  formatPenalty: -0.1,
  penalizeExtraActions: false,
  rewardPlacement: "trajectory",
  contextOverflow: "truncate",
} as const;

/** What happens to an env whose next prompt plus a full response would not fit maxSequenceLength. */
export type ContextOverflow = "truncate" | "error";

export interface RolloutOptions {
  /** "train" moves the seeds on at every call; "val" always uses the validation seeds. Default "train". */
  mode?: RolloutMode;
  /** Default 5 (RAGEN's max_turn). */
  maxTurns?: number;
  /** Default 5. */
  maxActionsPerTurn?: number;
  /** Default true: responses start with "<think>". */
  enableThinking?: boolean;
  /**
   * Keep the last k turns in each prompt (default: all; RAGEN's max_context_window). An episode whose
   * prompts dropped turns is trained as several sequences, each a turn's exact prompt and response
   * (Trajectory.trainingSequences, trainingRows), so old log-probs stay those of the trained context.
   */
  historyWindow?: number;
  /** Token budget of each response (RAGEN's response_length; its default is 400). */
  maxNewTokens: number;
  /** Default 1. */
  temperature?: number;
  /**
   * Sample from the smallest set of tokens holding this much probability (default 1: all). The
   * log-probs kept are of the untruncated softmax(logits / temperature), as the update recomputes them.
   */
  topP?: number;
  /** Sample from the k most likely tokens (default 0: all); log-probs as for topP. */
  topK?: number;
  /** Seed of the sampling; each turn derives its own from it. Default 0. */
  seed?: number;
  /** Added once for each turn whose tags did not match, named an invalid action or had none valid. Default -0.1. */
  formatPenalty?: number;
  /** Also charge the format penalty for actions beyond maxActionsPerTurn (RAGEN cuts them off freely). Default false. */
  penalizeExtraActions?: boolean;
  /** "trajectory" (default): the total reward on the last sampled token; "turn": each turn's on its last token. */
  rewardPlacement?: RewardPlacement;
  /** The most tokens one context may hold, prompt and response (RAGEN's max_model_len). Default: no limit. */
  maxSequenceLength?: number;
  /**
   * An env whose next prompt plus maxNewTokens would exceed maxSequenceLength: "truncate" (default) ends
   * its episode before that turn (finish reason "context"); "error" throws a ContextOverflowError.
   */
  contextOverflow?: ContextOverflow;
  /** Called after each turn with the number of envs still playing (for progress bars). */
  onTurn?: (turn: number, active: number) => void;
}

/** One turn, for reports and case studies. */
export interface TurnRecord {
  observation: string;
  /** The full response text, prefix included. */
  response: string;
  think: string;
  /** Parsed actions, as the env names them. */
  actions: string[];
  /** The actions that ran (the budget or the end of the episode may cut the list). */
  executed: string[];
  /** Step rewards plus the format penalty when charged. */
  reward: number;
  formatPenalized: boolean;
  responseTokens: number;
}

/** "env-lost": the env's server failed mid-episode (EnvSlot.lost); such episodes leave the batch. */
export type FinishReason = "done" | "budget" | "max-turns" | "context" | "env-lost";

export interface Trajectory {
  index: number;
  groupId: number;
  tag: string;
  seed: number;
  /**
   * Prompt, every sampled response and the template text between turns, as one sequence. This whole
   * chat is what the update trains on unless `trainingSequences` is set.
   */
  tokens: Int32Array;
  /** 1 exactly on the tokens the policy sampled. */
  lossMask: Uint8Array;
  /** The sampler's log-probs, aligned to `tokens`; 0 where the mask is 0. */
  oldLogProbs: Float32Array;
  /** Reward per token (see RolloutOptions.rewardPlacement). */
  tokenRewards: Float32Array;
  /**
   * Set when the whole chat is not what the sampler saw (a history window dropped turns from a prompt):
   * the sequences to train on instead, each a turn's exact prompt followed by its sampled ids, together
   * holding every sampled token once. See trainingRows.
   */
  trainingSequences?: TrainingSequence[];
  /** Sum of the turn rewards, format penalties included. */
  reward: number;
  turns: TurnRecord[];
  success: boolean;
  numActions: number;
  /** Fraction of executed actions the env accepted (0 with none). */
  actionIsValid: number;
  /** Fraction of executed actions that changed the state (0 with none). */
  actionIsEffective: number;
  /** Sampled tokens over all turns. */
  responseLength: number;
  finishReason: FinishReason;
  /**
   * The version of the weights that sampled it, where the caller numbers them (a remote rollout's adapter
   * version; 0: the base model). Unset: the weights being trained.
   */
  policyVersion?: number;
  /**
   * A weight on each sampled token's policy-gradient term, aligned to `tokens` (1 where unset): the
   * truncated importance weight between the trainer's and the sampler's log-probs when another engine
   * sampled. Set on the rows an update trains (trainingRows'), not on an episode it splits.
   */
  importanceWeights?: Float32Array;
}

/** An episode whose env server failed; its whole group leaves the batch. */
export interface LostEpisode {
  tag: string;
  seed: number;
  groupId: number;
  index: number;
  /** What failed, naming the env, the seed, the request and the server's URL. */
  reason: string;
}

export interface TrajectoryBatch {
  mode: RolloutMode;
  /**
   * The episodes played to their end. A group with an episode whose env server failed is left out
   * whole, so group-relative estimates and filters only see complete groups.
   */
  trajectories: Trajectory[];
  /** Episodes whose env server failed (absent when none did). */
  lost?: LostEpisode[];
  /** RAGEN's metric names: {train|val-env}/{Tag}/{success, num_actions, ...}, {train|val-env}/response_length. */
  metrics: Record<string, number>;
}

/** The policy broke its contract (wrong number of outputs, tokens and log-probs of different lengths), or an option is invalid. */
export class RolloutError extends Error {
  override readonly name: string = "RolloutError";
}

/** With contextOverflow "error": an env's next turn would not fit maxSequenceLength. */
export class ContextOverflowError extends RolloutError {
  override readonly name = "ContextOverflowError";
  constructor(
    readonly tag: string,
    readonly seed: number,
    /** From 1. */
    readonly turn: number,
    readonly promptTokens: number,
    readonly maxNewTokens: number,
    readonly maxSequenceLength: number,
  ) {
    super(
      `${tag} env (seed ${seed}), turn ${turn}: its prompt of ${promptTokens} tokens plus a response of up to ${maxNewTokens} would exceed the context limit of ${maxSequenceLength} tokens (maxSequenceLength); raise the limit, lower maxNewTokens or maxTurns, or keep fewer turns in the prompt (historyWindow)`,
    );
  }
}

interface EnvRun {
  slot: EnvSlot;
  conversation: Conversation;
  turns: TurnRecord[];
  finishReason?: FinishReason;
}

/** A turn whose response is parsed and whose actions are not yet played. */
interface PendingTurn {
  run: EnvRun;
  output: PolicyOutput;
  observation: string;
  response: string;
  parsed: ParsedResponse;
}

/**
 * Runs one batch of multi-turn episodes: every env still playing generates together each turn, the
 * answers are parsed and executed, and finished envs drop out. Malformed text never throws: it is a
 * format penalty and a turn without actions.
 */
export async function runRollout(
  manager: EnvManager,
  policy: Policy,
  tokenizer: Tokenizer,
  options: RolloutOptions,
): Promise<TrajectoryBatch> {
  checkRolloutOptions(options);
  const mode = options.mode ?? "train";
  const maxTurns = options.maxTurns ?? ROLLOUT_DEFAULTS.maxTurns;
  const maxActionsPerTurn = options.maxActionsPerTurn ?? ROLLOUT_DEFAULTS.maxActionsPerTurn;
  const formatPenalty = options.formatPenalty ?? ROLLOUT_DEFAULTS.formatPenalty;
  const format: PromptFormat = {
    enableThinking: options.enableThinking ?? ROLLOUT_DEFAULTS.enableThinking,
    maxActionsPerTurn,
    maxResponseLength: options.maxNewTokens,
    historyWindow: options.historyWindow,
  };
  const runs: EnvRun[] = (await manager.reset(mode)).map((slot) => ({
    slot,
    conversation: new Conversation(
      tokenizer,
      instructionText(slot.env.instructions, slot.env.actions, maxActionsPerTurn),
      format,
    ),
    turns: [],
    ...(slot.lost === undefined ? {} : { finishReason: "env-lost" as const }),
  }));

  policy.rolloutBoundary?.();
  try {
    await playTurns();
  } finally {
    policy.rolloutBoundary?.();
  }

  async function playTurns(): Promise<void> {
    for (let turn = 0; turn < maxTurns; turn++) {
      const active = runs.filter((run) => run.finishReason === undefined);
      const ready: EnvRun[] = [];
      const prompts = [];
      for (const run of active) {
        run.conversation.openTurn(run.slot.observation, manager.actionsLeft(run.slot));
        const tokens = run.conversation.promptTokens();
        if (
          options.maxSequenceLength !== undefined &&
          tokens.length + options.maxNewTokens > options.maxSequenceLength
        ) {
          if (options.contextOverflow === "error")
            throw new ContextOverflowError(
              run.slot.tag,
              run.slot.seed,
              turn + 1,
              tokens.length,
              options.maxNewTokens,
              options.maxSequenceLength,
            );
          run.conversation.abandonOpenTurn();
          run.finishReason = "context";
          continue;
        }
        ready.push(run);
        prompts.push({
          tokens,
          messages: run.conversation.messages(),
          responsePrefix: run.conversation.responsePrefix,
          // Seeds of training resets never repeat, so seed and slot name one episode.
          episodeId: `${run.slot.seed}:${run.slot.index}`,
        });
      }
      if (ready.length === 0) break;
      const outputs = await policy.generate(prompts, {
        maxNewTokens: options.maxNewTokens,
        temperature: options.temperature ?? ROLLOUT_DEFAULTS.temperature,
        ...(options.topP === undefined ? {} : { topP: options.topP }),
        ...(options.topK === undefined ? {} : { topK: options.topK }),
        seed: turnSeed(options.seed ?? 0, turn),
      });
      checkOutputs(outputs, ready.length);
      const turns = ready.map((run, i) => readResponse(run, outputs[i]!));
      // Every env's actions at once (remote envs wait on their servers together); the outcomes come
      // back in slot order, so the batch is the same whichever env answers first.
      const outcomes = await manager.stepAll(
        turns.map(({ run, parsed }) => ({ slot: run.slot, actions: parsed.actions })),
      );
      for (const [i, turn] of turns.entries()) recordTurn(turn, outcomes[i]!);
      options.onTurn?.(turn, runs.filter((run) => run.finishReason === undefined).length);
    }
  }
  for (const run of runs) run.finishReason ??= "max-turns";

  function readResponse(run: EnvRun, output: PolicyOutput): PendingTurn {
    const { slot, conversation } = run;
    const observation = slot.observation;
    const response = conversation.recordResponse(output.tokens, output.logProbs);
    const parsed = parseResponse(response, {
      actions: slot.env.actions,
      maxActionsPerTurn,
      enableThinking: format.enableThinking,
    });
    return { run, output, observation, response, parsed };
  }

  function recordTurn(turn: PendingTurn, outcome: TurnOutcome): void {
    const { run, output, observation, response, parsed } = turn;
    const { slot, conversation } = run;
    const penalized = deservesFormatPenalty(parsed, { penalizeExtraActions: options.penalizeExtraActions });
    const reward = outcome.reward + (penalized ? formatPenalty : 0);
    conversation.recordReward(reward);
    run.turns.push({
      observation,
      response,
      think: parsed.think,
      actions: parsed.actions,
      executed: outcome.executed,
      reward,
      formatPenalized: penalized,
      responseTokens: output.tokens.length,
    });
    if (slot.lost !== undefined) run.finishReason = "env-lost";
    else if (slot.done) run.finishReason = "done";
    else if (manager.actionsLeft(slot) <= 0) run.finishReason = "budget";
  }

  const lostRuns = runs.filter((run) => run.slot.lost !== undefined);
  const lostGroups = new Set(lostRuns.map((run) => run.slot.groupId));
  const kept = runs.filter((run) => !lostGroups.has(run.slot.groupId));
  if (kept.length === 0)
    throw new RolloutError(
      `every episode group of this ${mode} batch lost an env server, so there is nothing to ${mode === "train" ? "train on" : "validate"}; the first failure: ${lostRuns[0]!.slot.lost}`,
    );
  const trajectories = kept.map((run) => toTrajectory(run, options.rewardPlacement ?? "trajectory"));
  const metrics = batchMetrics(mode, trajectories);
  if (lostRuns.length === 0) return { mode, trajectories, metrics };
  const scope = metricScope(mode);
  metrics[`${scope}/env_lost`] = lostRuns.length;
  metrics[`${scope}/env_lost_dropped`] = runs.length - kept.length;
  const lost = lostRuns.map(({ slot }) => ({
    tag: slot.tag,
    seed: slot.seed,
    groupId: slot.groupId,
    index: slot.index,
    reason: slot.lost!,
  }));
  return { mode, trajectories, lost, metrics };
}

function turnSeed(seed: number, turn: number): number {
  // A different stream per turn; the multiplier is a large odd constant so nearby seeds do not overlap.
  return (seed * 1_000_003 + turn * 7919) >>> 0;
}

function checkOutputs(outputs: readonly PolicyOutput[], expected: number): void {
  if (outputs.length !== expected)
    throw new RolloutError(`the policy returned ${outputs.length} outputs for ${expected} prompts`);
  outputs.forEach((output, i) => {
    if (output.tokens.length !== output.logProbs.length)
      throw new RolloutError(
        `policy output ${i} has ${output.tokens.length} tokens but ${output.logProbs.length} log-probs`,
      );
  });
}

/** Throws a RolloutError naming an option outside its range. */
function checkRolloutOptions(options: RolloutOptions): void {
  const positive = (name: keyof RolloutOptions, value: number | undefined) => {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new RolloutError(`${name} must be a positive integer, got ${value}`);
  };
  positive("maxNewTokens", options.maxNewTokens);
  positive("historyWindow", options.historyWindow);
  positive("maxSequenceLength", options.maxSequenceLength);
  const oneOf = (name: keyof RolloutOptions, value: string | undefined, allowed: readonly string[]) => {
    if (value !== undefined && !allowed.includes(value))
      throw new RolloutError(`${name} must be one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`);
  };
  oneOf("rewardPlacement", options.rewardPlacement, ["trajectory", "turn"]);
  oneOf("contextOverflow", options.contextOverflow, ["truncate", "error"]);
}

function toTrajectory(run: EnvRun, placement: RewardPlacement): Trajectory {
  const { slot, turns } = run;
  const sequence = run.conversation.sequence();
  const turnRewards = turns.map((t) => t.reward);
  const tokenRewards = placeChatRewards(sequence, turnRewards, placement);
  const reward = turns.reduce((sum, t) => sum + t.reward, 0);
  const answered = run.conversation.turns.filter((turn) => turn.response !== undefined);
  const trainingSequences = splitTrainingSequences(answered, sequence, turnRewards, placement);
  const numActions = slot.actionsUsed;
  return {
    index: slot.index,
    groupId: slot.groupId,
    tag: slot.tag,
    seed: slot.seed,
    tokens: sequence.tokens,
    lossMask: sequence.lossMask,
    oldLogProbs: sequence.logProbs,
    tokenRewards,
    ...(trainingSequences ? { trainingSequences } : {}),
    reward,
    turns,
    success: slot.success,
    numActions,
    actionIsValid: numActions === 0 ? 0 : slot.validActions / numActions,
    actionIsEffective: numActions === 0 ? 0 : slot.effectiveActions / numActions,
    responseLength: turns.reduce((sum, t) => sum + t.responseTokens, 0),
    finishReason: run.finishReason ?? "max-turns",
  };
}

/**
 * The rows an update trains on: each trajectory as it is, or, where it has trainingSequences, one row per
 * sequence (the trajectory's fields, with that sequence's tokens, mask, log-probs and rewards, its turns,
 * and their sampled tokens as responseLength). A batch without history-window splits comes back as it is.
 */
export function trainingRows(trajectories: readonly Trajectory[]): Trajectory[] {
  if (!trajectories.some((t) => t.trainingSequences)) return [...trajectories];
  return trajectories.flatMap((t) => {
    if (!t.trainingSequences) return [t];
    // The weights follow the whole chat's positions, which no training sequence shares.
    if (t.importanceWeights)
      throw new RolloutError(
        `trajectory ${t.index} (${t.tag}:${t.seed}) has importanceWeights and trainingSequences: set the weights on trainingRows' rows`,
      );
    const { trainingSequences: _, ...episode } = t;
    return t.trainingSequences.map((sequence) => {
      const turns = t.turns.slice(sequence.firstTurn, sequence.lastTurn + 1);
      return {
        ...episode,
        tokens: sequence.tokens,
        lossMask: sequence.lossMask,
        oldLogProbs: sequence.oldLogProbs,
        tokenRewards: sequence.tokenRewards,
        turns,
        responseLength: turns.reduce((sum, turn) => sum + turn.responseTokens, 0),
      };
    });
  });
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

/** The prefix of a batch's metrics: RAGEN's `train` and `val-env`. */
function metricScope(mode: RolloutMode): "train" | "val-env" {
  return mode === "train" ? "train" : "val-env";
}

/** Per env tag means, plus pass@k over each group (k = group size: any member succeeded). */
export function batchMetrics(mode: RolloutMode, trajectories: readonly Trajectory[]): Record<string, number> {
  const scope = metricScope(mode);
  const metrics: Record<string, number> = {};
  const tags = [...new Set(trajectories.map((t) => t.tag))];
  for (const tag of tags) {
    const ofTag = trajectories.filter((t) => t.tag === tag);
    metrics[`${scope}/${tag}/success`] = mean(ofTag.map((t) => Number(t.success)));
    metrics[`${scope}/${tag}/num_actions`] = mean(ofTag.map((t) => t.numActions));
    metrics[`${scope}/${tag}/action_is_valid`] = mean(ofTag.map((t) => t.actionIsValid));
    metrics[`${scope}/${tag}/action_is_effective`] = mean(ofTag.map((t) => t.actionIsEffective));
    const groups = new Map<number, boolean>();
    for (const t of ofTag) groups.set(t.groupId, (groups.get(t.groupId) ?? false) || t.success);
    const groupSize = ofTag.length / Math.max(groups.size, 1);
    metrics[`${scope}/${tag}/pass@${groupSize}`] = mean([...groups.values()].map(Number));
    // Per env, a collapse shows here first: one env's answers stop fitting its own format.
    metrics[`${scope}/${tag}/format_penalty_rate`] = formatPenaltyRate(ofTag);
  }
  metrics[`${scope}/response_length`] = mean(trajectories.map((t) => t.responseLength));
  metrics[`${scope}/reward`] = mean(trajectories.map((t) => t.reward));
  metrics[`${scope}/format_penalty_rate`] = formatPenaltyRate(trajectories);
  return metrics;
}

/** The share of turns that drew the format penalty. */
function formatPenaltyRate(trajectories: readonly Trajectory[]): number {
  return mean(trajectories.flatMap((t) => t.turns.map((turn) => Number(turn.formatPenalized))));
}
