/**
 * Every setting of a training run, stated once: its type, its meaning, and its library default. The
 * defaults are the packages' own objects (StarPO's, A*-PO's, the rollout's), not copies; the JSON
 * Schema, `--help` and `--print-config` are generated from this file.
 */
import {
  ASTARPO_BOUNDS,
  ASTARPO_DEFAULTS,
  type AStarPOConfig,
  MIN_BETA1,
  VSTAR_DEFAULTS,
} from "@ragen/algos-apo";
import {
  ADVANTAGE_ESTIMATORS,
  type AdvantageEstimator,
  FILTER_LOSS_SCALINGS,
  FILTER_METRICS,
  FILTER_STRATEGIES,
  KL_CONTROLLERS,
  LR_SCHEDULES,
  NORMALIZATION_GROUPINGS,
  NORMALIZATION_METHODS,
  type NumberBounds,
  STARPO_BOUNDS,
  STARPO_DEFAULTS,
  type StarPOConfig,
} from "@ragen/algos-ppo";
import { ENV_SERVER_PROTOCOLS, type EnvServerAddress } from "@ragen/envs";
import {
  DEFAULT_PREFILL_TOKENS,
  type LoraTarget,
  QWEN2_LINEAR_MODULES,
  type ValueHeadInit,
} from "@ragen/models";
import { type ContextOverflow, type RewardPlacement, ROLLOUT_DEFAULTS } from "@ragen/rollout";

/** The model trained when none is named: the tiny checkpoint shipped with the project. */
export const EMBEDDED_MODEL = "embedded";

/** StarPO's options as the job sets them: all but those the job derives (temperature, shuffle seed, run length). */
export type StarPOSettings = Required<
  Omit<StarPOConfig, "temperature" | "shuffleSeed" | "totalUpdates" | "advantageEstimator">
> & {
  advantageEstimator: AdvantageEstimator;
  /** How a new critic's score head starts (not a StarPO option: the job builds the critic). */
  criticHeadInit: ValueHeadInit;
};

/** A*-PO's stage-2 options (as `AStarPOConfig` names them) and its stage-1 ones (as `estimateVStarForStates` does). */
export type APOSettings = Required<
  Omit<AStarPOConfig, "temperature" | "shuffleSeed" | "vstarRefreshEvery">
> & {
  samples: number;
  beta1: number;
  dropAllZero: boolean;
};

/** LoRA instead of full fine-tuning (RAGEN's lora section); rank 0 is off. */
export interface LoraSettings {
  rank: number;
  alpha: number;
  targetModules: LoraTarget[];
  /** The critic's backbone trains adapters too (its value head trains in full). */
  critic: boolean;
}

export interface RolloutSettings {
  maxTurns: number;
  maxActionsPerTurn: number;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  enableThinking: boolean;
  formatPenalty: number;
  penalizeExtraActions: boolean;
  rewardPlacement: RewardPlacement;
  /** Turns kept in each prompt; null keeps them all. */
  historyWindow: number | null;
  maxSequenceLength: number;
  contextOverflow: ContextOverflow;
  prefixCaching: boolean;
  /** The most prompt tokens one prefill pass of the local engine runs. */
  prefillTokens: number;
  /** The local engine: each prompt of a turn draws from its own random stream (seed + its index). */
  seedPerPrompt: boolean;
  /** Where training and validation episodes are sampled: this process, or inference servers. */
  engine: RolloutEngine;
  /** The inference servers' root URLs (remote engines). */
  servers: string[] | null;
  /** The base model's name on the servers; null: `model` as written. */
  servedModel: string | null;
  /** The most adapter versions a trained trajectory may lag the learner (k); 0: synchronous. */
  maxStaleness: number;
  /** C of the truncated importance weight min(pi_old / mu, C). */
  importanceCap: number;
  /** The folder each replica loads an adapter version from (AdapterPublisher's remotePath template). */
  adapterPath: string;
}

/** Where rollouts are sampled: `local` on the learner's own weights, or vLLM / SGLang servers. */
export type RolloutEngine = "local" | "vllm" | "sglang";
export const ROLLOUT_ENGINES = ["local", "vllm", "sglang"] as const satisfies readonly RolloutEngine[];

/** RAGEN's actor_rollout_ref.rollout.max_model_len: the job's default context limit. */
export const RAGEN_MAX_MODEL_LEN = 3600;

/** A training run's settings, resolved: every field set. Each can be overridden as `section.field=value`. */
export interface TrainingSettings {
  /** The named set of defaults the run starts from (profiles.ts). */
  profile: string;
  model: string;
  /** The models' weights: f32, or f16 mixed precision (Qwen2Model.toDtype; AdamW's loss scaling). */
  precision: "f32" | "f16";
  envs: string[];
  /** Env servers by tag: those tags' episodes run there, not in process; null: every env in process. */
  envServers: Record<string, EnvServerAddress> | null;
  steps: number;
  seed: number;
  /** Several seeds, run one after another into `<outDir>/seed-<N>`, with a summary across them. */
  seeds: number[] | null;
  outDir: string;
  resume: boolean;
  checkpointEvery: number;
  /** Device memory the run may use, GiB; null: the host's on a software adapter, unchecked on a GPU. */
  deviceMemoryGiB: number | null;
  /** Measure the fastest matmul kernel and attention tile per problem on this GPU: auto (a GPU, not lavapipe), on, off. */
  kernelTuning: "auto" | "on" | "off";
  /** Seconds a tuning pass before a step may start problems for; the rest wait for later steps. null: no limit. */
  kernelTuningSeconds: number | null;
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
    /** Episodes per validation env (pass@k's k). */
    samples: number;
    every: number;
    temperature: number;
    topP: number;
    topK: number;
  };
  rollout: RolloutSettings;
  starpo: StarPOSettings;
  apo: APOSettings;
  lora: LoraSettings;
}

/** A nested partial of the settings: what a profile, a file or the command line sets. */
export type SettingsLayer = { [K in keyof TrainingSettings]?: Partial<TrainingSettings[K]> };

/**
 * The library defaults: the algorithms' and the rollout's own defaults (RAGEN's values), on the embedded
 * model. The profiles (profiles.ts) say where a job wants other values: `auto` gives the embedded model
 * the `embedded` profile and any model of 50M parameters or more RAGEN's base config.
 */
export const LIBRARY_DEFAULTS: TrainingSettings = {
  profile: "auto",
  model: EMBEDDED_MODEL,
  precision: "f32",
  envs: ["FrozenLakeGridCoord", "Bandit"],
  envServers: null,
  steps: 200,
  seed: 0,
  seeds: null,
  outDir: "runs/train",
  resume: true,
  checkpointEvery: 10,
  deviceMemoryGiB: null,
  kernelTuning: "auto",
  kernelTuningSeconds: null,
  algorithm: "starpo",
  train: { envGroups: 8, groupsPerEnv: null, groupSize: 16, tokenBudget: 0 },
  validation: { envs: null, groupsPerEnv: 128, samples: 1, every: 10, temperature: 0.5, topP: 1, topK: 0 },
  rollout: {
    ...ROLLOUT_DEFAULTS,
    historyWindow: null,
    maxSequenceLength: RAGEN_MAX_MODEL_LEN,
    prefixCaching: true,
    prefillTokens: DEFAULT_PREFILL_TOKENS,
    seedPerPrompt: false,
    engine: "local",
    servers: null,
    servedModel: null,
    maxStaleness: 1,
    // Truncated importance sampling (TIS) of Yao et al. 2025, "Your Efficient RL Framework Secretly
    // Brings You Off-Policy RL Training" (fengyao.notion.site/off-policy-rl), caps the weight at a
    // constant C; 2 is the cap ms-swift defaults to (rollout_importance_sampling_threshold).
    importanceCap: 2,
    adapterPath: "{localPath}",
  },
  starpo: {
    advantageEstimator: "gae",
    ...withoutKeys(STARPO_DEFAULTS, ["temperature", "shuffleSeed"]),
    criticHeadInit: "normal",
  },
  apo: {
    ...withoutKeys(ASTARPO_DEFAULTS, ["temperature", "shuffleSeed", "vstarRefreshEvery"]),
    ...VSTAR_DEFAULTS,
  },
  // RAGEN's lora section: off (rank 0); its LoRA runs use rank 64, alpha 64 on every linear module.
  lora: { rank: 0, alpha: 64, targetModules: [...QWEN2_LINEAR_MODULES], critic: true },
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
  /** Why the schema bounds the field as it does; added to the message of a value it refuses. */
  why?: string;
}

/**
 * Sizes a machine can hold: a response of this many tokens at most (with the prompt it must also fit the
 * model's positions, see checkSettingsFit), and this many rollouts in a step's batch.
 */
export const SIZE_LIMITS = {
  maxNewTokens: 32_768,
  rolloutsPerStep: 65_536,
  maxTurns: 1_000,
  maxActionsPerTurn: 1_000,
} as const;

const integer = (description: string, minimum = 1, maximum = 1_000_000): FieldSpec => ({
  schema: { type: "integer", minimum, maximum },
  description,
});
const number = (description: string, bounds: NumberBounds = {}, why?: string): FieldSpec => ({
  schema: { type: "number", ...bounds },
  description,
  ...(why === undefined ? {} : { why }),
});
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
export const SECTIONS = ["train", "validation", "rollout", "starpo", "apo", "lora"] as const;
export type SectionName = (typeof SECTIONS)[number];

type SettingsFields = { [K in Exclude<keyof TrainingSettings, SectionName>]: FieldSpec } & {
  [S in SectionName]: { [F in keyof TrainingSettings[S]]-?: FieldSpec };
};

/** The fields, section by section, in the order `--help` and `--print-config` list them. */
export const SETTINGS_FIELDS: SettingsFields = {
  profile: oneOf(
    ["auto", "embedded", "ragen", "ragen2"],
    "Named defaults the run starts from (auto: embedded for models under 50M parameters, else ragen; embedded: the tiny model on a CPU, also called quest; ragen / ragen2: RAGEN's / RAGEN-2's base config)",
  ),
  model: {
    schema: { type: "string", minLength: 1 },
    description: '"embedded", a local Hugging Face folder or a Hub repo id',
  },
  precision: oneOf(
    ["f32", "f16"],
    "The weights of the actor, critic and reference: f32, or f16 mixed precision (products, norms, RoPE and attention read and write halves and compute in f32, tensor cores where the GPU offers them; generation on the f16 weights with an f16 KV cache; losses and log-probs in f32; AdamW keeps f32 master weights and scales the loss dynamically; needs the adapter's shader-f16). RAGEN trains in bf16, which WebGPU lacks",
  ),
  envs: tags("Env tags (presets) or env names trained on; the groups are split between them"),
  envServers: {
    schema: {
      type: ["object", "null"],
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        required: ["url", "protocol"],
        properties: {
          url: { type: "string", pattern: "^https?://" },
          protocol: { enum: [...ENV_SERVER_PROTOCOLS] },
        },
      },
    },
    description:
      "Env servers by tag, as Tag=URL,Tag=URL (an OpenEnv-shaped server such as ragen serve-env Tag) or in a file Tag: {url, protocol: openenv | agentgym}: that tag's training and validation episodes run there (null: every env in process)",
  },
  steps: integer("Training steps (one rollout batch and one update each)", 0, 100_000),
  seed: integer("Seed of sampling, initialisation and shuffling", 0, Number.MAX_SAFE_INTEGER),
  seeds: {
    schema: {
      type: ["array", "null"],
      items: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      minItems: 1,
      maxItems: 1_000,
      uniqueItems: true,
    },
    description:
      "A seed sweep: run each seed in turn into outDir/seed-<N> and summarise them (mean ± standard error) in outDir",
  },
  outDir: { schema: { type: "string", minLength: 1 }, description: "Run folder" },
  resume: flag("Continue the run found in outDir (its checkpoint and logs)"),
  checkpointEvery: integer("Checkpoint every N steps, and at the end (0: only at the end)", 0),
  deviceMemoryGiB: {
    schema: { type: ["number", "null"], exclusiveMinimum: 0 },
    description:
      "Device memory the run may use (GiB): a run whose estimated peak (estimateTrainingMemory) is larger stops at start-up, naming settings that fit (null: three quarters of the host's memory on a software adapter such as lavapipe; not checked on a GPU)",
  },
  kernelTuning: oneOf(
    ["auto", "on", "off"],
    "Time every matmul kernel and attention tile that can run each problem the run meets, once per problem group, and run the fastest from then on (kept per GPU in ~/.cache/ragen): auto on a GPU, not on a software adapter such as lavapipe; on; off (the fixed rule)",
  ),
  kernelTuningSeconds: {
    schema: { type: ["number", "null"], exclusiveMinimum: 0 },
    description:
      "Seconds each kernel tuning pass may start new problems for (largest first); the rest are measured before later steps and run on the fixed rule until then (null: no limit)",
  },
  algorithm: oneOf(
    ["starpo", "apo"],
    "starpo (PPO/GRPO) or apo (A*-PO: offline V*, least-squares policy regression)",
  ),
  train: {
    envGroups: integer("Env groups per step (RAGEN's env_groups)", 1, SIZE_LIMITS.rolloutsPerStep),
    groupsPerEnv: {
      schema: { type: ["object", "null"], additionalProperties: { type: "integer", minimum: 1 } },
      description: "Groups per env as Tag=N,Tag=N summing to envGroups (null: split evenly)",
    },
    groupSize: integer(
      "Envs per group, sharing one start state (A*-PO samples one response per state)",
      1,
      SIZE_LIMITS.rolloutsPerStep,
    ),
    tokenBudget: integer(
      "Stop once training rollouts generated this many tokens (0: no budget)",
      0,
      Number.MAX_SAFE_INTEGER,
    ),
  },
  validation: {
    envs: tags("Env tags validated on (null: the training envs)", true),
    groupsPerEnv: integer(
      "Validation envs per tag (seeds 123, 124, ... numbered across tags)",
      1,
      SIZE_LIMITS.rolloutsPerStep,
    ),
    samples: integer(
      "Episodes per validation env (RAGEN's es_manager.val.group_size): each seed is played k times, val-env/<Tag>/pass@k is the share of seeds one of them solved, success the mean over all episodes",
      1,
      1024,
    ),
    every: integer("Validate every N steps (and before the first and after the last)"),
    temperature: number("Sampling temperature of validation", { minimum: 0 }),
    topP: number(
      "Nucleus cut of validation sampling: draw from the most likely tokens holding this share of the probability (1: all; RAGEN's val_kwargs.top_p)",
      { exclusiveMinimum: 0, maximum: 1 },
    ),
    topK: integer(
      "Top-k cut of validation sampling: draw from the k most likely tokens (0: all; RAGEN's val_kwargs.top_k -1)",
      0,
    ),
  },
  rollout: {
    maxTurns: integer("Turns per episode (RAGEN's max_turn)", 1, SIZE_LIMITS.maxTurns),
    maxActionsPerTurn: integer("Actions per turn; more are cut off", 1, SIZE_LIMITS.maxActionsPerTurn),
    maxNewTokens: integer(
      "Token budget of each response (RAGEN's response_length)",
      1,
      SIZE_LIMITS.maxNewTokens,
    ),
    temperature: number(
      "Sampling temperature of training rollouts (above 0)",
      STARPO_BOUNDS.temperature,
      "the update's log-probs are of softmax(logits / temperature), which greedy sampling at 0 does not have; validation.temperature=0 validates greedily",
    ),
    topP: number(
      "Nucleus cut of training rollouts: draw from the most likely tokens holding this share of the probability (1: all; RAGEN's top_p). The old log-probs stay those of the whole softmax(logits / temperature), which the update recomputes, as RAGEN's actor does",
      { exclusiveMinimum: 0, maximum: 1 },
    ),
    topK: integer(
      "Top-k cut of training rollouts: draw from the k most likely tokens (0: all; RAGEN's top_k -1); old log-probs as for topP",
      0,
    ),
    enableThinking: flag("Responses start with <think>"),
    formatPenalty: number(
      "Reward added for a turn whose tags did not match, named an invalid action or had none valid",
      { maximum: 0 },
    ),
    penalizeExtraActions: flag(
      "Also penalise actions beyond maxActionsPerTurn (RAGEN cuts them off without a penalty)",
    ),
    rewardPlacement: oneOf(
      ["trajectory", "turn"],
      "trajectory: the episode's reward (turn rewards and format penalties) on its last sampled token (RAGEN's use_turn_scores false); turn: each turn's reward on that turn's last sampled token",
    ),
    historyWindow: {
      schema: { type: ["integer", "null"], minimum: 1, maximum: SIZE_LIMITS.maxTurns },
      description:
        "Turns each prompt shows, the current one included (RAGEN's max_context_window; null: the whole chat, RAGEN's -1). An episode whose prompts dropped turns is trained as one sequence per sampled context, each turn after exactly the prompt it was sampled from, so the old log-probs stay those of the trained context (A*-PO needs the whole chat: no window shorter than maxTurns)",
    },
    maxSequenceLength: integer(
      "The most tokens one turn's context may hold, prompt and response together (RAGEN's max_model_len); at most the model's max_position_embeddings",
      2,
      1_048_576,
    ),
    contextOverflow: oneOf(
      ["truncate", "error"],
      "A turn whose prompt plus maxNewTokens would pass maxSequenceLength: truncate ends that episode before the turn (finish reason context), error stops the run naming the env and turn (RAGEN hands the limit to vLLM, which cuts such a response short and stops the run on a prompt already past it)",
    ),
    prefixCaching: flag("Reuse each turn's cached prompt prefix from the previous turn"),
    prefillTokens: integer(
      "The local engine: the most prompt tokens one prefill pass runs; a turn's batch of more is prefilled in groups of whole prompts (a longer prompt runs alone), which bounds one layer's intermediates (a rollout's memory peak, counted by the start-up memory check) at the cost of more, smaller products",
      1,
      16_777_216,
    ),
    seedPerPrompt: flag(
      "The local engine: each prompt of a turn draws its tokens from its own random stream (the turn's seed + the prompt's index) instead of one stream for the batch, as remote engines seed each request; a local run with it samples what a rollout.maxStaleness=0 run on ragen serve-policy samples, token for token",
    ),
    engine: oneOf(
      ROLLOUT_ENGINES,
      "Where training and validation episodes are sampled: local (this process, on the weights being trained), or vllm / sglang servers (rollout.servers) that sample with the newest LoRA adapter the run published after each update. A remote engine needs lora.rank above 0 (only adapters can be swapped into a running server) and algorithm starpo; see docs/guide/remote-rollouts.md",
    ),
    servers: {
      schema: {
        type: ["array", "null"],
        items: { type: "string", pattern: "^https?://" },
        minItems: 1,
        uniqueItems: true,
      },
      description:
        "The inference servers (replicas) of a remote engine as URL,URL, e.g. http://10.0.0.5:8000,http://10.0.0.6:8000: each serves the base model and loads every adapter version; an episode stays on one replica while it is up (null: none, for the local engine)",
    },
    servedModel: {
      schema: { type: ["string", "null"], minLength: 1 },
      description:
        "The base model's name on the servers (vLLM's served model name, requests' model field; null: the model setting as written)",
    },
    maxStaleness: integer(
      "Remote engines: the most adapter versions a trained trajectory may lag the learner (k). 0: synchronous, each batch sampled with the newest adapter; k ≥ 1: the next batches are sampled while the learner updates (at most k finished batches wait), and older trajectories are dropped (rollout/stale_dropped)",
      0,
      64,
    ),
    importanceCap: number(
      "Remote engines: C of the truncated importance weight min(π_old / μ, C) on each sampled token's policy-gradient term, where μ is the server's log-prob and π_old the learner's own under the adapter version that sampled it (TIS, Yao et al. 2025)",
      { minimum: 1 },
      "a cap below 1 would shrink the tokens on which the engines agree (weight 1)",
    ),
    adapterPath: {
      schema: { type: "string", minLength: 1 },
      description:
        "Remote engines: the folder each replica loads an adapter version from, a template over {localPath} (the version's folder <outDir>/adapters/<name>@<version>, absolute), {name}, {version}, {adapter}, {replica}, {index} (default {localPath}: the servers see the run folder, shared storage)",
    },
  },
  starpo: {
    advantageEstimator: oneOf(
      ADVANTAGE_ESTIMATORS,
      "gae (PPO with a critic, RAGEN), grpo, rloo, reinforce_plus_plus, or bi_level_gae (with a critic: GAE over turns with highLevelGamma, then over each turn's tokens; RAGEN's algorithm.bi_level_gae)",
    ),
    highLevelGamma: number(
      "bi_level_gae: discount between turns (RAGEN's high_level_gamma)",
      STARPO_BOUNDS.highLevelGamma,
    ),
    normAdvByStd: flag(
      "grpo: divide each group's advantages by its reward std (false: Dr. GRPO, R - group mean; verl's norm_adv_by_std_in_grpo)",
    ),
    rewardNormGrouping: oneOf(
      NORMALIZATION_GROUPINGS,
      "Reward normalisation: which trajectories share statistics (state: one env group, batch, inductive: one env tag; RAGEN's agent_proxy.reward_normalization.grouping)",
    ),
    rewardNormMethod: oneOf(
      NORMALIZATION_METHODS,
      "Reward normalisation before the update, over the whole batch before filtering: identity (none, RAGEN), mean_std (z-score; batch = BRPO, state = GRPO), mean (minus the mean), asym_clip (z-score clamped to [-1, 3])",
    ),
    actorLr: number("Actor learning rate (AdamW)", STARPO_BOUNDS.actorLr),
    criticLr: number("Critic learning rate (AdamW)", STARPO_BOUNDS.criticLr),
    beta1: number("AdamW beta1 of both optimisers", STARPO_BOUNDS.beta1),
    beta2: number("AdamW beta2 of both optimisers", STARPO_BOUNDS.beta2),
    weightDecay: number("AdamW weight decay", STARPO_BOUNDS.weightDecay),
    maxGradNorm: number("Gradient-norm clip of both optimisers", STARPO_BOUNDS.maxGradNorm),
    clipRatioLow: number("PPO clip below 1", STARPO_BOUNDS.clipRatioLow),
    clipRatioHigh: number("PPO clip above 1 (clip-higher)", STARPO_BOUNDS.clipRatioHigh),
    dualClip: number("Dual-clip bound c on negative advantages", STARPO_BOUNDS.dualClip),
    clipRangeValue: number("Critic value clip range", STARPO_BOUNDS.clipRangeValue),
    entropyCoeff: number("Entropy bonus", STARPO_BOUNDS.entropyCoeff),
    klCoeff: number("KL-to-reference loss coefficient (StarPO-S: 0)", STARPO_BOUNDS.klCoeff),
    klType: oneOf(["kl", "abs", "mse", "low_var_kl"], "KL estimator of the loss term"),
    klInReward: flag(
      "Subtract klRewardCoeff x KL(policy || start model) from every sampled token's reward before advantages (verl's use_kl_in_reward; loads the start model as reference); logs actor/reward_kl_penalty and actor/reward_kl_penalty_coeff",
    ),
    klRewardCoeff: number(
      "klInReward: starting coefficient (verl's algorithm.kl_ctrl.kl_coef; RAGEN's config sets 0 with klInReward off)",
      STARPO_BOUNDS.klRewardCoeff,
    ),
    klRewardType: oneOf(
      ["kl", "abs", "mse", "low_var_kl"],
      "klInReward: KL estimator (RAGEN's algorithm.kl_penalty)",
    ),
    klController: oneOf(
      KL_CONTROLLERS,
      "klInReward: fixed coefficient, or adaptive: after each step x (1 + clip(KL / klTargetKl - 1, ±0.2) x trajectories / klHorizon) (verl's kl_ctrl.type)",
    ),
    klTargetKl: number("klController adaptive: the KL it steers towards", STARPO_BOUNDS.klTargetKl),
    klHorizon: number(
      "klController adaptive: trajectories over which a full proportional correction is spread",
      STARPO_BOUNDS.klHorizon,
    ),
    aggregation: oneOf(
      ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"],
      "How token losses add up",
    ),
    gamma: number("Discount", STARPO_BOUNDS.gamma),
    lambda: number("GAE lambda", STARPO_BOUNDS.lambda),
    ppoMiniBatchSize: integer(
      "Trajectories per optimiser step (RAGEN's ppo_mini_batch_size)",
      1,
      SIZE_LIMITS.rolloutsPerStep,
    ),
    microBatchSize: integer(
      "Trajectories per forward/backward at the mini-batch's longest length (rows of similar length are grouped, up to this many of the longest row's padded tokens; gradients accumulate over a mini-batch)",
      1,
      SIZE_LIMITS.rolloutsPerStep,
    ),
    ppoEpochs: integer("PPO epochs per batch", 1, 100),
    uncertaintyFilter: flag("StarPO-S: train on the groups with the most reward spread"),
    rolloutFilterRatio: number(
      "The filter's value: top_k the share of groups kept (RAGEN 0.25), top_p the share of the score mass (RAGEN-2 0.9), min_p the share of the best group's score a group needs",
      STARPO_BOUNDS.rolloutFilterRatio,
      "a filter that keeps no group leaves nothing to train on",
    ),
    filterStrategy: oneOf(
      FILTER_STRATEGIES,
      "top_k keeps the best rolloutFilterRatio of the groups (RAGEN), top_p the best until they hold that share of the summed scores (RAGEN-2's linear top_p), min_p those scoring at least that share of the best; top_p and min_p may keep none (the step then trains on nothing)",
    ),
    filterKeep: oneOf(
      ["highest", "lowest"],
      "Keep the groups scoring highest (RAGEN's rollout_filter_type std, RAGEN-2's largest) or lowest (std_rev, smallest)",
    ),
    filterMetric: oneOf(
      FILTER_METRICS,
      "What groups are scored by: reward_std (RAGEN), reward_variance (RAGEN-2: the same order, but top_p's share of the summed scores differs), reward_mean, entropy (mean of the actor's per-trajectory token entropy; one more forward), entropy_std, length (mean response tokens)",
    ),
    filterIncludeZero: flag(
      "Groups scoring 0 (e.g. no reward spread) may be kept (RAGEN-2's rollout_filter_include_zero); false drops them first",
    ),
    filterLossScaling: oneOf(
      FILTER_LOSS_SCALINGS,
      "Scale the policy-gradient term by the share of groups kept (linear) or its square root (sqrt) (RAGEN-2's filter_loss_scaling)",
    ),
    filterPerEnv: flag(
      "The filter keeps its share of each env's groups (RAGEN ranks the whole batch), so every env stays in every update",
    ),
    whitenPerEnv: flag(
      "Whiten GAE advantages within each env (verl whitens the whole batch, judging a low-paying env against a high-paying one)",
    ),
    whitenScale: oneOf(
      ["env", "batch", "none"],
      "With whitenPerEnv: each env's own spread (env), each env centred and one spread for the batch (batch), or each env only centred, advantages in reward units (none)",
    ),
    criticHeadInit: oneOf(
      ["normal", "zero"],
      "A new critic's score head: normal (Hugging Face's init, RAGEN) or zero (the first values are 0, not noise)",
    ),
    lrWarmupSteps: integer(
      "Optimiser steps over which both learning rates rise linearly to their value (when above 0 it wins over lrWarmupRatio, as verl's lr_warmup_steps does)",
      0,
      100_000,
    ),
    lrWarmupRatio: number(
      "Warm-up as a share of the run's steps (verl's lr_warmup_steps_ratio), used when lrWarmupSteps is 0",
      STARPO_BOUNDS.lrWarmupRatio,
      "a warm-up as long as the run would never reach the full rate",
    ),
    lrSchedule: oneOf(
      LR_SCHEDULES,
      "Learning rates: constant (RAGEN), or cosine: x (1 + cos(pi x share of the run's steps done)) / 2, to 0 at the end (verl's warmup_style)",
    ),
  },
  apo: {
    samples: integer("Stage 1: reference samples per start state (the paper's N)", 1, 1024),
    beta1: {
      // 0, or at least MIN_BETA1: JSON Schema says "not in (0, MIN_BETA1)".
      schema: {
        type: "number",
        minimum: 0,
        not: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: MIN_BETA1 },
      },
      description: `Stage 1: V* temperature (0: mean reward; else at least ${MIN_BETA1.toExponential()})`,
      why: `beta1 is 0 (the mean reward) or at least ${MIN_BETA1.toExponential()}: below that r / beta1 overflows and V* becomes NaN`,
    },
    dropAllZero: flag("Stage 1: leave out start states whose samples all scored 0 or less"),
    beta2: number("Stage 2: weight of the summed log-ratio (KL strength)", ASTARPO_BOUNDS.beta2),
    lr: number("Stage 2: learning rate (AdamW)", ASTARPO_BOUNDS.lr),
    weightDecay: number("Stage 2: AdamW weight decay", ASTARPO_BOUNDS.weightDecay),
    maxGradNorm: number("Stage 2: gradient-norm clip", ASTARPO_BOUNDS.maxGradNorm),
    entropyCoeff: number("Stage 2: entropy bonus", ASTARPO_BOUNDS.entropyCoeff),
    miniBatchSize: integer("Stage 2: trajectories per optimiser step", 1, SIZE_LIMITS.rolloutsPerStep),
    microBatchSize: integer(
      "Stage 2: trajectories per forward/backward at the mini-batch's longest length (rows of similar length are grouped)",
      1,
      SIZE_LIMITS.rolloutsPerStep,
    ),
  },
  lora: {
    rank: integer(
      "LoRA rank of the actor's adapters, StarPO and A*-PO (0: off, every weight trains; RAGEN's LoRA runs: 64). The KL's reference is then the base model with the adapters off, and checkpoints hold the adapter in PEFT's layout",
      0,
      4096,
    ),
    alpha: number("LoRA alpha: the adapters' update is scaled by alpha / rank (RAGEN: 64)", {
      exclusiveMinimum: 0,
    }),
    targetModules: {
      schema: {
        type: "array",
        items: { enum: [...QWEN2_LINEAR_MODULES] },
        minItems: 1,
        uniqueItems: true,
      },
      description:
        "Linear modules with adapters, in every layer (all-linear, RAGEN's: all seven; e.g. q_proj,v_proj)",
    },
    critic: flag(
      "With lora.rank above 0, the critic's backbone trains adapters of the same shape instead of every weight; its value head trains in full (RAGEN: the critic's lora_rank follows lora.rank)",
    ),
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
