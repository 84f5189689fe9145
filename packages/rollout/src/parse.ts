import { ACTION_SEPARATOR } from "./prompt.js";

export interface ParseOptions {
  /** The env's action names (matched case-insensitively), or null for free-form envs. */
  actions: readonly string[] | null;
  /** Keep at most this many actions (RAGEN's max_actions_per_turn). */
  maxActionsPerTurn: number;
  /** Expect <think>…</think> before <answer> (default true). */
  enableThinking?: boolean;
}

export interface ParsedResponse {
  /** The <think> text, trimmed ("" when thinking is off or the format did not match). */
  think: string;
  /** The raw <answer> text, trimmed. */
  answer: string;
  /** Actions to execute, in order, spelled as the env names them. */
  actions: string[];
  /** Answer parts within maxActionsPerTurn that are not an action of the env (dropped). */
  droppedCount: number;
  /** Answer parts beyond maxActionsPerTurn (cut off, as RAGEN does, without counting as invalid). */
  truncatedCount: number;
  /** The response matched the required tag layout. */
  formatOk: boolean;
}

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";
const ANSWER_OPEN = "<answer>";
const ANSWER_CLOSE = "</answer>";

interface TagMatch {
  think: string;
  answer: string;
}

/**
 * The first match of RAGEN's `<think>(.*?)</think>\s*<answer>(.*?)</answer>` (dot matching newlines),
 * found in linear time: the regex retries from every `<think>`, which is quadratic on a response full of
 * them. A later `<think>` can never match where the first failed (the lazy group may hold anything), so
 * the first one starts the match; its `</think>` is the first one followed by white space and `<answer>`.
 */
function matchThinkAnswer(text: string): TagMatch | null {
  const start = text.indexOf(THINK_OPEN);
  if (start < 0) return null;
  const thinkStart = start + THINK_OPEN.length;
  for (let close = text.indexOf(THINK_CLOSE, thinkStart); close >= 0; ) {
    let next = close + THINK_CLOSE.length;
    while (next < text.length && /\s/.test(text[next]!)) next++;
    if (text.startsWith(ANSWER_OPEN, next)) {
      const answerStart = next + ANSWER_OPEN.length;
      const answerEnd = text.indexOf(ANSWER_CLOSE, answerStart);
      // No `</answer>` after this `<answer>` means none after any later one either.
      if (answerEnd < 0) return null;
      return { think: text.slice(thinkStart, close), answer: text.slice(answerStart, answerEnd) };
    }
    close = text.indexOf(THINK_CLOSE, close + 1);
  }
  return null;
}

/** The first match of `<answer>(.*?)</answer>`, in linear time. */
function matchAnswer(text: string): TagMatch | null {
  const open = text.indexOf(ANSWER_OPEN);
  if (open < 0) return null;
  const answerStart = open + ANSWER_OPEN.length;
  const answerEnd = text.indexOf(ANSWER_CLOSE, answerStart);
  return answerEnd < 0 ? null : { think: "", answer: text.slice(answerStart, answerEnd) };
}

/** RAGEN's parser: first tag match, answer split on "||", names matched against the env's actions. */
export function parseResponse(text: string, options: ParseOptions): ParsedResponse {
  const thinking = options.enableThinking ?? true;
  const match = thinking ? matchThinkAnswer(text) : matchAnswer(text);
  if (match === null)
    return { think: "", answer: "", actions: [], droppedCount: 0, truncatedCount: 0, formatOk: false };
  const think = match.think.trim();
  const answer = match.answer.trim();
  const parts = answer
    .split(ACTION_SEPARATOR)
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
  const kept = parts.slice(0, options.maxActionsPerTurn);
  const byLowerName = new Map(options.actions?.map((name) => [name.toLowerCase(), name]));
  const actions =
    options.actions === null
      ? kept
      : kept.flatMap((part) => {
          const name = byLowerName.get(part.toLowerCase());
          return name === undefined ? [] : [name];
        });
  return {
    think,
    answer,
    actions,
    droppedCount: kept.length - actions.length,
    truncatedCount: parts.length - kept.length,
    formatOk: true,
  };
}

/**
 * RAGEN charges the format penalty once per turn when the tags did not match, an action (among the first
 * maxActionsPerTurn) was not valid, or no valid action remained. Actions beyond the limit are cut off
 * without a penalty, unless `penalizeExtraActions` (a stricter rule, off by default).
 */
export function deservesFormatPenalty(
  parsed: ParsedResponse,
  options: { penalizeExtraActions?: boolean } = {},
): boolean {
  if (!parsed.formatOk || parsed.droppedCount > 0 || parsed.actions.length === 0) return true;
  return options.penalizeExtraActions === true && parsed.truncatedCount > 0;
}
