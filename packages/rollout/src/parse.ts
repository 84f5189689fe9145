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

const WITH_THINK = /<think>(.*?)<\/think>\s*<answer>(.*?)<\/answer>/s;
const ANSWER_ONLY = /<answer>(.*?)<\/answer>/s;

/** RAGEN's parser: first tag match, answer split on "||", names matched against the env's actions. */
export function parseResponse(text: string, options: ParseOptions): ParsedResponse {
  const thinking = options.enableThinking ?? true;
  const match = (thinking ? WITH_THINK : ANSWER_ONLY).exec(text);
  if (match === null)
    return { think: "", answer: "", actions: [], droppedCount: 0, truncatedCount: 0, formatOk: false };
  const think = thinking ? match[1]!.trim() : "";
  const answer = (thinking ? match[2]! : match[1]!).trim();
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
