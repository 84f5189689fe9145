/**
 * Warm-start data for the embedded default model: whole multi-turn chats in RAGEN's prompt format where
 * each assistant turn is a short templated thought and one action. The action is the oracle's with
 * probability `oracleProbability`, else a random one, so a model trained on this starts mediocre —
 * it knows the format and some sense, and leaves RL something to improve. The thought always explains
 * the action actually taken, so thinking and acting agree.
 */
import {
  BanditEnv,
  createEnv,
  type Env,
  FrozenLakeEnv,
  listPresets,
  oracleAction,
  Rng,
  randomAction,
} from "@ragen/envs";
import { buildChatMessages, instructionText, type PromptFormat, type PromptTurn } from "@ragen/rollout";
import type { ChatMessage } from "@ragen/tokenizer";

export interface SftOptions {
  /** Env tag (FrozenLake, Bandit, ...). */
  envTag: string;
  seeds: readonly number[];
  /** Probability that a turn's action is the oracle's (else uniform random). */
  oracleProbability: number;
  /** Most turns per chat (RAGEN's max_turn). */
  maxTurns?: number;
  format?: PromptFormat;
}

export interface SftConversation {
  envTag: string;
  seed: number;
  /** The first user message's rules and action list. */
  instructions: string;
  /** The turns as the prompt shows them, each with its response text (after the "<think>" prefix). */
  turns: PromptTurn[];
  messages: ChatMessage[];
  /** Per turn: whether the action was the oracle's. */
  fromOracle: boolean[];
  success: boolean;
}

export const DEFAULT_SFT_FORMAT: PromptFormat = {
  enableThinking: true,
  maxActionsPerTurn: 1,
  maxResponseLength: 40,
};

const DIRECTION_WORDS: Record<string, string> = { Left: "left", Right: "right", Up: "up", Down: "down" };

/** A one-sentence reason for `action` in the env's current state. */
export function thoughtFor(env: Env, action: string): string {
  if (env instanceof FrozenLakeEnv && env.map && env.position) {
    const goalRow = Math.floor(env.map.goal / env.map.size);
    const goalCol = env.map.goal % env.map.size;
    const { row, col } = env.position;
    const wanted: string[] = [];
    if (goalRow > row) wanted.push("down");
    if (goalRow < row) wanted.push("up");
    if (goalCol > col) wanted.push("right");
    if (goalCol < col) wanted.push("left");
    const where = wanted.length > 0 ? wanted.join(" and ") : "here";
    const move = DIRECTION_WORDS[action] ?? action.toLowerCase();
    return wanted.includes(move)
      ? `The goal is ${where} of me. Moving ${move} brings me closer while avoiding holes.`
      : `The goal is ${where} of me, but the ice is slippery and holes are near, so I try ${move}.`;
  }
  if (env instanceof BanditEnv) {
    return `${action} sounds like the arm with the bigger payoff, so I choose ${action}.`;
  }
  return `I choose ${action}.`;
}

/** One chat per seed, played by the oracle/random mix. Deterministic for the same options. */
export function generateSftConversations(options: SftOptions): SftConversation[] {
  const preset = listPresets()[options.envTag];
  const budget = preset?.maxActionsPerTraj ?? 10;
  const maxTurns = options.maxTurns ?? 5;
  const format = options.format ?? DEFAULT_SFT_FORMAT;
  const env = createEnv(options.envTag);
  return options.seeds.map((seed) => {
    const rng = new Rng(seed, "sft-policy");
    let observation = env.reset(seed);
    const instructions = instructionText(env.instructions, env.actions, format.maxActionsPerTurn);
    const turns: PromptTurn[] = [];
    const fromOracle: boolean[] = [];
    let actionsLeft = budget;
    let success = false;
    while (!env.done && actionsLeft > 0 && turns.length < maxTurns) {
      const useOracle = rng.bool(options.oracleProbability);
      const action = useOracle ? oracleAction(env, rng) : randomAction(env, rng);
      const response = `${thoughtFor(env, action)}</think><answer>${action}</answer>`;
      const result = env.step(action);
      turns.push({ observation, actionsLeft, response, reward: result.reward });
      fromOracle.push(useOracle);
      observation = result.observation;
      actionsLeft--;
      success = result.info.success;
    }
    return {
      envTag: options.envTag,
      seed,
      instructions,
      turns,
      messages: buildChatMessages(instructions, turns, format),
      fromOracle,
      success,
    };
  });
}

/** The texts a small BPE vocabulary is trained on: every message of every chat. */
export function sftCorpus(conversations: readonly SftConversation[]): string[] {
  return conversations.flatMap((c) => c.messages.map((m) => m.content));
}
