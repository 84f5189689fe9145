/**
 * What the schema cannot know: whether the settings fit the model they train. Checked at start-up, once
 * the model's config is read, so a run that cannot fit stops before its first rollout.
 */
import { ConfigError, type ConfigIssue } from "@ragen/envs";
import type { TrainingSettings } from "./fields.js";
import type { SettingSource } from "./resolve.js";

/** What the check needs of a model's config (a parsed `Qwen2Config` has it). */
export interface ModelFit {
  /** max_position_embeddings: the longest sequence, prompt and responses together, the model can place. */
  maxPositionEmbeddings: number;
}

/**
 * Throws a ConfigError naming the fields (and where they were set, given `sources`) when the responses
 * of one context alone — maxTurns (or historyWindow) of up to maxNewTokens tokens — leave no position
 * for the prompt, when rollout.maxSequenceLength is more than the model places, or when one response
 * leaves no room for a prompt within maxSequenceLength.
 */
export function checkSettingsFit(
  settings: TrainingSettings,
  model: ModelFit,
  sources: Record<string, SettingSource> = {},
): void {
  const { maxTurns, maxNewTokens, historyWindow, maxSequenceLength } = settings.rollout;
  const positions = model.maxPositionEmbeddings;
  const issues: ConfigIssue[] = [];
  const issue = (field: string, message: string) =>
    issues.push({ field, message, ...sourceOf(sources[field]) });
  const turns = Math.min(maxTurns, historyWindow ?? maxTurns);
  const responses = turns * maxNewTokens;
  if (responses >= positions)
    issue(
      "rollout.maxNewTokens",
      `${turns} turns of up to ${maxNewTokens} tokens are ${responses} response tokens, and the model places ${positions} (its max_position_embeddings), the prompt included: lower rollout.maxNewTokens or rollout.maxTurns`,
    );
  if (maxSequenceLength > positions)
    issue(
      "rollout.maxSequenceLength",
      `${maxSequenceLength} is more than the ${positions} positions the model places (its max_position_embeddings): set rollout.maxSequenceLength=${positions} or less`,
    );
  else if (maxNewTokens >= maxSequenceLength)
    issue(
      "rollout.maxNewTokens",
      `a response of up to ${maxNewTokens} tokens leaves no room for a prompt within rollout.maxSequenceLength ${maxSequenceLength}: lower rollout.maxNewTokens or raise rollout.maxSequenceLength`,
    );
  if (issues.length > 0) throw new ConfigError("settings for this model", issues);
}

/** "command line" or "file quest.yaml:12" as an issue's source; defaults and profiles have none. */
function sourceOf(source: SettingSource | undefined): Pick<ConfigIssue, "source"> {
  if (source === "command line") return { source };
  const file = source?.match(/^file (.+?)(?::(\d+))?$/);
  if (!file) return {};
  return { source: { file: file[1]!, ...(file[2] === undefined ? {} : { line: Number(file[2]) }) } };
}
