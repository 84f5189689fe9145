import type { TokenBatch as ModelTokenBatch, Qwen2Model, Qwen2ValueModel } from "@ragen/models";
import {
  boundsProblem,
  forwardRows,
  inputOf,
  type NumberBounds,
  type PackedBatch,
  packTrajectories,
  sampledTokenLogProbs,
  trainMiniBatches,
} from "@ragen/rl-core";
import { type Trajectory, type TrajectoryBatch, trainingRows } from "@ragen/rollout";
import { AdamW, type Tensor, tensor } from "@ragen/tensor-webgpu";
import type { AdvantageResult } from "./advantages.js";
import {
  ADVANTAGE_ESTIMATORS,
  type AdvantageEstimator,
  batchAdvantages,
  type FilterLossScaling,
  filterLossScale,
  scaleAdvantages,
  usesCritic,
} from "./batch-advantages.js";
import { type FilterStrategy, filterByUncertainty, type UncertaintyFilterOptions } from "./filter.js";
import { applyKlRewardPenalty, KlController, type KlControllerType } from "./kl-reward.js";
import {
  ACTOR_LOSS_DEFAULTS,
  actorLoss,
  type KlPenaltyType,
  type LossAggregation,
  POLICY_LOSS_DEFAULTS,
  valueLoss,
} from "./losses.js";
import { type NormalizationGrouping, type NormalizationMethod, normalizeTokenRewards } from "./normalize.js";
import { type LrSchedule, learningRateFactor, scheduleNeedsRunLength } from "./schedule.js";

export type { AdvantageEstimator } from "./batch-advantages.js";
export { warmupFactor } from "./schedule.js";

/**
 * What a filter ranks groups by: their rewards' spread (std, or its square, RAGEN-2's reward_variance) or
 * mean, their entropy's mean or spread, their length.
 */
export type FilterMetric =
  | "reward_std"
  | "reward_variance"
  | "reward_mean"
  | "entropy"
  | "entropy_std"
  | "length";
export const FILTER_METRICS = [
  "reward_std",
  "reward_variance",
  "reward_mean",
  "entropy",
  "entropy_std",
  "length",
] as const satisfies readonly FilterMetric[];

export interface StarPOConfig {
  /**
   * Default "gae" when a critic is given, else "grpo". gae and bi_level_gae (turn-level then token-level
   * GAE, RAGEN's bi_level_gae) need the critic; grpo, rloo and reinforce_plus_plus do not.
   */
  advantageEstimator?: AdvantageEstimator;
  /** bi_level_gae's discount between turns (RAGEN's high_level_gamma). */
  highLevelGamma?: number;
  /** GRPO divides by the group's reward std (verl's norm_adv_by_std_in_grpo); false is Dr. GRPO. */
  normAdvByStd?: boolean;
  /**
   * Reward normalisation before the update, over the whole batch before filtering (RAGEN's
   * agent_proxy.reward_normalization): which trajectories share statistics (state: one env group,
   * batch, inductive: one env tag) ...
   */
  rewardNormGrouping?: NormalizationGrouping;
  /** ... and how (identity leaves the rewards as they are; see normalizeRewards). */
  rewardNormMethod?: NormalizationMethod;
  actorLr?: number;
  criticLr?: number;
  beta1?: number;
  beta2?: number;
  weightDecay?: number;
  /** Global gradient-norm clip for both optimisers (RAGEN: 1.0). */
  maxGradNorm?: number;
  clipRatioLow?: number;
  clipRatioHigh?: number;
  dualClip?: number;
  /** Critic value clip range (RAGEN's cliprange_value). */
  clipRangeValue?: number;
  entropyCoeff?: number;
  klCoeff?: number;
  klType?: KlPenaltyType;
  /**
   * KL to the reference in the reward (verl's use_kl_in_reward): each sampled token's reward loses
   * coefficient x KL(sampler || reference) before advantages. Needs a reference model.
   */
  klInReward?: boolean;
  /** The in-reward KL's starting coefficient (verl's kl_ctrl.kl_coef). */
  klRewardCoeff?: number;
  /** The in-reward KL's estimator (verl's algorithm.kl_penalty). */
  klRewardType?: KlPenaltyType;
  /** fixed keeps klRewardCoeff; adaptive steers it towards klTargetKl (verl's kl_ctrl.type). */
  klController?: KlControllerType;
  klTargetKl?: number;
  /** Trajectories over which the adaptive controller makes a full proportional correction. */
  klHorizon?: number;
  aggregation?: LossAggregation;
  gamma?: number;
  lambda?: number;
  /** Trajectories per optimiser step (RAGEN's ppo_mini_batch_size). */
  ppoMiniBatchSize?: number;
  /**
   * Trajectories per forward/backward at the mini-batch's longest length: rows of similar length are
   * grouped, up to this many of the longest row's padded tokens (`lengthMicroBatches`); micro-batches of
   * a mini-batch accumulate gradients.
   */
  microBatchSize?: number;
  ppoEpochs?: number;
  /** StarPO-S uncertainty filtering (off by default). */
  uncertaintyFilter?: boolean;
  /** The filter strategy's value: top_k the share of groups kept, top_p the score mass, min_p the share of the best score. */
  rolloutFilterRatio?: number;
  /** top_k (RAGEN), or RAGEN-2's top_p / min_p; see filterByUncertainty. */
  filterStrategy?: FilterStrategy;
  /** Keep the groups scoring highest (RAGEN's std) or lowest (std_rev). */
  filterKeep?: "highest" | "lowest";
  /** What groups are scored by (RAGEN-2's rollout_filter_metric). */
  filterMetric?: FilterMetric;
  /** Whether groups scoring 0 may be kept (RAGEN-2's rollout_filter_include_zero). */
  filterIncludeZero?: boolean;
  /** Scale the policy-gradient term by the kept share of groups (RAGEN-2's filter_loss_scaling). */
  filterLossScaling?: FilterLossScaling;
  /**
   * The filter keeps `rolloutFilterRatio` of each env's groups (by trajectory tag) instead of ranking
   * the whole batch (RAGEN): every env stays in every update, so the KL term and its own advantages
   * keep holding its text while another env's groups have the larger reward spread.
   */
  filterPerEnv?: boolean;
  /**
   * GAE advantages are whitened within each env's trajectories instead of over the whole batch (verl):
   * an env that pays 0.1 is not judged against one that pays 1.
   */
  whitenPerEnv?: boolean;
  /**
   * With whitenPerEnv, the scale: "env" divides each env's advantages by its own spread; "batch" only
   * centres each env on its own mean and divides by the spread of the whole centred batch, so an env
   * whose rewards barely differ keeps small advantages; "none" only centres each env: advantages in reward
   * units, so a batch whose rewards barely differ (every FrozenLake group failed, Bandit's differ by a
   * format penalty) is not scaled up into a full-size step of noise.
   */
  whitenScale?: "env" | "batch" | "none";
  /**
   * Both optimisers' learning rates rise linearly over this many optimiser steps. Adam's first steps move
   * every parameter by about the learning rate whatever its gradient's size, while the fresh critic's
   * values are still noise.
   */
  lrWarmupSteps?: number;
  /**
   * Warm-up as a share of the run (verl's lr_warmup_steps_ratio), used when lrWarmupSteps is 0: the rates
   * rise linearly over that share of the run's updates. Needs totalUpdates.
   */
  lrWarmupRatio?: number;
  /** constant, or cosine: both rates decay as (1 + cos(pi * share of the run)) / 2. Cosine needs totalUpdates. */
  lrSchedule?: LrSchedule;
  /** The run's number of updates, which lrSchedule cosine and lrWarmupRatio measure the run by (0: unknown). */
  totalUpdates?: number;
  /** Sampling temperature of the rollout, so the log-probs are those of the distribution sampled from. */
  temperature?: number;
  /** Seed of the order trajectories are dealt into mini-batches (reshuffled every epoch and update). */
  shuffleSeed?: number;
}

export const STARPO_DEFAULTS = {
  actorLr: 1e-6,
  criticLr: 1e-5,
  beta1: 0.9,
  beta2: 0.999,
  weightDecay: 0.01,
  maxGradNorm: 1,
  clipRatioLow: POLICY_LOSS_DEFAULTS.clipRatioLow,
  clipRatioHigh: POLICY_LOSS_DEFAULTS.clipRatioHigh,
  dualClip: POLICY_LOSS_DEFAULTS.dualClip,
  clipRangeValue: 0.5,
  entropyCoeff: ACTOR_LOSS_DEFAULTS.entropyCoeff,
  klCoeff: ACTOR_LOSS_DEFAULTS.klCoeff,
  klType: ACTOR_LOSS_DEFAULTS.klType,
  klInReward: false,
  // RAGEN's base config sets 0 with the in-reward KL off; verl's default is the value that acts when on.
  klRewardCoeff: 0.001,
  klRewardType: "kl",
  klController: "fixed",
  klTargetKl: 0.1,
  klHorizon: 10_000,
  aggregation: POLICY_LOSS_DEFAULTS.aggregation,
  gamma: 1,
  lambda: 1,
  highLevelGamma: 0.95,
  normAdvByStd: true,
  rewardNormGrouping: "state",
  rewardNormMethod: "identity",
  ppoMiniBatchSize: 32,
  microBatchSize: 4,
  ppoEpochs: 1,
  uncertaintyFilter: false,
  rolloutFilterRatio: 0.25,
  filterStrategy: "top_k",
  filterKeep: "highest",
  filterMetric: "reward_std",
  filterIncludeZero: true,
  filterLossScaling: "none",
  filterPerEnv: false,
  whitenPerEnv: false,
  whitenScale: "env",
  lrWarmupSteps: 0,
  lrWarmupRatio: 0,
  lrSchedule: "constant",
  temperature: 1,
  shuffleSeed: 0,
} as const satisfies Required<Omit<StarPOConfig, "advantageEstimator" | "totalUpdates">>;

/**
 * The values StarPO's numeric options may take. The constructor checks them, and the trainer's settings
 * schema is built from them, so a run is refused before its first rollout rather than in its first update.
 */
export const STARPO_BOUNDS = {
  actorLr: { exclusiveMinimum: 0 },
  criticLr: { exclusiveMinimum: 0 },
  beta1: { minimum: 0, exclusiveMaximum: 1 },
  beta2: { minimum: 0, exclusiveMaximum: 1 },
  weightDecay: { minimum: 0 },
  maxGradNorm: { minimum: 0 },
  clipRatioLow: { minimum: 0 },
  clipRatioHigh: { minimum: 0 },
  dualClip: { minimum: 1 },
  clipRangeValue: { minimum: 0 },
  entropyCoeff: { minimum: 0 },
  klCoeff: { minimum: 0 },
  klRewardCoeff: { minimum: 0 },
  // The adaptive controller divides by both.
  klTargetKl: { exclusiveMinimum: 0 },
  klHorizon: { exclusiveMinimum: 0 },
  gamma: { minimum: 0, maximum: 1 },
  lambda: { minimum: 0, maximum: 1 },
  highLevelGamma: { minimum: 0, maximum: 1 },
  // Keeping no group would leave nothing to train on.
  rolloutFilterRatio: { exclusiveMinimum: 0, maximum: 1 },
  lrWarmupSteps: { minimum: 0 },
  // A warm-up as long as the run would never reach the full rate.
  lrWarmupRatio: { minimum: 0, exclusiveMaximum: 1 },
  totalUpdates: { minimum: 0 },
  // The log-probs are of softmax(logits / temperature): 0 (greedy sampling) has none.
  temperature: { exclusiveMinimum: 0 },
} as const satisfies Partial<Record<keyof StarPOConfig, NumberBounds>>;

export type ResolvedStarPOConfig = Required<StarPOConfig>;

/** What a resumed run needs besides the weights and the optimisers' moments. */
export interface StarPOState {
  /** Updates done: the learning-rate schedule's clock. */
  updates: number;
  /** The in-reward KL coefficient, which the adaptive controller moves. */
  klRewardCoeff: number;
}

export type StarPOMetrics = Record<string, number>;

export interface StarPOModels {
  actor: Qwen2Model;
  critic?: Qwen2ValueModel;
  /**
   * Frozen initial policy, for the KL loss term (and actor/kl_loss) and the in-reward KL; or the actor
   * itself when it trains LoRA adapters: the reference is then its base weights with the adapters
   * switched off, with no second copy of the model.
   */
  reference?: Qwen2Model;
  config?: StarPOConfig;
}

/** Tokens the loss counts in these rows: the sampled ones among the targets (tokens 1 ..). */
function sampledTargets(rows: readonly { trajectory: Trajectory }[]): number {
  let count = 0;
  for (const { trajectory } of rows)
    for (let t = 1; t < trajectory.lossMask.length; t++) count += trajectory.lossMask[t]!;
  return count;
}

/** Per-trajectory arrays aligned to targets (length tokens - 1), the unit advantages are computed on. */
interface AlignedTrajectory {
  mask: Float32Array;
  tokenRewards: Float32Array;
}

/**
 * StarPO: token-level PPO (GAE or bi-level GAE with a critic) or GRPO / RLOO / REINFORCE++ over whole
 * multi-turn trajectories, with the StarPO-S options (uncertainty filtering, clip-higher, no KL). One
 * `update` per rollout batch.
 */
export class StarPO {
  readonly actor: Qwen2Model;
  readonly critic: Qwen2ValueModel | undefined;
  readonly reference: Qwen2Model | undefined;
  readonly config: ResolvedStarPOConfig;
  readonly actorOptimizer: AdamW;
  readonly criticOptimizer: AdamW | undefined;
  /** The in-reward KL's coefficient (used only with klInReward). */
  readonly klController: KlController;
  private updatesDone = 0;

  constructor({ actor, critic, reference, config = {} }: StarPOModels) {
    const advantageEstimator = config.advantageEstimator ?? (critic ? "gae" : "grpo");
    if (!ADVANTAGE_ESTIMATORS.includes(advantageEstimator))
      throw new RangeError(
        `StarPO: advantageEstimator must be one of ${ADVANTAGE_ESTIMATORS.join(", ")}, got ${advantageEstimator}`,
      );
    if (usesCritic(advantageEstimator) && !critic) {
      throw new Error(`StarPO: advantageEstimator "${advantageEstimator}" needs a critic`);
    }
    this.config = { ...STARPO_DEFAULTS, totalUpdates: 0, ...stripUndefined(config), advantageEstimator };
    const c = this.config;
    for (const [key, bounds] of Object.entries(STARPO_BOUNDS) as [
      keyof typeof STARPO_BOUNDS,
      NumberBounds,
    ][]) {
      const problem = boundsProblem(c[key], bounds);
      if (problem) throw new RangeError(`StarPO: ${key} ${problem}`);
    }
    for (const key of ["ppoMiniBatchSize", "microBatchSize", "ppoEpochs"] as const) {
      if (!(Number.isInteger(c[key]) && c[key] > 0))
        throw new RangeError(`StarPO: ${key} must be a positive integer`);
    }
    for (const key of ["lrWarmupSteps", "totalUpdates"] as const)
      if (!(Number.isInteger(c[key]) && c[key] >= 0))
        throw new RangeError(`StarPO: ${key} must be a non-negative integer`);
    if (
      scheduleNeedsRunLength({
        schedule: c.lrSchedule,
        warmupSteps: c.lrWarmupSteps,
        warmupRatio: c.lrWarmupRatio,
      }) &&
      c.totalUpdates === 0
    )
      throw new RangeError(
        `StarPO: ${c.lrSchedule === "cosine" ? "lrSchedule cosine" : "lrWarmupRatio"} measures the run: set totalUpdates (the run's number of updates)`,
      );
    if (c.uncertaintyFilter && c.filterStrategy === "top_p" && c.filterKeep === "lowest")
      throw new RangeError(
        'StarPO: filterStrategy top_p keeps the groups holding most of the score mass, from the highest: with filterKeep "lowest" use top_k or min_p',
      );
    // Without a reference the KL term would silently be zero.
    if (c.klCoeff > 0 && !reference)
      throw new Error(`StarPO: klCoeff ${c.klCoeff} needs a reference model (the frozen start policy)`);
    if (c.klInReward && !reference)
      throw new Error("StarPO: klInReward needs a reference model (the frozen start policy)");
    if (c.klInReward && c.klRewardCoeff === 0)
      throw new RangeError(
        "StarPO: klInReward with klRewardCoeff 0 changes no reward: set klRewardCoeff above 0",
      );
    if (reference === actor && !actor.adapters)
      throw new Error(
        "StarPO: the actor can be its own reference only with LoRA adapters attached (the reference is then the base weights); pass a frozen copy of the start model",
      );
    this.actor = actor;
    this.critic = critic;
    this.reference = reference;
    this.klController = new KlController({
      type: c.klController,
      initialCoeff: c.klRewardCoeff,
      targetKl: c.klTargetKl,
      horizon: c.klHorizon,
    });
    const adam = { beta1: c.beta1, beta2: c.beta2, weightDecay: c.weightDecay, maxGradNorm: c.maxGradNorm };
    // f16 weights train with dynamic loss scaling, so that small gradients survive f16's range.
    this.actorOptimizer = new AdamW(actor.parameters(), {
      ...adam,
      lr: c.actorLr,
      lossScaling: actor.dtype === "f16",
    });
    // Only the critic-based estimators train the critic; with the others it would be dead weight.
    this.criticOptimizer =
      critic && usesCritic(advantageEstimator)
        ? new AdamW(critic.parameters(), { ...adam, lr: c.criticLr, lossScaling: critic.dtype === "f16" })
        : undefined;
  }

  /**
   * With f16 weights the log-probs sampled through the KV cache differ from the training forward's by
   * f16 rounding (about 1e-2), which the first step would read as a policy change. The old log-probs of
   * the rows the actor sampled itself are recomputed with the training forward (as verl's actor
   * recomputes them for every run), so that the update starts exactly on-policy; rows with importance
   * weights already carry log-probs recomputed so.
   */
  private async onPolicyLogProbs(rows: Trajectory[], metrics: Record<string, number>): Promise<Trajectory[]> {
    const start = performance.now();
    const sampled = rows.filter((row) => !row.importanceWeights);
    const recomputed = await this.forwardRows(
      sampled,
      (input, targets, packed) =>
        this.actor.sequenceLogProbs(input, targets, this.config.temperature, packed.mask).logProbs,
    );
    const replaced = new Map(
      sampled.map((row, i) => [row, { ...row, oldLogProbs: sampledTokenLogProbs(row, recomputed[i]!) }]),
    );
    metrics["timing_s/old_log_prob"] = seconds(start);
    return rows.map((row) => replaced.get(row) ?? row);
  }

  /** The state a checkpoint keeps besides weights and optimiser moments. */
  state(): StarPOState {
    return { updates: this.updatesDone, klRewardCoeff: this.klController.coefficient };
  }

  /** Continues from a checkpoint's state (fields left out keep their values). */
  loadState(state: Partial<StarPOState>): void {
    if (state.updates !== undefined) {
      if (!(Number.isInteger(state.updates) && state.updates >= 0))
        throw new RangeError(
          `StarPO.loadState: updates must be a non-negative integer, got ${state.updates}`,
        );
      this.updatesDone = state.updates;
    }
    if (state.klRewardCoeff !== undefined) {
      if (!(Number.isFinite(state.klRewardCoeff) && state.klRewardCoeff >= 0))
        throw new RangeError(
          `StarPO.loadState: klRewardCoeff must be a finite number >= 0, got ${state.klRewardCoeff}`,
        );
      this.klController.coefficient = state.klRewardCoeff;
    }
  }

  /** Packs trajectories into right-padded rows; see PackedBatch for the alignment. */
  batchTensors(trajectories: readonly Trajectory[]): PackedBatch {
    return packTrajectories(trajectories);
  }

  /**
   * One StarPO step on a rollout batch: reward normalisation, filter, in-reward KL, advantages, critic
   * update, actor update. A filter that keeps no group (RAGEN-2's top_p and min_p can) skips the
   * optimiser steps: the step has only the filter's metrics.
   */
  async update(rollout: TrajectoryBatch): Promise<StarPOMetrics> {
    const c = this.config;
    const stepStart = performance.now();
    const metrics: StarPOMetrics = {};
    // An episode whose prompts dropped turns (a history window) is trained as one row per exact
    // sampled context; group statistics then count those rows.
    const all = trainingRows(rollout.trajectories);
    if (all.length === 0) throw new RangeError("StarPO.update: empty batch");
    const update = this.updatesDone++;

    let alignedAll: AlignedTrajectory[] = all.map((t) => ({
      mask: Float32Array.from(t.lossMask.subarray(1)),
      tokenRewards: t.tokenRewards.slice(1),
    }));
    // Over the whole batch before filtering, as RAGEN normalises when it builds the batch.
    if (c.rewardNormMethod !== "identity") {
      const normalized = normalizeTokenRewards(
        alignedAll.map((a) => a.tokenRewards),
        alignedAll.map((a) => a.mask),
        { groupIds: all.map((t) => t.groupId), tags: all.map((t) => t.tag) },
        { grouping: c.rewardNormGrouping, method: c.rewardNormMethod },
      );
      alignedAll = alignedAll.map((a, i) => ({ mask: a.mask, tokenRewards: normalized[i]! }));
    }

    // The in-group reward statistics are the early warning of the echo trap, so they are logged
    // even when nothing is filtered (ratio 1 keeps every group).
    const filter = filterByUncertainty(
      all.map((t) => t.reward),
      all.map((t) => t.groupId),
      c.uncertaintyFilter
        ? {
            rolloutFilterRatio: c.rolloutFilterRatio,
            strategy: c.filterStrategy,
            keep: c.filterKeep,
            includeZero: c.filterIncludeZero,
            ...(await this.filterScores(all, alignedAll, metrics)),
            quotaKeys: c.filterPerEnv ? all.map((t) => t.tag) : undefined,
          }
        : { rolloutFilterRatio: 1 },
    );
    Object.assign(metrics, filter.metrics);
    if (filter.keptIndices.length === 0) {
      metrics["timing_s/step"] = seconds(stepStart);
      return metrics;
    }
    const kept = filter.keptIndices.map((i) => all[i]!);
    const trajectories = this.actor.dtype === "f16" ? await this.onPolicyLogProbs(kept, metrics) : kept;
    const aligned = filter.keptIndices.map((i) => alignedAll[i]!);

    let values: Float32Array[] | undefined;
    if (this.criticOptimizer && this.critic) {
      const start = performance.now();
      values = await this.forwardRows(trajectories, (input) => this.critic!.values(input));
      metrics["timing_s/values"] = seconds(start);
    }
    let refLogProbs: Float32Array[] | undefined;
    if (this.reference) {
      const start = performance.now();
      const reference = this.reference;
      const logProbs = () =>
        this.forwardRows(
          trajectories,
          (input, targets, packed) =>
            reference.sequenceLogProbs(input, targets, c.temperature, packed.mask).logProbs,
        );
      // The actor as its own reference (LoRA): its base weights, with the adapters switched off.
      refLogProbs = await (reference === this.actor ? reference.withoutAdapters(logProbs) : logProbs());
      metrics["timing_s/ref"] = seconds(start);
    }

    const advStart = performance.now();
    if (c.klInReward) {
      // The coefficient the batch was penalised with is logged, then the controller moves it (verl).
      const coefficient = this.klController.coefficient;
      const penalty = applyKlRewardPenalty(
        aligned.map((a) => a.tokenRewards),
        aligned.map((a) => a.mask),
        trajectories.map((t) => t.oldLogProbs.subarray(1)),
        refLogProbs!,
        coefficient,
        c.klRewardType,
      );
      penalty.tokenRewards.forEach((rewards, i) => {
        aligned[i] = { mask: aligned[i]!.mask, tokenRewards: rewards };
      });
      this.klController.update(penalty.meanKl, trajectories.length);
      metrics["actor/reward_kl_penalty"] = penalty.meanKl;
      metrics["actor/reward_kl_penalty_coeff"] = coefficient;
    }
    const tokenBatch = {
      tokenRewards: aligned.map((a) => a.tokenRewards),
      masks: aligned.map((a) => a.mask),
    };
    const estimated = batchAdvantages(
      tokenBatch,
      values,
      { groupIds: trajectories.map((t) => t.groupId), tags: trajectories.map((t) => t.tag) },
      {
        estimator: c.advantageEstimator,
        gamma: c.gamma,
        lambda: c.lambda,
        highLevelGamma: c.highLevelGamma,
        normAdvByStd: c.normAdvByStd,
        whitenPerEnv: c.whitenPerEnv,
        whitenScale: c.whitenScale,
      },
    );
    const advantageResult: AdvantageResult = {
      advantages: scaleAdvantages(
        estimated.advantages,
        filterLossScale(c.filterLossScaling, filter.keptShare),
      ),
      returns: estimated.returns,
    };
    metrics["timing_s/adv"] = seconds(advStart);
    Object.assign(
      metrics,
      summaryMetrics(trajectories, tokenBatch.masks, tokenBatch.tokenRewards, advantageResult, values),
    );

    const rows: TrainingRow[] = trajectories.map((trajectory, i) => ({
      trajectory,
      advantages: advantageResult.advantages[i]!,
      returns: advantageResult.returns[i]!,
      values: values?.[i],
      refLogProbs: refLogProbs?.[i],
    }));

    if (this.criticOptimizer) {
      const start = performance.now();
      Object.assign(
        metrics,
        await this.train(rows, this.criticOptimizer, "critic", update, (packed, extra) =>
          this.criticLoss(packed, extra),
        ),
      );
      metrics["critic/lr"] = this.criticOptimizer.lr;
      metrics["timing_s/update_critic"] = seconds(start);
    }
    const actorStart = performance.now();
    Object.assign(
      metrics,
      await this.train(rows, this.actorOptimizer, "actor", update, (packed, extra) =>
        this.actorLoss(packed, extra),
      ),
    );
    metrics["actor/lr"] = this.actorOptimizer.lr;
    metrics["timing_s/update_actor"] = seconds(actorStart);
    metrics["timing_s/step"] = seconds(stepStart);
    return metrics;
  }

  /**
   * What the filter scores groups by, per trajectory, when not their rewards' spread: the mean reward, the
   * response length, or the actor's mean entropy over the sampled tokens (one forward over the batch).
   */
  private async filterScores(
    trajectories: readonly Trajectory[],
    aligned: readonly AlignedTrajectory[],
    metrics: StarPOMetrics,
  ): Promise<Pick<UncertaintyFilterOptions, "scores" | "statistic">> {
    const metric = this.config.filterMetric;
    if (metric === "reward_std") return {};
    if (metric === "reward_variance") return { statistic: "variance" };
    if (metric === "reward_mean") return { statistic: "mean" };
    if (metric === "length") return { scores: trajectories.map((t) => t.responseLength), statistic: "mean" };
    const start = performance.now();
    const entropies = await this.forwardRows(
      trajectories,
      (input, targets, packed) =>
        this.actor.sequenceLogProbs(input, targets, this.config.temperature, packed.mask).entropy,
    );
    metrics["timing_s/filter_entropy"] = seconds(start);
    const scores = entropies.map((entropy, i) => {
      const mask = aligned[i]!.mask;
      let total = 0;
      let count = 0;
      for (let t = 0; t < mask.length; t++)
        if (mask[t]) {
          total += entropy[t]!;
          count++;
        }
      return count === 0 ? 0 : total / count;
    });
    return { scores, statistic: metric === "entropy" ? "mean" : "std" };
  }

  /**
   * Runs `fn` without gradients on every trajectory (micro-batch by micro-batch); per-row arrays aligned
   * to targets. Only the sampled tokens' entries (packed.mask) are read.
   */
  private forwardRows(
    trajectories: readonly Trajectory[],
    fn: (input: ModelTokenBatch, targets: Int32Array, packed: PackedBatch) => Tensor,
  ): Promise<Float32Array[]> {
    return forwardRows(trajectories, this.config.microBatchSize, fn);
  }

  /**
   * One epoch per `ppoEpochs` of mini-batches of `rows` (see trainMiniBatches), each optimiser step at the
   * schedule's rate for its place in update number `update` of the run.
   */
  private train(
    rows: readonly TrainingRow[],
    optimizer: AdamW,
    prefix: "actor" | "critic",
    update: number,
    lossOf: (packed: PackedBatch, extra: PackedExtras) => { loss: Tensor; metrics: Record<string, Tensor> },
  ): Promise<StarPOMetrics> {
    const c = this.config;
    const schedule = {
      schedule: c.lrSchedule,
      warmupSteps: c.lrWarmupSteps,
      warmupRatio: c.lrWarmupRatio,
      totalUpdates: c.totalUpdates,
    };
    const stepsInUpdate = c.ppoEpochs * Math.ceil(rows.length / c.ppoMiniBatchSize);
    let stepInUpdate = 0;
    return trainMiniBatches(rows, {
      optimizer,
      prefix,
      epochs: c.ppoEpochs,
      miniBatchSize: c.ppoMiniBatchSize,
      microBatchSize: c.microBatchSize,
      shuffleSeed: c.shuffleSeed,
      trajectoryOf: (row) => row.trajectory,
      lossOf: (micro, packed) => lossOf(packed, packExtras(micro, packed)),
      // A token-mean averages the sampled tokens: a micro-batch weighs what it holds of them.
      lossWeight: c.aggregation === "token-mean" ? (micro) => sampledTargets(micro) : undefined,
      learningRate: (stepsTaken) =>
        (prefix === "actor" ? c.actorLr : c.criticLr) *
        learningRateFactor(schedule, {
          optimizerSteps: stepsTaken,
          update,
          stepInUpdate: stepInUpdate++,
          stepsInUpdate,
        }),
    });
  }

  private actorLoss(packed: PackedBatch, extra: PackedExtras) {
    const c = this.config;
    const backend = this.actor.param("model.embed_tokens.weight").backend;
    const shape = [packed.batch, packed.seqLen];
    // The loss reads the sampled tokens alone: the head runs on those.
    const { logProbs, entropy } = this.actor.sequenceLogProbs(
      inputOf(packed),
      packed.targets,
      c.temperature,
      packed.mask,
    );
    return actorLoss(
      {
        logProbs,
        entropy,
        oldLogProbs: tensor(packed.oldLogProbs, shape, { backend }),
        advantages: tensor(extra.advantages, shape, { backend }),
        mask: tensor(packed.mask, shape, { backend }),
        refLogProbs: extra.refLogProbs ? tensor(extra.refLogProbs, shape, { backend }) : undefined,
        importanceWeights: packed.importanceWeights
          ? tensor(packed.importanceWeights, shape, { backend })
          : undefined,
      },
      {
        clipRatioLow: c.clipRatioLow,
        clipRatioHigh: c.clipRatioHigh,
        dualClip: c.dualClip,
        aggregation: c.aggregation,
        entropyCoeff: c.entropyCoeff,
        klCoeff: c.klCoeff,
        klType: c.klType,
      },
    );
  }

  private criticLoss(packed: PackedBatch, extra: PackedExtras) {
    const critic = this.critic!;
    const backend = critic.scoreWeight.backend;
    const shape = [packed.batch, packed.seqLen];
    return valueLoss(
      {
        values: critic.values(inputOf(packed)),
        oldValues: tensor(extra.values!, shape, { backend }),
        returns: tensor(extra.returns, shape, { backend }),
        mask: tensor(packed.mask, shape, { backend }),
      },
      { clipRange: this.config.clipRangeValue, aggregation: this.config.aggregation },
    );
  }

  dispose(): void {
    this.actorOptimizer.dispose();
    this.criticOptimizer?.dispose();
  }
}

interface TrainingRow {
  trajectory: Trajectory;
  advantages: Float32Array;
  returns: Float32Array;
  values: Float32Array | undefined;
  refLogProbs: Float32Array | undefined;
}

/** Per-row arrays (already aligned to targets) padded into a PackedBatch's layout. */
interface PackedExtras {
  advantages: Float32Array;
  returns: Float32Array;
  values: Float32Array | undefined;
  refLogProbs: Float32Array | undefined;
}

function packExtras(rows: readonly TrainingRow[], packed: PackedBatch): PackedExtras {
  const pad = (pick: (r: TrainingRow) => Float32Array | undefined): Float32Array | undefined => {
    if (rows.some((r) => !pick(r))) return undefined;
    const out = new Float32Array(packed.batch * packed.seqLen);
    rows.forEach((r, b) => {
      out.set(pick(r)!, b * packed.seqLen);
    });
    return out;
  };
  return {
    advantages: pad((r) => r.advantages)!,
    returns: pad((r) => r.returns)!,
    values: pad((r) => r.values),
    refLogProbs: pad((r) => r.refLogProbs),
  };
}

/** RAGEN's critic/* summaries: per-sequence score and reward, per-token advantages, returns, values. */
function summaryMetrics(
  trajectories: readonly Trajectory[],
  masks: readonly Float32Array[],
  tokenRewards: readonly Float32Array[],
  result: AdvantageResult,
  values: readonly Float32Array[] | undefined,
): StarPOMetrics {
  const out: StarPOMetrics = {};
  const add = (name: string, xs: number[]) => {
    if (xs.length === 0) return;
    let total = 0;
    for (const x of xs) total += x;
    out[`${name}/mean`] = total / xs.length;
    out[`${name}/max`] = Math.max(...xs);
    out[`${name}/min`] = Math.min(...xs);
  };
  const masked = (arrays: readonly Float32Array[]) =>
    arrays.flatMap((a, i) => Array.from(a).filter((_, t) => masks[i]![t]));
  add(
    "critic/score",
    trajectories.map((t) => t.reward),
  );
  add(
    "critic/rewards",
    tokenRewards.map((r) => r.reduce((a, b) => a + b, 0)),
  );
  add("critic/advantages", masked(result.advantages));
  add("critic/returns", masked(result.returns));
  if (values) {
    const v = masked(values);
    const r = masked(result.returns);
    add("critic/values", v);
    // 1 - Var(R - V) / Var(R): how much of the return variance the critic explains.
    const residual = r.map((x, i) => x - v[i]!);
    out["critic/vf_explained_var"] = 1 - variance(residual) / (variance(r) + 1e-5);
  }
  out["response_length/mean"] =
    trajectories.reduce((a, t) => a + t.responseLength, 0) / Math.max(1, trajectories.length);
  return out;
}

function variance(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length;
}

function seconds(start: number): number {
  return (performance.now() - start) / 1000;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
