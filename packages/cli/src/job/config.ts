import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { type ConfigIssue, EnvConfigError, parseOverrides, validateConfig } from "@ragen/envs";
import { type ConfigFile, ConfigFileError, mergeConfigs, setsField } from "./config-file.js";

/** The model the job trains when none is named: the tiny checkpoint shipped with this package. */
export const EMBEDDED_MODEL = "embedded";

/** The Quest job's settings; every field can be overridden on the command line as `a.b=value`. */
export interface QuestConfig {
  /** "embedded", a local Hugging Face folder, or a Hub repo id (e.g. Qwen/Qwen2.5-0.5B-Instruct). */
  model: string;
  /** Env tags trained and validated on; the train groups are split between them (evenly unless train.groupsPerEnv). */
  envs: string[];
  /** Training steps (one rollout batch and one StarPO update each). */
  steps: number;
  seed: number;
  outDir: string;
  /** Continue a run found in outDir (its checkpoint and logs) instead of refusing to overwrite it. */
  resume: boolean;
  /** Save a checkpoint every this many steps (and at the end); 0: only at the end. */
  checkpointEvery: number;
  /** StarPO (PPO/GRPO, `starpo`) or A*-PO (`apo`: offline V* from the frozen start model, no critic). */
  algorithm: "starpo" | "apo";
  train: {
    envGroups: number;
    /**
     * Groups per env tag (RAGEN's n_groups), summing to envGroups; null splits envGroups evenly. Weighting
     * towards an env whose decisions are noisier gives its advantages more episodes a step.
     */
    groupsPerEnv: Record<string, number> | null;
    /** Envs per group; null in a file or override resolves by algorithm (DEFAULT_GROUP_SIZE). */
    groupSize: number;
    /** Stop once training rollouts generated this many tokens (0: no budget; `steps` still caps). */
    tokenBudget: number;
  };
  validation: {
    /** Env tags validated on (null: the training envs), e.g. other arm names to test generalisation. */
    envs: string[] | null;
    /** Validation envs per tag (seeds 123, 124, ... numbered across tags; the same at every evaluation). */
    groupsPerEnv: number;
    /** Validate every this many steps (and before the first and after the last). */
    every: number;
    temperature: number;
  };
  rollout: {
    maxTurns: number;
    maxActionsPerTurn: number;
    /** Token budget of each response. */
    maxNewTokens: number;
    temperature: number;
    enableThinking: boolean;
    formatPenalty: number;
    /** Also penalise actions beyond maxActionsPerTurn (RAGEN cuts them off without a penalty). */
    penalizeExtraActions: boolean;
    /** Reuse each turn's prompt prefix from the previous turn (same tokens, less compute). */
    prefixCaching: boolean;
  };
  starpo: {
    advantageEstimator: "gae" | "grpo";
    actorLr: number | null;
    criticLr: number | null;
    ppoMiniBatchSize: number;
    microBatchSize: number;
    ppoEpochs: number;
    entropyCoeff: number;
    klCoeff: number | null;
    clipRatioLow: number;
    clipRatioHigh: number;
    maxGradNorm: number;
    gamma: number;
    lambda: number;
    uncertaintyFilter: boolean;
    rolloutFilterRatio: number;
  };
  apo: {
    /** Reference samples per start state in stage 1 (the paper's N). */
    samples: number;
    beta1: number;
    beta2: number;
    /** Leave out start states whose N samples all scored 0 or less. */
    dropAllZero: boolean;
    /** Null: the actor learning rate (starpo.actorLr, or its default). */
    lr: number | null;
    entropyCoeff: number;
    miniBatchSize: number;
    microBatchSize: number;
  };
}

/**
 * Below this many parameters a model gets the small-model learning rates and KL term: the embedded model, and any
 * model of its size — its checkpoints, its fine-tunes, a warm start of one's own — wherever it is loaded
 * from. (Choosing by name would give a checkpoint of the embedded model RAGEN's 1e-6, and it would not
 * move in a short run.)
 */
export const SMALL_MODEL_PARAMETERS = 50_000_000;

export interface SizeDependentSettings {
  actorLr: number;
  criticLr: number;
  /** A*-PO's. */
  apoLr: number;
  /** StarPO's KL-to-reference loss coefficient. */
  klCoeff: number;
}

/**
 * The learning rates and KL coefficient when not set. Pretrained-size models get RAGEN's (actor 1e-6,
 * critic 1e-5, StarPO-S's KL 0). Small models (under `SMALL_MODEL_PARAMETERS`) get bigger steps, since
 * their few parameters must move within a short run, and a KL term to the start model. Without it,
 * those steps let one env's updates wear away the other's text. A*-PO's rate defaults to the actor's (the
 * paper's 1e-6 for pretrained models).
 */
export function sizeDependentSettings(config: QuestConfig, parameterCount: number): SizeDependentSettings {
  const small = parameterCount < SMALL_MODEL_PARAMETERS;
  const actorLr = config.starpo.actorLr ?? (small ? 5e-4 : 1e-6);
  return {
    actorLr,
    criticLr: config.starpo.criticLr ?? (small ? 1e-3 : 1e-5),
    apoLr: config.apo.lr ?? actorLr,
    klCoeff: config.starpo.klCoeff ?? (small ? 0.03 : 0),
  };
}

/** Envs per group when train.groupSize is null: StarPO compares a group's rollouts; A*-PO needs one. */
export const DEFAULT_GROUP_SIZE = { starpo: 4, apo: 1 } as const;

const positiveInt = (def: number, description: string, max = 1_000_000) => ({
  type: "integer",
  minimum: 1,
  maximum: max,
  default: def,
  description,
});
const number = (def: number, description: string, minimum?: number, maximum?: number) => ({
  type: "number",
  default: def,
  description,
  ...(minimum === undefined ? {} : { minimum }),
  ...(maximum === undefined ? {} : { maximum }),
});
/** A number whose default (null) the job fills in from the model's size (`sizeDependentSettings`). */
const numberOrNull = (description: string, bound: { minimum: number } | { exclusiveMinimum: number }) => ({
  type: ["number", "null"],
  ...bound,
  default: null,
  description,
});
const section = (properties: Record<string, object>) => ({
  type: "object",
  additionalProperties: false,
  default: {},
  properties,
});

export const questConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    model: {
      type: "string",
      minLength: 1,
      default: EMBEDDED_MODEL,
      description: '"embedded", a local Hugging Face folder or a Hub repo id',
    },
    envs: {
      type: "array",
      items: { type: "string", minLength: 1 },
      minItems: 1,
      default: ["FrozenLakeGridCoord", "Bandit"],
      description: "Env tags (presets) or env names",
    },
    steps: { type: "integer", minimum: 0, maximum: 100000, default: 18, description: "Training steps" },
    seed: { type: "integer", minimum: 0, default: 0, description: "Seed of sampling and initialisation" },
    outDir: { type: "string", minLength: 1, default: "runs/quest", description: "Run folder" },
    resume: { type: "boolean", default: true, description: "Continue the run found in outDir" },
    checkpointEvery: {
      type: "integer",
      minimum: 0,
      default: 5,
      description: "Checkpoint every N steps (0: only at the end)",
    },
    algorithm: {
      enum: ["starpo", "apo"],
      default: "starpo",
      description: "starpo (PPO/GRPO) or apo (A*-PO: offline V*, least-squares policy regression)",
    },
    train: section({
      envGroups: positiveInt(8, "Env groups per step (split evenly over envs unless groupsPerEnv)"),
      groupsPerEnv: {
        type: ["object", "null"],
        additionalProperties: { type: "integer", minimum: 1 },
        default: null,
        description: "Groups per env, Tag=N,Tag=N summing to envGroups (null: split evenly)",
      },
      groupSize: {
        type: ["integer", "null"],
        minimum: 1,
        maximum: 1_000_000,
        default: null,
        description: `Envs per group (same start state); null: ${DEFAULT_GROUP_SIZE.starpo} for starpo, ${DEFAULT_GROUP_SIZE.apo} for apo (A*-PO samples one response per start state)`,
      },
      tokenBudget: {
        type: "integer",
        minimum: 0,
        default: 0,
        description: "Stop once training rollouts generated this many tokens (0: no budget)",
      },
    }),
    validation: section({
      envs: {
        type: ["array", "null"],
        items: { type: "string", minLength: 1 },
        minItems: 1,
        default: null,
        description: "Env tags validated on (null: the training envs)",
      },
      groupsPerEnv: positiveInt(64, "Validation envs per tag"),
      every: positiveInt(9, "Validate every N steps"),
      temperature: number(0.5, "Sampling temperature of validation", 0),
    }),
    rollout: section({
      maxTurns: positiveInt(5, "Turns per episode (RAGEN's max_turn)"),
      maxActionsPerTurn: positiveInt(2, "Actions per turn"),
      maxNewTokens: positiveInt(48, "Token budget of each response"),
      temperature: number(1, "Sampling temperature of training rollouts", 0),
      enableThinking: { type: "boolean", default: true, description: "Responses start with <think>" },
      formatPenalty: number(
        -0.1,
        "Reward added for a turn whose tags did not match, named an invalid action or had none valid",
        undefined,
        0,
      ),
      penalizeExtraActions: {
        type: "boolean",
        default: false,
        description: "Also penalise actions beyond maxActionsPerTurn (RAGEN cuts them off without a penalty)",
      },
      prefixCaching: {
        type: "boolean",
        default: true,
        description: "Reuse cached prompt prefixes across turns",
      },
    }),
    starpo: section({
      advantageEstimator: {
        enum: ["gae", "grpo"],
        default: "gae",
        description: "gae (PPO with a critic) or grpo",
      },
      actorLr: numberOrNull(
        "Actor learning rate (null: 5e-4 for models under 50M parameters, 1e-6 otherwise)",
        {
          exclusiveMinimum: 0,
        },
      ),
      criticLr: numberOrNull(
        "Critic learning rate (null: 1e-3 for models under 50M parameters, 1e-5 otherwise)",
        {
          exclusiveMinimum: 0,
        },
      ),
      ppoMiniBatchSize: positiveInt(8, "Trajectories per optimiser step"),
      microBatchSize: positiveInt(8, "Trajectories per forward/backward"),
      ppoEpochs: positiveInt(1, "PPO epochs per batch", 100),
      entropyCoeff: number(0.001, "Entropy bonus", 0),
      klCoeff: numberOrNull(
        "KL-to-reference loss coefficient (null: 0.03 for models under 50M parameters, StarPO-S's 0 otherwise)",
        { minimum: 0 },
      ),
      clipRatioLow: number(0.2, "PPO clip below 1", 0),
      clipRatioHigh: number(0.28, "PPO clip above 1 (clip-higher)", 0),
      maxGradNorm: number(1, "Gradient-norm clip", 0),
      gamma: number(1, "Discount", 0, 1),
      lambda: number(1, "GAE lambda", 0, 1),
      uncertaintyFilter: { type: "boolean", default: true, description: "StarPO-S uncertainty filtering" },
      rolloutFilterRatio: number(0.5, "Share of groups kept by the filter", 0, 1),
    }),
    apo: section({
      samples: positiveInt(8, "Stage 1: reference samples per start state (N)", 1024),
      beta1: number(0.5, "Stage 1: V* temperature (0: mean reward)", 0),
      beta2: { type: "number", exclusiveMinimum: 0, default: 1e-3, description: "Stage 2: KL strength" },
      dropAllZero: {
        type: "boolean",
        default: false,
        description: "Leave out start states whose samples all scored 0 or less",
      },
      lr: numberOrNull("A*-PO learning rate (null: the actor learning rate)", { exclusiveMinimum: 0 }),
      entropyCoeff: number(0.001, "Entropy bonus", 0),
      miniBatchSize: positiveInt(8, "Trajectories per optimiser step"),
      microBatchSize: positiveInt(8, "Trajectories per forward/backward"),
    }),
  },
};

export interface ResolveOptions {
  /** A config file whose fields come before the overrides (the overrides win). */
  file?: ConfigFile;
  /** Check what only training needs (train.envGroups a multiple of the env count); default true. */
  training?: boolean;
}

/**
 * Resolve `key=value` / `a.b=value` command-line overrides, on top of a config file when given, against
 * the defaults; throws naming every bad field (and, for a file, its line).
 */
export function resolveQuestConfig(args: readonly string[], options: ResolveOptions = {}): QuestConfig {
  const overrides = parseOverrides(args);
  const list = (value: unknown) =>
    typeof value === "string" ? value.split(",").map((name) => name.trim()) : value;
  const fields = options.file ? mergeConfigs(options.file.values, overrides) : overrides;
  fields.envs = list(fields.envs);
  if (fields.envs === undefined) delete fields.envs;
  const train = fields.train as Record<string, unknown> | undefined;
  if (typeof train?.groupsPerEnv === "string")
    train.groupsPerEnv = tagValues("train.groupsPerEnv", train.groupsPerEnv);
  const validation = fields.validation as Record<string, unknown> | undefined;
  if (validation?.envs !== undefined) validation.envs = list(validation.envs);
  let config: QuestConfig;
  try {
    config = validateConfig<QuestConfig>("quest", questConfigSchema, fields);
  } catch (error) {
    if (options.file && error instanceof EnvConfigError)
      throw new ConfigFileError(fileIssues(options.file, overrides, error.issues));
    throw error;
  }
  config.train.groupSize ??= DEFAULT_GROUP_SIZE[config.algorithm];
  if (options.training !== false && config.train.groupsPerEnv !== null) {
    checkGroupsPerEnv(
      config,
      options.file && !setsField(overrides, "train.groupsPerEnv") ? options.file : undefined,
    );
  } else if (options.training !== false && config.train.envGroups % config.envs.length !== 0) {
    const where =
      options.file && !setsField(overrides, "train.envGroups") ? locate(options.file, "train.envGroups") : "";
    throw new Error(
      `quest config: ${where}train.envGroups (${config.train.envGroups}) must be a multiple of the number of envs (${config.envs.length})`,
    );
  }
  return config;
}

/** "Tag=N,Tag=N" as a map; the schema then checks the numbers. */
function tagValues(field: string, text: string): Record<string, unknown> {
  return Object.fromEntries(
    text.split(",").map((pair) => {
      const [tag, raw, ...more] = pair.split("=");
      if (!tag?.trim() || raw === undefined || raw.trim() === "" || more.length > 0)
        throw new Error(`quest config: ${field}: expected Tag=N pairs, got "${text}"`);
      return [tag.trim(), Number(raw)];
    }),
  );
}

/** train.groupsPerEnv names each training env once and sums to train.envGroups. */
function checkGroupsPerEnv(config: QuestConfig, file: ConfigFile | undefined): void {
  const groups = config.train.groupsPerEnv ?? {};
  const where = file ? locate(file, "train.groupsPerEnv") : "";
  const stray = Object.keys(groups).filter((tag) => !config.envs.includes(tag));
  const missing = config.envs.filter((tag) => !(tag in groups));
  const total = Object.values(groups).reduce((a, b) => a + b, 0);
  const problem =
    stray.length > 0
      ? `${stray.join(", ")} is not among envs (${config.envs.join(", ")})`
      : missing.length > 0
        ? `no groups for ${missing.join(", ")}`
        : total !== config.train.envGroups
          ? `the groups sum to ${total}, but train.envGroups is ${config.train.envGroups}`
          : null;
  if (problem) throw new Error(`quest config: ${where}train.groupsPerEnv: ${problem}`);
}

/** The training envs' tags with their groups per step: train.groupsPerEnv, or envGroups split evenly. */
export function trainingGroups(config: QuestConfig): { tag: string; nGroups: number }[] {
  const even = config.train.envGroups / config.envs.length;
  return config.envs.map((tag) => ({ tag, nGroups: config.train.groupsPerEnv?.[tag] ?? even }));
}

/** "quest.yaml:12: " for a field the file sets, "quest.yaml: " when its line is unknown. */
function locate(file: ConfigFile, field: string): string {
  if (!setsField(file.values, field)) return "";
  const line = file.lineOf(field);
  return line === undefined ? `${file.path}: ` : `${file.path}:${line}: `;
}

function fileIssues(file: ConfigFile, overrides: Record<string, unknown>, issues: readonly ConfigIssue[]) {
  const lines = issues.map((issue) => {
    const field = issue.field === "" ? "config" : issue.field;
    const where = setsField(overrides, issue.field) ? "command line: " : locate(file, issue.field);
    const allowed = issue.allowed
      ? ` (allowed: ${issue.allowed.map((a) => JSON.stringify(a)).join(", ")})`
      : "";
    return `  - ${where}${field}: ${issue.message}${allowed}`;
  });
  return `Invalid config in ${file.path}:\n${lines.join("\n")}`;
}

/**
 * `outDir`, and `model` when it names an existing folder, resolved against `base` (the directory the
 * command was typed in); a model that is no folder there stays a Hub repo id.
 */
export function resolveQuestPaths(
  config: QuestConfig,
  base: string,
  exists: (path: string) => boolean = existsSync,
): QuestConfig {
  const local = resolve(base, config.model);
  const isFolder = config.model !== EMBEDDED_MODEL && !isAbsolute(config.model) && exists(local);
  return { ...config, outDir: resolve(base, config.outDir), model: isFolder ? local : config.model };
}

/** The env tags validated on: `validation.envs`, or the training envs. */
export function validationEnvs(config: QuestConfig): string[] {
  return config.validation.envs ?? config.envs;
}
