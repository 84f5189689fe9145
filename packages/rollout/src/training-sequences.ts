/**
 * What an update trains on. Old log-probs are only valid in the context they were sampled in, so every
 * sampled token must be trained after exactly the prompt the policy was given. Without a history window
 * each turn's prompt is a prefix of the whole chat, and the chat is one training sequence. With a window
 * that dropped turns, a later turn was sampled after a shorter prompt than the chat holds: the episode
 * is then trained as several sequences, each the exact prompt of a turn followed by what was sampled —
 * consecutive turns whose prompts extend each other share one sequence.
 */
import type { ConversationTurn, TokenSequence } from "./conversation.js";

/** Where rewards go: "trajectory" puts the total on the last sampled token, "turn" each turn's on its own. */
export type RewardPlacement = "trajectory" | "turn";

/** One sequence to train on: a context exactly as the sampler was given it, then what it sampled there. */
export interface TrainingSequence {
  tokens: Int32Array;
  /** 1 exactly on the tokens the policy sampled. */
  lossMask: Uint8Array;
  /** The sampler's log-probs, aligned to `tokens`; 0 where the mask is 0. */
  oldLogProbs: Float32Array;
  /** Reward per token (see placeSequenceRewards). */
  tokenRewards: Float32Array;
  /** The first and last turn (indices into the trajectory's turns) whose responses it holds. */
  firstTurn: number;
  lastTurn: number;
}

/**
 * Rewards on the whole chat: the total on the last sampled token ("trajectory"), or each turn's on its
 * last sampled token ("turn"; a turn that sampled nothing gives its reward to the last sampled token
 * before it).
 */
export function placeChatRewards(
  sequence: TokenSequence,
  turnRewards: readonly number[],
  placement: RewardPlacement,
): Float32Array {
  const tokenRewards = new Float32Array(sequence.tokens.length);
  if (placement === "turn") {
    let last = -1;
    turnRewards.forEach((reward, i) => {
      last = Math.max(last, sequence.turnLastTokenIndex[i] ?? -1);
      if (last >= 0) tokenRewards[last]! += reward;
    });
  } else {
    const last = Math.max(-1, ...sequence.turnLastTokenIndex);
    if (last >= 0) tokenRewards[last] = turnRewards.reduce((sum, r) => sum + r, 0);
  }
  return tokenRewards;
}

/**
 * The sequences an episode must be trained as when its whole chat (`chat`, from Conversation.sequence())
 * is not what the sampler saw; undefined when it is (no history window, or one that dropped nothing).
 * Turns whose prompt ids were not recorded are taken to be prefixes of the chat.
 *
 * Rewards are placed so that, at gamma = 1, every sampled token's return (the rewards from it to the end
 * of its sequence) is the one it has in the whole chat: "trajectory" puts the episode's total on the last
 * token of every sequence; "turn" puts each turn's reward on its last sampled token and the rewards of the
 * turns after a sequence on that sequence's last token.
 */
export function splitTrainingSequences(
  turns: readonly ConversationTurn[],
  chat: TokenSequence,
  turnRewards: readonly number[],
  placement: RewardPlacement,
): TrainingSequence[] | undefined {
  if (chatHoldsEveryPrompt(turns, chat)) return undefined;
  const rows: RowBuilder[] = [];
  for (const [i, turn] of turns.entries()) {
    const sampled = turn.tokens;
    if (sampled === undefined || sampled.length === 0) continue;
    const prompt = turn.promptTokens!;
    let row = rows.at(-1);
    if (row === undefined || !startsWith(prompt, row.tokens)) {
      row = new RowBuilder(i);
      rows.push(row);
    }
    for (let k = row.tokens.length; k < prompt.length; k++) row.push(prompt[k]!, 0, 0);
    for (let k = 0; k < sampled.length; k++) row.push(sampled[k]!, 1, turn.logProbs![k]!);
    row.lastTurn = i;
    row.lastTokenOfTurn.set(i, row.tokens.length - 1);
  }
  const total = turnRewards.reduce((sum, r) => sum + r, 0);
  return rows.map((row) => {
    const tokenRewards = new Float32Array(row.tokens.length);
    const rowLast = row.tokens.length - 1;
    if (placement === "trajectory") tokenRewards[rowLast] = total;
    else {
      let last = -1;
      for (let j = row.firstTurn; j < turnRewards.length; j++) {
        // Turns after the row: their rewards follow every token of it.
        last = j > row.lastTurn ? rowLast : Math.max(last, row.lastTokenOfTurn.get(j) ?? -1);
        tokenRewards[last]! += turnRewards[j]!;
      }
    }
    return {
      tokens: Int32Array.from(row.tokens),
      lossMask: Uint8Array.from(row.mask),
      oldLogProbs: Float32Array.from(row.logProbs),
      tokenRewards,
      firstTurn: row.firstTurn,
      lastTurn: row.lastTurn,
    };
  });
}

class RowBuilder {
  readonly tokens: number[] = [];
  readonly mask: number[] = [];
  readonly logProbs: number[] = [];
  lastTurn: number;
  /** Index in the row of each turn's last sampled token. */
  readonly lastTokenOfTurn = new Map<number, number>();

  constructor(readonly firstTurn: number) {
    this.lastTurn = firstTurn;
  }

  push(token: number, mask: number, logProb: number): void {
    this.tokens.push(token);
    this.mask.push(mask);
    this.logProbs.push(logProb);
  }
}

/** Whether each turn's recorded prompt is exactly the chat's tokens before that turn's sampled ids. */
function chatHoldsEveryPrompt(turns: readonly ConversationTurn[], chat: TokenSequence): boolean {
  return turns.every((turn, i) => {
    const sampled = turn.tokens?.length ?? 0;
    const prompt = turn.promptTokens;
    if (sampled === 0 || prompt === undefined) return true;
    const start = chat.turnLastTokenIndex[i]! - sampled + 1;
    return prompt.length === start && startsWith(chat.tokens, prompt);
  });
}

function startsWith(sequence: ArrayLike<number>, prefix: ArrayLike<number>): boolean {
  if (prefix.length > sequence.length) return false;
  for (let k = 0; k < prefix.length; k++) if (sequence[k] !== prefix[k]) return false;
  return true;
}
