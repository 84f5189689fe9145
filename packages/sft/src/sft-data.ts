/**
 * Warm-start data for the embedded default model: whole multi-turn chats in RAGEN's prompt format where
 * each assistant turn is a short templated thought and one action. The action is the oracle's with
 * probability `oracleProbability`, else a random one, so a model trained on this starts mediocre —
 * it knows the format and some sense, and leaves RL something to improve. The thought always explains
 * the action actually taken, so thinking and acting agree.
 */
import {
  actionBudget,
  createEnv,
  guidePlan,
  guidePlansAhead,
  Rng,
  randomAction,
  thoughtFor,
} from "@ragen/envs";
import { buildChatMessages, instructionText, type PromptFormat, type PromptTurn } from "@ragen/rollout";
import type { ChatMessage } from "@ragen/tokenizer";

export interface SftOptions {
  /** Env tag (FrozenLake, Bandit, ...). */
  envTag: string;
  seeds: readonly number[];
  /** Probability that a turn's action is the oracle's (else uniform random). */
  oracleProbability: number;
  /**
   * When that choice is made: every turn on its own ("turn", the default), or once per chat ("chat"),
   * every later turn following the first. With one choice per chat the model learns to keep the
   * template its history shows, so the first turn's choice decides the whole episode — one decision
   * whose reward RL can credit, as with Bandit's single pull, instead of five that each move the
   * episode's success by a few points.
   */
  oracleChoice?: "turn" | "chat";
  /** Most turns per chat (RAGEN's max_turn). */
  maxTurns?: number;
  /**
   * Actions per turn, joined by "||" in the answer (default 1). Only a guide that plans ahead
   * (`guidePlansAhead`: FrozenLake's moves can be planned blind) fills a turn with several, so other
   * envs keep one action a turn; the prompt offers `format.maxActionsPerTurn`, which defaults to this.
   */
  actionsPerTurn?: number;
  /**
   * Actions a random (non-oracle) FrozenLake turn tries (default `actionsPerTurn`). Fewer than the
   * guide's makes the mediocre template a hesitant one that leaves part of the action budget unused —
   * a second thing RL can improve, and a larger gap between the templates for it to find.
   */
  randomActionsPerTurn?: number;
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

/** The warm-start prompt format offering `actionsPerTurn` actions a turn. */
export function sftFormat(actionsPerTurn = 1): PromptFormat {
  return { ...DEFAULT_SFT_FORMAT, maxActionsPerTurn: actionsPerTurn };
}

/** One chat per seed, played by the oracle/random mix. Deterministic for the same options. */
export function generateSftConversations(options: SftOptions): SftConversation[] {
  const budget = actionBudget(options.envTag);
  const maxTurns = options.maxTurns ?? 5;
  const actionsPerTurn = options.actionsPerTurn ?? 1;
  const randomActionsPerTurn = options.randomActionsPerTurn ?? actionsPerTurn;
  if (
    !Number.isInteger(randomActionsPerTurn) ||
    randomActionsPerTurn < 1 ||
    randomActionsPerTurn > actionsPerTurn
  )
    throw new RangeError(
      `generateSftConversations(): randomActionsPerTurn must be a whole number from 1 to actionsPerTurn (${actionsPerTurn}), got ${randomActionsPerTurn}`,
    );
  const format = options.format ?? sftFormat(actionsPerTurn);
  if (actionsPerTurn > format.maxActionsPerTurn)
    throw new RangeError(
      `generateSftConversations(): ${actionsPerTurn} actions per turn, but the prompt allows ${format.maxActionsPerTurn}`,
    );
  const env = createEnv(options.envTag);
  // A guided turn is as long as the guide's plan: up to `count` moves where it plans blind
  // (FrozenLake's, shorter where the plan ends on the goal), one action elsewhere. Random turns match it.
  const plansAhead = guidePlansAhead(options.envTag);
  return options.seeds.map((seed) => {
    const rng = new Rng(seed, "sft-policy");
    // Drawn from its own stream, so per-turn data is unchanged by the option's existence.
    const chatUsesOracle =
      options.oracleChoice === "chat" ? new Rng(seed, "sft-template").bool(options.oracleProbability) : null;
    let observation = env.reset(seed);
    const instructions = instructionText(env.instructions, env.actions, format.maxActionsPerTurn);
    const turns: PromptTurn[] = [];
    const fromOracle: boolean[] = [];
    let actionsLeft = budget;
    let success = false;
    while (!env.done && actionsLeft > 0 && turns.length < maxTurns) {
      const useOracle = chatUsesOracle ?? rng.bool(options.oracleProbability);
      const wanted = useOracle ? actionsPerTurn : randomActionsPerTurn;
      const count = Math.min(wanted, actionsLeft);
      const actions = useOracle
        ? guidePlan(env, rng, count)
        : Array.from({ length: plansAhead ? count : 1 }, () => randomAction(env, rng));
      const response = `${thoughtFor(env, actions, useOracle)}</think><answer>${actions.join(" || ")}</answer>`;
      const turnObservation = observation;
      const turnActionsLeft = actionsLeft;
      let reward = 0;
      for (const action of actions) {
        if (env.done || actionsLeft === 0) break;
        const result = env.step(action);
        reward += result.reward;
        observation = result.observation;
        actionsLeft--;
        success = result.info.success;
      }
      turns.push({ observation: turnObservation, actionsLeft: turnActionsLeft, response, reward });
      fromOracle.push(useOracle);
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

export interface DrillOptions extends SftOptions {
  /**
   * Which turns a drill keeps: the chat's first `maxTurns` ("first", the default), or `maxTurns`
   * consecutive turns from a random point of a whole chat ("random"). On WebShop every page restates the
   * instruction, so a later turn stands alone, and drills that start on a results or a product page teach
   * what only those pages ask for (copying a product id, an option value).
   */
  start?: "first" | "random";
  /** Turns of the whole chat a "random" drill is cut from (default 5). */
  chatTurns?: number;
}

/**
 * Reading drills: chats without the rules text, one turn by default, so a sequence is ~140 tokens
 * instead of ~500. A model trained from scratch learns to copy and to look things up in its context
 * (here: the move it named into the answer, the player's and goal's cells from the grid) only after
 * hundreds of steps of such lookups; short sequences make those steps cheap, and the skill carries over
 * to the full prompts. Drills of several turns (`maxTurns`) teach the later turns' lookup: the latest
 * state among the earlier ones in the history.
 */
export function generateReadingDrills(options: DrillOptions): SftConversation[] {
  const drillTurns = options.maxTurns ?? 1;
  const { start = "first", chatTurns = 5, ...chatOptions } = options;
  const chats = generateSftConversations({
    ...chatOptions,
    maxTurns: start === "random" ? Math.max(chatTurns, drillTurns) : drillTurns,
  });
  const format = options.format ?? sftFormat(options.actionsPerTurn);
  return chats.map((chat) => {
    const from =
      start === "random"
        ? new Rng(chat.seed, "drill-start").int(Math.max(1, chat.turns.length - drillTurns + 1))
        : 0;
    const turns = chat.turns.slice(from, from + drillTurns);
    return {
      ...chat,
      instructions: "",
      turns,
      fromOracle: chat.fromOracle.slice(from, from + drillTurns),
      messages: buildChatMessages("", turns, format),
    };
  });
}

/** The texts a small BPE vocabulary is trained on: every message of every chat. */
export function sftCorpus(conversations: readonly SftConversation[]): string[] {
  return conversations.flatMap((c) => c.messages.map((m) => m.content));
}
