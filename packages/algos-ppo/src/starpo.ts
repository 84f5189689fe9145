import type { TokenBatch as ModelTokenBatch, Qwen2Model, Qwen2ValueModel } from "@ragen/models";
import {
  boundsProblem,
  forwardRows,
  inputOf,
  type NumberBounds,
  type PackedBatch,
  packTrajectories,
  trainMiniBatches,
} from "@ragen/rl-core";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { AdamW, type Tensor, tensor } from "@ragen/tensor-webgpu";
import {
  type AdvantageResult,
  gaeAdvantages,
  grpoAdvantages,
  whitenMasked,
  whitenMaskedByKey,
} from "./advantages.js";
import { filterByUncertainty } from "./filter.js";
import {
  ACTOR_LOSS_DEFAULTS,
  actorLoss,
  type KlPenaltyType,
  type LossAggregation,
  POLICY_LOSS_DEFAULTS,
  valueLoss,
} from "./losses.js";

export type AdvantageEstimator = "gae" | "grpo";

export interface StarPOConfig {
  /** Default "gae" when a critic is given, else "grpo". */
  advantageEstimator?: AdvantageEstimator;
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
  aggregation?: LossAggregation;
  gamma?: number;
  lambda?: number;
  /** Trajectories per optimiser step (RAGEN's ppo_mini_batch_size). */
  ppoMiniBatchSize?: number;
  /** Trajectories per forward/backward; micro-batches of a mini-batch accumulate gradients. */
  microBatchSize?: number;
  ppoEpochs?: number;
  /** StarPO-S uncertainty filtering (off by default). */
  uncertaintyFilter?: boolean;
  rolloutFilterRatio?: number;
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
   * whose rewards barely differ keeps small advantages.
   */
  whitenScale?: "env" | "batch";
  /**
   * Both optimisers' learning rates rise linearly over this many optimiser steps. Adam's first steps move
   * every parameter by about the learning rate whatever its gradient's size, while the fresh critic's
   * values are still noise.
   */
  lrWarmupSteps?: number;
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
  aggregation: POLICY_LOSS_DEFAULTS.aggregation,
  gamma: 1,
  lambda: 1,
  ppoMiniBatchSize: 32,
  microBatchSize: 4,
  ppoEpochs: 1,
  uncertaintyFilter: false,
  rolloutFilterRatio: 0.25,
  filterPerEnv: false,
  whitenPerEnv: false,
  whitenScale: "env",
  lrWarmupSteps: 0,
  temperature: 1,
  shuffleSeed: 0,
} as const satisfies Required<Omit<StarPOConfig, "advantageEstimator">>;

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
  gamma: { minimum: 0, maximum: 1 },
  lambda: { minimum: 0, maximum: 1 },
  // Keeping no group would leave nothing to train on.
  rolloutFilterRatio: { exclusiveMinimum: 0, maximum: 1 },
  lrWarmupSteps: { minimum: 0 },
  // The log-probs are of softmax(logits / temperature): 0 (greedy sampling) has none.
  temperature: { exclusiveMinimum: 0 },
} as const satisfies Partial<Record<keyof StarPOConfig, NumberBounds>>;

export type ResolvedStarPOConfig = Required<StarPOConfig>;

export type StarPOMetrics = Record<string, number>;

export interface StarPOModels {
  actor: Qwen2Model;
  critic?: Qwen2ValueModel;
  /** Frozen initial policy, for the KL loss term (and actor/kl_loss). */
  reference?: Qwen2Model;
  config?: StarPOConfig;
}

/** Linear warm-up: the k-th step (from 0) of `warmupSteps` runs at (k + 1) / (warmupSteps + 1) of the rate. */
export function warmupFactor(stepsTaken: number, warmupSteps: number): number {
  return stepsTaken >= warmupSteps ? 1 : (stepsTaken + 1) / (warmupSteps + 1);
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
 * StarPO: token-level PPO (GAE with a critic) or GRPO over whole multi-turn trajectories, with the
 * StarPO-S options (uncertainty filtering, clip-higher, no KL). One `update` per rollout batch.
 */
export class StarPO {
  readonly actor: Qwen2Model;
  readonly critic: Qwen2ValueModel | undefined;
  readonly reference: Qwen2Model | undefined;
  readonly config: ResolvedStarPOConfig;
  readonly actorOptimizer: AdamW;
  readonly criticOptimizer: AdamW | undefined;

  constructor({ actor, critic, reference, config = {} }: StarPOModels) {
    const advantageEstimator = config.advantageEstimator ?? (critic ? "gae" : "grpo");
    if (advantageEstimator === "gae" && !critic) {
      throw new Error('StarPO: advantageEstimator "gae" needs a critic');
    }
    this.config = { ...STARPO_DEFAULTS, ...stripUndefined(config), advantageEstimator };
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
    if (!(Number.isInteger(c.lrWarmupSteps) && c.lrWarmupSteps >= 0))
      throw new RangeError("StarPO: lrWarmupSteps must be a non-negative integer");
    // Without a reference the KL term would silently be zero.
    if (c.klCoeff > 0 && !reference)
      throw new Error(`StarPO: klCoeff ${c.klCoeff} needs a reference model (the frozen start policy)`);
    this.actor = actor;
    this.critic = critic;
    this.reference = reference;
    const adam = { beta1: c.beta1, beta2: c.beta2, weightDecay: c.weightDecay, maxGradNorm: c.maxGradNorm };
    this.actorOptimizer = new AdamW(actor.parameters(), { ...adam, lr: c.actorLr });
    // Only a GAE run trains the critic; with GRPO it would be dead weight.
    this.criticOptimizer =
      critic && advantageEstimator === "gae"
        ? new AdamW(critic.parameters(), { ...adam, lr: c.criticLr })
        : undefined;
  }

  /** Packs trajectories into right-padded rows; see PackedBatch for the alignment. */
  batchTensors(trajectories: readonly Trajectory[]): PackedBatch {
    return packTrajectories(trajectories);
  }

  /** One StarPO step on a rollout batch: filter, advantages, critic update, actor update. */
  async update(rollout: TrajectoryBatch): Promise<StarPOMetrics> {
    const c = this.config;
    const stepStart = performance.now();
    const metrics: StarPOMetrics = {};
    const all = rollout.trajectories;
    if (all.length === 0) throw new RangeError("StarPO.update: empty batch");

    // The in-group reward statistics are the early warning of the echo trap, so they are logged
    // even when nothing is filtered (ratio 1 keeps every group).
    const filter = filterByUncertainty(
      all.map((t) => t.reward),
      all.map((t) => t.groupId),
      {
        rolloutFilterRatio: c.uncertaintyFilter ? c.rolloutFilterRatio : 1,
        quotaKeys: c.filterPerEnv ? all.map((t) => t.tag) : undefined,
      },
    );
    Object.assign(metrics, filter.metrics);
    const trajectories = filter.keptIndices.map((i) => all[i]!);
    const aligned: AlignedTrajectory[] = trajectories.map((t) => ({
      mask: Float32Array.from(t.lossMask.subarray(1)),
      tokenRewards: t.tokenRewards.slice(1),
    }));

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
      refLogProbs = await this.forwardRows(
        trajectories,
        (input, targets) => reference.sequenceLogProbs(input, targets, c.temperature).logProbs,
      );
      metrics["timing_s/ref"] = seconds(start);
    }

    const advStart = performance.now();
    const tokenBatch = {
      tokenRewards: aligned.map((a) => a.tokenRewards),
      masks: aligned.map((a) => a.mask),
    };
    let advantageResult: AdvantageResult;
    if (c.advantageEstimator === "gae") {
      const gae = gaeAdvantages(tokenBatch, values!, { gamma: c.gamma, lambda: c.lambda });
      // verl whitens GAE advantages over every sampled token of the batch.
      const advantages = c.whitenPerEnv
        ? whitenMaskedByKey(
            gae.advantages,
            tokenBatch.masks,
            trajectories.map((t) => t.tag),
            { scale: c.whitenScale === "batch" ? "batch" : "key" },
          )
        : whitenMasked(gae.advantages, tokenBatch.masks);
      advantageResult = { advantages, returns: gae.returns };
    } else {
      advantageResult = grpoAdvantages(
        tokenBatch,
        trajectories.map((t) => t.groupId),
      );
    }
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
        await this.train(rows, this.criticOptimizer, "critic", (packed, extra) =>
          this.criticLoss(packed, extra),
        ),
      );
      metrics["timing_s/update_critic"] = seconds(start);
    }
    const actorStart = performance.now();
    Object.assign(
      metrics,
      await this.train(rows, this.actorOptimizer, "actor", (packed, extra) => this.actorLoss(packed, extra)),
    );
    metrics["actor/lr"] = this.actorOptimizer.lr;
    metrics["timing_s/update_actor"] = seconds(actorStart);
    metrics["timing_s/step"] = seconds(stepStart);
    return metrics;
  }

  /** Runs `fn` without gradients on every trajectory (micro-batch by micro-batch); per-row arrays aligned to targets. */
  private forwardRows(
    trajectories: readonly Trajectory[],
    fn: (input: ModelTokenBatch, targets: Int32Array) => Tensor,
  ): Promise<Float32Array[]> {
    return forwardRows(trajectories, this.config.microBatchSize, fn);
  }

  /** One epoch per `ppoEpochs` of mini-batches of `rows` (see trainMiniBatches). */
  private train(
    rows: readonly TrainingRow[],
    optimizer: AdamW,
    prefix: "actor" | "critic",
    lossOf: (packed: PackedBatch, extra: PackedExtras) => { loss: Tensor; metrics: Record<string, Tensor> },
  ): Promise<StarPOMetrics> {
    const c = this.config;
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
        (prefix === "actor" ? c.actorLr : c.criticLr) * warmupFactor(stepsTaken, c.lrWarmupSteps),
    });
  }

  private actorLoss(packed: PackedBatch, extra: PackedExtras) {
    const c = this.config;
    const backend = this.actor.param("model.embed_tokens.weight").backend;
    const shape = [packed.batch, packed.seqLen];
    const { logProbs, entropy } = this.actor.sequenceLogProbs(inputOf(packed), packed.targets, c.temperature);
    return actorLoss(
      {
        logProbs,
        entropy,
        oldLogProbs: tensor(packed.oldLogProbs, shape, { backend }),
        advantages: tensor(extra.advantages, shape, { backend }),
        mask: tensor(packed.mask, shape, { backend }),
        refLogProbs: extra.refLogProbs ? tensor(extra.refLogProbs, shape, { backend }) : undefined,
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
