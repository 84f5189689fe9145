import type { ChatMessage, Tokenizer } from "@ragen/tokenizer";
import { buildChatMessages, type PromptFormat, type PromptTurn, responsePrefix } from "./prompt.js";

/** A turn with the exact ids the policy was given and sampled. */
export interface ConversationTurn extends PromptTurn {
  /** The prompt ids the turn was generated from (set by promptTokens()). */
  promptTokens?: Int32Array;
  tokens?: Int32Array;
  logProbs?: Float32Array;
}

/** One trajectory as a single token sequence with where each token came from. */
export interface TokenSequence {
  tokens: Int32Array;
  /** 1 exactly where the policy sampled the token. */
  lossMask: Uint8Array;
  /** The sampler's log-prob of each sampled token; 0 where the mask is 0. */
  logProbs: Float32Array;
  /** Index in `tokens` of each turn's last sampled token (-1 for a turn that sampled nothing). */
  turnLastTokenIndex: number[];
}

// Private-use code points: no env text or template contains them, so they mark where the sampled ids go.
const OPEN = "\u{F0000}";
const CLOSE = "\u{F0001}";
const PLACEHOLDER = /\u{F0000}(\d+)\u{F0001}/u;

/**
 * The chat of one env, kept as text for the template and as exact token ids for the responses.
 * Prompts are rendered with the tokenizer's chat template, and every assistant response is spliced in
 * as the ids that were sampled — never re-tokenised — so the training sequence holds exactly what the
 * sampler saw and produced. Without a history window each turn's prompt is a prefix of the final
 * sequence.
 */
export class Conversation {
  readonly turns: ConversationTurn[] = [];
  private readonly stopTokenIds: ReadonlySet<number>;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly instructions: string,
    readonly format: PromptFormat,
  ) {
    this.stopTokenIds = new Set(
      [tokenizer.imEndId, tokenizer.eosTokenId].filter((id): id is number => id !== undefined),
    );
  }

  get responsePrefix(): string {
    return responsePrefix(this.format.enableThinking);
  }

  /** Starts a turn: the state the model is about to act on. */
  openTurn(observation: string, actionsLeft: number): void {
    if (this.turns.at(-1)?.response === undefined && this.turns.length > 0)
      throw new Error("Conversation.openTurn(): the previous turn has no response yet");
    this.turns.push({ observation, actionsLeft });
  }

  /** Stores the sampled ids of the open turn; returns the full response text (prefix included). */
  recordResponse(tokens: Int32Array, logProbs: Float32Array): string {
    const turn = this.openTurnOrThrow("recordResponse");
    if (tokens.length !== logProbs.length)
      throw new RangeError(`recordResponse(): ${tokens.length} tokens but ${logProbs.length} log-probs`);
    turn.tokens = tokens;
    turn.logProbs = logProbs;
    // A model's padding rows decode to nothing (the text is then malformed: a format penalty, not a crash).
    turn.response = this.tokenizer.decode(tokens, { skipSpecialTokens: true, skipUnknownIds: true });
    return this.responsePrefix + turn.response;
  }

  /** Drops the open turn (used when it cannot be generated, e.g. the context is full). */
  abandonOpenTurn(): void {
    this.openTurnOrThrow("abandonOpenTurn");
    this.turns.pop();
  }

  recordReward(reward: number): void {
    const turn = this.turns.at(-1);
    if (turn?.response === undefined) throw new Error("recordReward(): no answered turn");
    turn.reward = reward;
  }

  /** The chat as messages (for chat APIs); ends with the open turn's user message. */
  messages(): ChatMessage[] {
    return buildChatMessages(this.instructions, this.turns, this.format);
  }

  /**
   * Token ids to generate the open turn from: template, history window, and the response prefix. They
   * are kept with the turn: with a history window they are the context its response is trained in.
   */
  promptTokens(): Int32Array {
    const turn = this.openTurnOrThrow("promptTokens");
    turn.promptTokens = this.splice(this.format, true).tokens;
    return turn.promptTokens;
  }

  /** The whole trajectory (no history window), ending at the last sampled token. */
  sequence(): TokenSequence {
    const answered = this.turns.at(-1)?.response === undefined ? this.turns.slice(0, -1) : this.turns;
    return this.splice({ ...this.format, historyWindow: undefined }, false, answered);
  }

  private openTurnOrThrow(caller: string): ConversationTurn {
    const turn = this.turns.at(-1);
    if (turn === undefined || turn.response !== undefined) throw new Error(`${caller}(): no open turn`);
    return turn;
  }

  private splice(
    format: PromptFormat,
    open: boolean,
    turns: readonly ConversationTurn[] = this.turns,
  ): TokenSequence {
    const prefix = this.responsePrefix;
    const messages = buildChatMessages(
      this.instructions,
      turns,
      format,
      (i) => `${prefix}${OPEN}${i}${CLOSE}`,
    );
    let text = this.tokenizer.applyChatTemplate(messages, { addGenerationPrompt: open });
    if (open) text += prefix;
    else {
      // The sequence ends on the last sampled token: drop the template's closing text after it.
      const lastOpen = text.lastIndexOf(OPEN);
      text = lastOpen < 0 ? text : text.slice(0, text.indexOf(CLOSE, lastOpen) + CLOSE.length);
    }
    const tokens: number[] = [];
    const mask: number[] = [];
    const logProbs: number[] = [];
    const turnLastTokenIndex = turns.map(() => -1);
    let rest = text;
    let previous: ConversationTurn | undefined;
    for (;;) {
      const match = PLACEHOLDER.exec(rest);
      let literal = match === null ? rest : rest.slice(0, match.index);
      // A response that ended on its stop token already holds the template's closing token.
      const lastId = previous?.tokens?.at(-1);
      if (lastId !== undefined && this.stopTokenIds.has(lastId)) {
        const stopText = this.tokenizer.decode([lastId]);
        if (literal.startsWith(stopText)) literal = literal.slice(stopText.length);
      }
      for (const id of this.tokenizer.encode(literal, { allowSpecial: true })) {
        tokens.push(id);
        mask.push(0);
        logProbs.push(0);
      }
      if (match === null) break;
      const turnIndex = Number(match[1]);
      const turn = turns[turnIndex]!;
      const sampled = turn.tokens ?? new Int32Array();
      for (let k = 0; k < sampled.length; k++) {
        tokens.push(sampled[k]!);
        mask.push(1);
        logProbs.push(turn.logProbs![k]!);
      }
      if (sampled.length > 0) turnLastTokenIndex[turnIndex] = tokens.length - 1;
      previous = turn;
      rest = rest.slice(match.index + match[0].length);
    }
    return {
      tokens: Int32Array.from(tokens),
      lossMask: Uint8Array.from(mask),
      logProbs: Float32Array.from(logProbs),
      turnLastTokenIndex,
    };
  }
}
