/**
 * Every setting of a training run, stated once: its type, its meaning, and its library default. The
 * defaults are the packages' own objects (StarPO's, A*-PO's, the rollout's), not copies; the JSON
 * Schema, `--help` and `--print-config` are generated from this file.
 */
import { ASTARPO_DEFAULTS, type AStarPOConfig, VSTAR_DEFAULTS } from "@ragen/algos-apo";
import { type AdvantageEstimator, STARPO_DEFAULTS, type StarPOConfig } from "@ragen/algos-ppo";
import { ROLLOUT_DEFAULTS } from "@ragen/rollout";

/** The model trained when none is named: the tiny checkpoint shipped with the project. */
export const EMBEDDED_MODEL = "embedded";

/** StarPO's options as the job sets them: all but those the job derives (temperature, shuffle seed). */
export type StarPOSettings = Required<
  Omit<StarPOConfig, "temperature" | "shuffleSeed" | "advantageEstimator">
> & {
  advantageEstimator: AdvantageEstimator;
};

/** A*-PO's stage-2 options (as `AStarPOConfig` names them) and its stage-1 ones (as `estimateVStarForStates` does). */
export type APOSettings = Required<
  Omit<AStarPOConfig, "temperature" | "shuffleSeed" | "vstarRefreshEvery">
> & {
  samples: number;
  beta1: number;
  dropAllZero: boolean;
};

export interface RolloutSettings {
  maxTurns: number;
  maxActionsPerTurn: number;
  maxNewTokens: number;
  temperature: number;
  enableThinking: boolean;
  formatPenalty: number;
  penalizeExtraActions: boolean;
  prefixCaching: boolean;
}

/** A training run's settings, resolved: every field set. Each can be overridden as `section.field=value`. */
export interface TrainingSettings {
  /** The named set of defaults the run starts from (profiles.ts). */
  profile: string;
  model: string;
  envs: string[];
  steps: number;
  seed: number;
  outDir: string;
  resume: boolean;
  checkpointEvery: number;
  algorithm: "starpo" | "apo";
  train: {
    envGroups: number;
    groupsPerEnv: Record<string, number> | null;
    groupSize: number;
    tokenBudget: number;
  };
  validation: {
    envs: string[] | null;
    groupsPerEnv: number;
    every: number;
    temperature: number;
  };
  rollout: RolloutSettings;
  starpo: StarPOSettings;
  apo: APOSettings;
}

/** A nested partial of the settings: what a profile, a file or the command line sets. */
export type SettingsLayer = { [K in keyof TrainingSettings]?: Partial<TrainingSettings[K]> };

/**
 * The library defaults: RAGEN's base configuration (Qwen2.5-0.5B-Instruct, 8 groups of 16 rollouts,
 * 200 steps, validation every 10 on 256 envs at temperature 0.5), with the algorithms' own defaults.
 */
export const LIBRARY_DEFAULTS: TrainingSettings = {
  profile: "quest",
  model: "Qwen/Qwen2.5-0.5B-Instruct",
  envs: ["FrozenLakeGridCoord", "Bandit"],
  steps: 200,
  seed: 0,
  outDir: "runs/train",
  resume: true,
  checkpointEvery: 10,
  algorithm: "starpo",
  train: { envGroups: 8, groupsPerEnv: null, groupSize: 16, tokenBudget: 0 },
  validation: { envs: null, groupsPerEnv: 128, every: 10, temperature: 0.5 },
  rollout: { ...ROLLOUT_DEFAULTS, prefixCaching: true },
  starpo: { advantageEstimator: "gae", ...withoutKeys(STARPO_DEFAULTS, ["temperature", "shuffleSeed"]) },
  apo: {
    ...withoutKeys(ASTARPO_DEFAULTS, ["temperature", "shuffleSeed", "vstarRefreshEvery"]),
    ...VSTAR_DEFAULTS,
  },
};

function withoutKeys<T extends object, K extends keyof T>(object: T, keys: readonly K[]): Omit<T, K> {
  const copy = { ...object };
  for (const key of keys) delete copy[key];
  return copy;
}

/** One setting's type (a JSON Schema without its default, which comes from LIBRARY_DEFAULTS) and meaning. */
export interface FieldSpec {
  schema: Record<string, unknown>;
  description: string;
}

const integer = (description: string, minimum = 1, maximum = 1_000_000): FieldSpec => ({
  schema: { type: "integer", minimum, maximum },
  description,
});
const number = (description: string, bounds: Record<string, number> = {}): FieldSpec => ({
  schema: { type: "number", ...bounds },
  description,
});
const positive = (description: string) => number(description, { exclusiveMinimum: 0 });
const flag = (description: string): FieldSpec => ({ schema: { type: "boolean" }, description });
const oneOf = (values: readonly string[], description: string): FieldSpec => ({
  schema: { enum: values },
  description,
});
const tags = (description: string, nullable = false): FieldSpec => ({
  schema: {
    type: nullable ? ["array", "null"] : "array",
    items: { type: "string", minLength: 1 },
    minItems: 1,
  },
  description,
});

/** The settings grouped in sections (`starpo.actorLr`); the other fields stand at the top. */
export const SECTIONS = ["train", "validation", "rollout", "starpo", "apo"] as const;
export type SectionName = (typeof SECTIONS)[number];

type SettingsFields = { [K in Exclude<keyof TrainingSettings, SectionName>]: FieldSpec } & {
  [S in SectionName]: { [F in keyof TrainingSettings[S]]-?: FieldSpec };
};

/** The fields, section by section, in the order `--help` and `--print-config` list them. */
export const SETTINGS_FIELDS: SettingsFields = {
  profile: oneOf(
    ["quest", "ragen"],
    "Named defaults the run starts from (quest: the tiny embedded model on a CPU; ragen: RAGEN's base config)",
  ),
  model: {
    schema: { type: "string", minLength: 1 },
    description: '"embedded", a local Hugging Face folder or a Hub repo id',
  },
  envs: tags("Env tags (presets) or env names trained on; the groups are split between them"),
  steps: integer("Training steps (one rollout batch and one update each)", 0, 100_000),
  seed: integer("Seed of sampling, initialisation and shuffling", 0, Number.MAX_SAFE_INTEGER),
  outDir: { schema: { type: "string", minLength: 1 }, description: "Run folder" },
  resume: flag("Continue the run found in outDir (its checkpoint and logs)"),
  checkpointEvery: integer("Checkpoint every N steps, and at the end (0: only at the end)", 0),
  algorithm: oneOf(
    ["starpo", "apo"],
    "starpo (PPO/GRPO) or apo (A*-PO: offline V*, least-squares policy regression)",
  ),
  train: {
    envGroups: integer("Env groups per step (RAGEN's env_groups)"),
    groupsPerEnv: {
      schema: { type: ["object", "null"], additionalProperties: { type: "integer", minimum: 1 } },
      description: "Groups per env as Tag=N,Tag=N summing to envGroups (null: split evenly)",
    },
    groupSize: integer("Envs per group, sharing one start state (A*-PO samples one response per state)"),
    tokenBudget: integer(
      "Stop once training rollouts generated this many tokens (0: no budget)",
      0,
      Number.MAX_SAFE_INTEGER,
    ),
  },
  validation: {
    envs: tags("Env tags validated on (null: the training envs)", true),
    groupsPerEnv: integer("Validation envs per tag (seeds 123, 124, ... numbered across tags)"),
    every: integer("Validate every N steps (and before the first and after the last)"),
    temperature: number("Sampling temperature of validation", { minimum: 0 }),
  },
  rollout: {
    maxTurns: integer("Turns per episode (RAGEN's max_turn)"),
    maxActionsPerTurn: integer("Actions per turn; more are cut off"),
    maxNewTokens: integer("Token budget of each response (RAGEN's response_length)"),
    temperature: number("Sampling temperature of training rollouts", { minimum: 0 }),
    enableThinking: flag("Responses start with <think>"),
    formatPenalty: number(
      "Reward added for a turn whose tags did not match, named an invalid action or had none valid",
      { maximum: 0 },
    ),
    penalizeExtraActions: flag(
      "Also penalise actions beyond maxActionsPerTurn (RAGEN cuts them off without a penalty)",
    ),
    prefixCaching: flag("Reuse each turn's cached prompt prefix from the previous turn"),
  },
  starpo: {
    advantageEstimator: oneOf(["gae", "grpo"], "gae (PPO with a critic) or grpo"),
    actorLr: positive("Actor learning rate (AdamW)"),
    criticLr: positive("Critic learning rate (AdamW)"),
    beta1: number("AdamW beta1 of both optimisers", { minimum: 0, exclusiveMaximum: 1 }),
    beta2: number("AdamW beta2 of both optimisers", { minimum: 0, exclusiveMaximum: 1 }),
    weightDecay: number("AdamW weight decay", { minimum: 0 }),
    maxGradNorm: number("Gradient-norm clip of both optimisers", { minimum: 0 }),
    clipRatioLow: number("PPO clip below 1", { minimum: 0 }),
    clipRatioHigh: number("PPO clip above 1 (clip-higher)", { minimum: 0 }),
    dualClip: number("Dual-clip bound c on negative advantages", { minimum: 1 }),
    clipRangeValue: number("Critic value clip range", { minimum: 0 }),
    entropyCoeff: number("Entropy bonus", { minimum: 0 }),
    klCoeff: number("KL-to-reference loss coefficient (StarPO-S: 0)", { minimum: 0 }),
    klType: oneOf(["kl", "abs", "mse", "low_var_kl"], "KL estimator of the loss term"),
    aggregation: oneOf(
      ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"],
      "How token losses add up",
    ),
    gamma: number("Discount", { minimum: 0, maximum: 1 }),
    lambda: number("GAE lambda", { minimum: 0, maximum: 1 }),
    ppoMiniBatchSize: integer("Trajectories per optimiser step (RAGEN's ppo_mini_batch_size)"),
    microBatchSize: integer("Trajectories per forward/backward (gradients accumulate over a mini-batch)"),
    ppoEpochs: integer("PPO epochs per batch", 1, 100),
    uncertaintyFilter: flag("StarPO-S: train on the groups with the most reward spread"),
    rolloutFilterRatio: number("Share of groups the filter keeps", { exclusiveMinimum: 0, maximum: 1 }),
  },
  apo: {
    samples: integer("Stage 1: reference samples per start state (the paper's N)", 1, 1024),
    beta1: number("Stage 1: V* temperature (0: mean reward)", { minimum: 0 }),
    dropAllZero: flag("Stage 1: leave out start states whose samples all scored 0 or less"),
    beta2: positive("Stage 2: weight of the summed log-ratio (KL strength)"),
    lr: positive("Stage 2: learning rate (AdamW)"),
    weightDecay: number("Stage 2: AdamW weight decay", { minimum: 0 }),
    maxGradNorm: number("Stage 2: gradient-norm clip", { minimum: 0 }),
    entropyCoeff: number("Stage 2: entropy bonus", { minimum: 0 }),
    miniBatchSize: integer("Stage 2: trajectories per optimiser step"),
    microBatchSize: integer("Stage 2: trajectories per forward/backward"),
  },
};

/** Every field as its dotted path ("starpo.actorLr") with its spec, in order. */
export function settingsFields(): { path: string; spec: FieldSpec }[] {
  return Object.entries(SETTINGS_FIELDS).flatMap(([name, value]) =>
    (SECTIONS as readonly string[]).includes(name)
      ? Object.entries(value as Record<string, FieldSpec>).map(([field, spec]) => ({
          path: `${name}.${field}`,
          spec,
        }))
      : [{ path: name, spec: value as FieldSpec }],
  );
}
