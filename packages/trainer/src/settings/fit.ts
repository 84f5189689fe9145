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
 * Throws a ConfigError naming rollout.maxNewTokens (and where it was set, given `sources`) when the
 * responses of one episode alone — maxTurns of up to maxNewTokens tokens, every turn in one context —
 * leave no position for the prompt.
 */
export function checkSettingsFit(
  settings: TrainingSettings,
  model: ModelFit,
  sources: Record<string, SettingSource> = {},
): void {
  const { maxTurns, maxNewTokens } = settings.rollout;
  const responses = maxTurns * maxNewTokens;
  if (responses < model.maxPositionEmbeddings) return;
  const field = "rollout.maxNewTokens";
  const issue: ConfigIssue = {
    field,
    message: `${maxTurns} turns of up to ${maxNewTokens} tokens are ${responses} response tokens, and the model places ${model.maxPositionEmbeddings} (its max_position_embeddings), the prompt included: lower rollout.maxNewTokens or rollout.maxTurns`,
    ...sourceOf(sources[field]),
  };
  throw new ConfigError("settings for this model", [issue]);
}

/** "command line" or "file quest.yaml:12" as an issue's source; defaults and profiles have none. */
function sourceOf(source: SettingSource | undefined): Pick<ConfigIssue, "source"> {
  if (source === "command line") return { source };
  const file = source?.match(/^file (.+?)(?::(\d+))?$/);
  if (!file) return {};
  return { source: { file: file[1]!, ...(file[2] === undefined ? {} : { line: Number(file[2]) }) } };
}
