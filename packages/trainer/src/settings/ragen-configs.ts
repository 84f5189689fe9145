/**
 * RAGEN's configurations as job settings, value by value, each with the key RAGEN sets it under: the
 * `ragen` and `ragen2` profiles are built from these tables, the profiles guide lists them, and a test
 * holds the two together. Values were read from the public configs named in RAGEN_SOURCES (and, for
 * keys those files leave to verl, from verl's ppo_trainer.yaml of the same time).
 */
import type { SettingsLayer } from "./fields.js";

/** One RAGEN value as a job setting. */
export interface RagenValue {
  /** The job's field, as written on the command line ("starpo.actorLr"). */
  field: string;
  value: unknown;
  /** Where RAGEN sets it ("actor_rollout_ref.actor.optim.lr"). */
  ragenKey: string;
  /** Where the job's value or meaning differs from RAGEN's, and why. */
  note?: string;
}

export const RAGEN_SOURCES = {
  ragen: "RAGEN-AI/RAGEN config/base.yaml at 5eb79b8 (RAGEN, the StarPO paper's code)",
  ragen2: "mll-lab-nu/RAGEN config/base.yaml at 0321471 (RAGEN-2)",
} as const;

/** RAGEN's base config (StarPO-S on Qwen2.5-0.5B-Instruct). */
export const RAGEN_BASE_VALUES: readonly RagenValue[] = [
  { field: "model", value: "Qwen/Qwen2.5-0.5B-Instruct", ragenKey: "model_path" },
  { field: "steps", value: 200, ragenKey: "trainer.total_training_steps" },
  { field: "train.envGroups", value: 8, ragenKey: "es_manager.train.env_groups" },
  { field: "train.groupSize", value: 16, ragenKey: "es_manager.train.group_size" },
  {
    field: "validation.groupsPerEnv",
    value: 256,
    ragenKey: "es_manager.val.env_groups",
    note: "RAGEN validates 256 groups of one env each; here 256 seeds per validation env",
  },
  { field: "validation.every", value: 10, ragenKey: "trainer.test_freq" },
  {
    field: "validation.temperature",
    value: 0.5,
    ragenKey: "actor_rollout_ref.rollout.val_kwargs.temperature",
  },
  {
    field: "validation.samples",
    value: 1,
    ragenKey: "es_manager.val.group_size",
    note: "one episode per validation env, so RAGEN logs pass@1",
  },
  { field: "validation.topP", value: 1, ragenKey: "actor_rollout_ref.rollout.val_kwargs.top_p (verl)" },
  {
    field: "validation.topK",
    value: 0,
    ragenKey: "actor_rollout_ref.rollout.val_kwargs.top_k: -1 (verl)",
    note: "no cut; 0 here, -1 in verl",
  },
  { field: "rollout.maxTurns", value: 5, ragenKey: "agent_proxy.max_turn" },
  { field: "rollout.maxActionsPerTurn", value: 5, ragenKey: "agent_proxy.max_actions_per_turn" },
  { field: "rollout.maxNewTokens", value: 400, ragenKey: "actor_rollout_ref.rollout.response_length" },
  { field: "rollout.temperature", value: 1, ragenKey: "actor_rollout_ref.rollout.temperature" },
  { field: "rollout.topP", value: 1, ragenKey: "actor_rollout_ref.rollout.top_p (verl)" },
  {
    field: "rollout.topK",
    value: 0,
    ragenKey: "actor_rollout_ref.rollout.top_k: -1 (verl)",
    note: "no cut; 0 here, -1 in verl",
  },
  { field: "rollout.enableThinking", value: true, ragenKey: "agent_proxy.enable_think" },
  { field: "rollout.formatPenalty", value: -0.1, ragenKey: "es_manager.format_penalty" },
  {
    field: "rollout.penalizeExtraActions",
    value: false,
    ragenKey: "(extra actions are cut off, not penalised)",
  },
  { field: "rollout.rewardPlacement", value: "trajectory", ragenKey: "agent_proxy.use_turn_scores: False" },
  {
    field: "rollout.historyWindow",
    value: null,
    ragenKey: "agent_proxy.max_context_window: -1",
    note: "the whole chat; with a window RAGEN trains the last turns as one chat, here every turn is trained after the prompt it was sampled from",
  },
  { field: "rollout.maxSequenceLength", value: 3600, ragenKey: "actor_rollout_ref.rollout.max_model_len" },
  {
    field: "rollout.contextOverflow",
    value: "truncate",
    ragenKey: "(vLLM cuts a response at max_model_len)",
    note: "here the episode ends before a turn that would not fit; RAGEN stops with an error once a prompt alone is longer",
  },
  { field: "starpo.advantageEstimator", value: "gae", ragenKey: "algorithm.adv_estimator" },
  { field: "starpo.actorLr", value: 1e-6, ragenKey: "actor_rollout_ref.actor.optim.lr (verl)" },
  { field: "starpo.criticLr", value: 1e-5, ragenKey: "critic.optim.lr (verl)" },
  { field: "starpo.beta1", value: 0.9, ragenKey: "actor_rollout_ref.actor.optim.betas[0]" },
  { field: "starpo.beta2", value: 0.999, ragenKey: "actor_rollout_ref.actor.optim.betas[1]" },
  { field: "starpo.weightDecay", value: 0.01, ragenKey: "actor_rollout_ref.actor.optim.weight_decay (verl)" },
  { field: "starpo.maxGradNorm", value: 1, ragenKey: "actor_rollout_ref.actor.grad_clip (verl)" },
  { field: "starpo.clipRatioLow", value: 0.2, ragenKey: "actor_rollout_ref.actor.clip_ratio_low" },
  { field: "starpo.clipRatioHigh", value: 0.28, ragenKey: "actor_rollout_ref.actor.clip_ratio_high" },
  { field: "starpo.dualClip", value: 3, ragenKey: "actor_rollout_ref.actor.clip_ratio_c (verl)" },
  { field: "starpo.clipRangeValue", value: 0.5, ragenKey: "critic.cliprange_value (verl)" },
  { field: "starpo.entropyCoeff", value: 0.001, ragenKey: "actor_rollout_ref.actor.entropy_coeff" },
  {
    field: "starpo.klCoeff",
    value: 0,
    ragenKey: "actor_rollout_ref.actor.kl_loss_coef (use_kl_loss: False)",
  },
  { field: "starpo.klType", value: "kl", ragenKey: "actor_rollout_ref.actor.kl_loss_type" },
  {
    field: "starpo.aggregation",
    value: "token-mean",
    ragenKey: "actor_rollout_ref.actor.loss_agg_mode (verl)",
  },
  { field: "starpo.gamma", value: 1, ragenKey: "algorithm.gamma" },
  { field: "starpo.lambda", value: 1, ragenKey: "algorithm.lam" },
  { field: "starpo.ppoMiniBatchSize", value: 32, ragenKey: "ppo_mini_batch_size" },
  {
    field: "starpo.microBatchSize",
    value: 4,
    ragenKey: "micro_batch_size_per_gpu",
    note: "RAGEN 1 (RAGEN-2: 4); it sets memory and speed only, gradients accumulate over a mini-batch; rows of similar length are grouped, up to this many of the longest row's padded tokens (like verl's `use_dynamic_bsz`)",
  },
  { field: "starpo.ppoEpochs", value: 1, ragenKey: "actor_rollout_ref.actor.ppo_epochs (verl)" },
  {
    field: "starpo.uncertaintyFilter",
    value: true,
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_type: std",
  },
  {
    field: "starpo.rolloutFilterRatio",
    value: 0.25,
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_ratio",
  },
  { field: "starpo.filterPerEnv", value: false, ragenKey: "(the filter ranks the whole batch)" },
  { field: "starpo.whitenPerEnv", value: false, ragenKey: "(verl whitens the whole batch)" },
  { field: "starpo.criticHeadInit", value: "normal", ragenKey: "(Hugging Face's score-head init)" },
  {
    field: "starpo.lrWarmupSteps",
    value: 0,
    ragenKey: "actor_rollout_ref.actor.optim.lr_warmup_steps (verl)",
  },
  {
    field: "starpo.lrWarmupRatio",
    value: 0,
    ragenKey: "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio (verl)",
  },
  {
    field: "starpo.lrSchedule",
    value: "constant",
    ragenKey: "actor_rollout_ref.actor.optim.warmup_style (verl)",
  },
  { field: "starpo.highLevelGamma", value: 0.95, ragenKey: "algorithm.high_level_gamma (with bi_level_gae)" },
  { field: "starpo.normAdvByStd", value: true, ragenKey: "algorithm.norm_adv_by_std_in_grpo (verl)" },
  {
    field: "starpo.rewardNormGrouping",
    value: "state",
    ragenKey: "agent_proxy.reward_normalization.grouping",
  },
  {
    field: "starpo.rewardNormMethod",
    value: "identity",
    ragenKey: "agent_proxy.reward_normalization.method",
  },
  { field: "starpo.klInReward", value: false, ragenKey: "algorithm.use_kl_in_reward (verl)" },
  { field: "starpo.klRewardType", value: "kl", ragenKey: "algorithm.kl_penalty" },
  { field: "starpo.klController", value: "fixed", ragenKey: "algorithm.kl_ctrl.type" },
  { field: "starpo.klTargetKl", value: 0.1, ragenKey: "algorithm.kl_ctrl.target_kl (verl)" },
  { field: "starpo.klHorizon", value: 10_000, ragenKey: "algorithm.kl_ctrl.horizon (verl)" },
  {
    field: "starpo.filterStrategy",
    value: "top_k",
    ragenKey: "(a share of the groups: rollout_filter_ratio)",
  },
  {
    field: "starpo.filterKeep",
    value: "highest",
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_type: std",
  },
  {
    field: "starpo.filterMetric",
    value: "reward_std",
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_type: std",
  },
  {
    field: "starpo.filterIncludeZero",
    value: true,
    ragenKey: "(groups without spread rank last, and may be kept)",
  },
  { field: "starpo.filterLossScaling", value: "none", ragenKey: "(the loss is not rescaled)" },
  {
    field: "lora.alpha",
    value: 64,
    ragenKey: "lora.alpha (config/base-lora.yaml)",
    note: "base.yaml keeps LoRA off (lora.rank 0) with alpha 16; RAGEN's LoRA config, base-lora.yaml, uses rank 64 and alpha 64",
  },
  { field: "lora.critic", value: true, ragenKey: "critic.model.lora_rank (follows lora.rank)" },
];

/**
 * RAGEN's LoRA config (config/base-lora.yaml at 5eb79b8): its learning rates, which a run with lora.rank
 * above 0 gets (LORA_PROFILE); rank and alpha are its suggested lora.rank=64 lora.alpha=64.
 */
export const RAGEN_LORA_VALUES: readonly RagenValue[] = [
  { field: "starpo.actorLr", value: 1e-5, ragenKey: "actor_rollout_ref.actor.optim.lr" },
  { field: "starpo.criticLr", value: 1e-4, ragenKey: "critic.optim.lr" },
];

/** Where RAGEN-2's base config differs from RAGEN's (the rest is the same). */
export const RAGEN2_CHANGED_VALUES: readonly RagenValue[] = [
  { field: "model", value: "Qwen/Qwen2.5-3B-Instruct", ragenKey: "model_path" },
  { field: "rollout.maxActionsPerTurn", value: 2, ragenKey: "agent_proxy.max_actions_per_turn" },
  {
    field: "starpo.filterStrategy",
    value: "top_p",
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_strategy",
  },
  {
    field: "starpo.filterMetric",
    value: "reward_variance",
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_metric",
  },
  {
    field: "starpo.rolloutFilterRatio",
    value: 0.9,
    ragenKey: "actor_rollout_ref.rollout.rollout_filter_value",
    note: "with top_p: the groups with the largest scores that hold 90% of the summed scores (rollout_filter_top_p_prob_mode: linear)",
  },
  {
    field: "validation.groupsPerEnv",
    value: 512,
    ragenKey: "es_manager.val.env_groups",
    note: "RAGEN-2 validates 512 groups of one env each; here 512 seeds per validation env",
  },
];

/** A table's values as a settings layer. */
export function settingsLayerOf(values: readonly RagenValue[]): SettingsLayer {
  const layer: Record<string, unknown> = {};
  for (const { field, value } of values) {
    const [head, name] = field.split(".");
    if (name === undefined) layer[head!] = value;
    else layer[head!] = { ...(layer[head!] as object | undefined), [name]: value };
  }
  return layer as SettingsLayer;
}

/** RAGEN-2's values: RAGEN's, with RAGEN-2's changes laid over them. */
export function ragen2Values(): RagenValue[] {
  const changed = new Map(RAGEN2_CHANGED_VALUES.map((v) => [v.field, v]));
  return [
    ...RAGEN_BASE_VALUES.map((v) => changed.get(v.field) ?? v),
    ...RAGEN2_CHANGED_VALUES.filter((v) => !RAGEN_BASE_VALUES.some((b) => b.field === v.field)),
  ];
}
