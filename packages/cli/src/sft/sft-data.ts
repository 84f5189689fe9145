/**
 * Warm-start data for the embedded default model: whole multi-turn chats in RAGEN's prompt format where
 * each assistant turn is a short templated thought and one action. The action is the oracle's with
 * probability `oracleProbability`, else a random one, so a model trained on this starts mediocre —
 * it knows the format and some sense, and leaves RL something to improve. The thought always explains
 * the action actually taken, so thinking and acting agree.
 */
import { createEnv, listPresets, Rng, randomAction } from "@ragen/envs";
import { buildChatMessages, instructionText, type PromptFormat, type PromptTurn } from "@ragen/rollout";
import type { ChatMessage } from "@ragen/tokenizer";
import { guideAction } from "./guide.js";
import { thoughtFor } from "./thoughts.js";

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
      const action = useOracle ? guideAction(env, rng) : randomAction(env, rng);
      const response = `${thoughtFor(env, action, useOracle)}</think><answer>${action}</answer>`;
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

/**
 * Reading drills: one-turn chats without the rules text, so a sequence is ~140 tokens instead of ~500.
 * A model trained from scratch learns to copy and to look things up in its context (here: the move it
 * named into the answer, the player's and goal's cells from the grid) only after hundreds of steps of
 * such lookups; short sequences make those steps cheap, and the skill carries over to the full prompts.
 */
export function generateReadingDrills(options: Omit<SftOptions, "maxTurns">): SftConversation[] {
  return generateSftConversations({ ...options, maxTurns: 1 }).map((chat) => ({
    ...chat,
    instructions: "",
    messages: buildChatMessages("", chat.turns, options.format ?? DEFAULT_SFT_FORMAT),
  }));
}

/** The texts a small BPE vocabulary is trained on: every message of every chat. */
export function sftCorpus(conversations: readonly SftConversation[]): string[] {
  return conversations.flatMap((c) => c.messages.map((m) => m.content));
}
