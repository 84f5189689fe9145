import type { Qwen2Model } from "@ragen/models";
import {
  boundsProblem,
  forwardRows,
  inputOf,
  type NumberBounds,
  type PackedBatch,
  trainMiniBatches,
} from "@ragen/rl-core";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { AdamW, type Tensor, tensor } from "@ragen/tensor-webgpu";
import { APO_LOSS_DEFAULTS, apoLoss } from "./loss.js";

export interface AStarPOConfig {
  /** Weight of the summed log-ratio in the regression (paper: 1e-3). */
  beta2?: number;
  /** Entropy bonus weight (official code: 0.001). */
  entropyCoeff?: number;
  /** Constant AdamW learning rate. */
  lr?: number;
  weightDecay?: number;
  /** Global gradient-norm clip. */
  maxGradNorm?: number;
  /** Trajectories per optimiser step. */
  miniBatchSize?: number;
  /**
   * Trajectories per forward/backward at the mini-batch's longest length: rows of similar length are
   * grouped, up to this many of the longest row's padded tokens (`lengthMicroBatches`); micro-batches of
   * a mini-batch accumulate gradients.
   */
  microBatchSize?: number;
  /** The rollout's sampling temperature, so both log-probs are of the distribution sampled from. */
  temperature?: number;
  /** Seed of the order trajectories are dealt into mini-batches. */
  shuffleSeed?: number;
  /**
   * Experimental, not in the paper: re-estimate V̂* from the current policy every this many updates
   * (0, the default, never does). The trainer only flags it (`vstarRefreshDue`); the caller reruns stage 1.
   */
  vstarRefreshEvery?: number;
}

export const ASTARPO_DEFAULTS = {
  beta2: APO_LOSS_DEFAULTS.beta2,
  entropyCoeff: APO_LOSS_DEFAULTS.entropyCoeff,
  lr: 1e-6,
  weightDecay: 0.01,
  maxGradNorm: 1,
  miniBatchSize: 32,
  microBatchSize: 4,
  temperature: 1,
  shuffleSeed: 0,
  vstarRefreshEvery: 0,
} as const satisfies Required<AStarPOConfig>;

/**
 * The values A*-PO's numeric options may take. The constructor checks them, and the trainer's settings
 * schema is built from them, so a run is refused before stage 1 rather than in its first update.
 */
export const ASTARPO_BOUNDS = {
  beta2: { exclusiveMinimum: 0 },
  entropyCoeff: { minimum: 0 },
  lr: { exclusiveMinimum: 0 },
  weightDecay: { minimum: 0 },
  maxGradNorm: { minimum: 0 },
  // The log-probs are of softmax(logits / temperature): 0 (greedy sampling) has none.
  temperature: { exclusiveMinimum: 0 },
} as const satisfies Partial<Record<keyof AStarPOConfig, NumberBounds>>;

export type ResolvedAStarPOConfig = Required<AStarPOConfig>;

export interface AStarPOModels {
  actor: Qwen2Model;
  /**
   * A frozen copy of the initial policy (the model stage 1 sampled V̂* from); never trained. Or the
   * actor itself when it trains LoRA adapters: the reference is then its base weights, adapters off.
   */
  reference: Qwen2Model;
  config?: AStarPOConfig;
}

/** V̂* of a trajectory's start state; undefined where none was estimated. */
export type VStarLookup = (trajectory: Trajectory) => number | undefined;

interface Row {
  trajectory: Trajectory;
  vstar: number;
  /** Reference log-probs aligned to the targets (length tokens - 1). */
  refLogProbs: Float32Array;
}

/**
 * A*-PO's stage 2: one on-policy trajectory per start state, regressed by least squares onto
 * r − V̂* (see `apoLoss`). No critic, no ratio clipping, no advantage normalisation. One `update` per
 * rollout batch: one epoch of mini-batches, micro-batches accumulating gradients, AdamW with grad clip.
 */
export class AStarPO {
  readonly actor: Qwen2Model;
  readonly reference: Qwen2Model;
  readonly config: ResolvedAStarPOConfig;
  readonly optimizer: AdamW;
  private updates = 0;

  constructor({ actor, reference, config = {} }: AStarPOModels) {
    if (actor === reference && !actor.adapters)
      throw new Error(
        "AStarPO: the reference must be a frozen copy of the actor, or the actor itself with LoRA adapters attached (the reference is then its base weights)",
      );
    this.config = { ...ASTARPO_DEFAULTS, ...stripUndefined(config) };
    const c = this.config;
    for (const key of ["miniBatchSize", "microBatchSize"] as const) {
      if (!(Number.isInteger(c[key]) && c[key] > 0))
        throw new RangeError(`AStarPO: ${key} must be a positive integer, got ${c[key]}`);
    }
    if (!(Number.isInteger(c.vstarRefreshEvery) && c.vstarRefreshEvery >= 0))
      throw new RangeError(`AStarPO: vstarRefreshEvery must be an integer >= 0, got ${c.vstarRefreshEvery}`);
    for (const [key, bounds] of Object.entries(ASTARPO_BOUNDS) as [
      keyof typeof ASTARPO_BOUNDS,
      NumberBounds,
    ][]) {
      const problem = boundsProblem(c[key], bounds);
      if (problem) throw new RangeError(`AStarPO: ${key} ${problem}`);
    }
    this.actor = actor;
    this.reference = reference;
    this.optimizer = new AdamW(actor.parameters(), {
      lr: c.lr,
      weightDecay: c.weightDecay,
      maxGradNorm: c.maxGradNorm,
      // f16 weights train with dynamic loss scaling, so that small gradients survive f16's range.
      lossScaling: actor.dtype === "f16",
    });
  }

  /** Updates done so far. */
  get updateCount(): number {
    return this.updates;
  }

  /** With the experimental refresh on: true right after every `vstarRefreshEvery`-th update. */
  get vstarRefreshDue(): boolean {
    const every = this.config.vstarRefreshEvery;
    return every > 0 && this.updates > 0 && this.updates % every === 0;
  }

  /** One A*-PO step on a rollout batch whose start states all have a V̂*. */
  async update(rollout: TrajectoryBatch, vstar: VStarLookup): Promise<Record<string, number>> {
    const stepStart = performance.now();
    const trajectories = rollout.trajectories;
    if (trajectories.length === 0) throw new RangeError("AStarPO.update: empty batch");
    // The loss regresses one log-ratio summed over a whole episode, which a split episode does not have.
    const split = trajectories.find((t) => t.trainingSequences);
    if (split)
      throw new RangeError(
        `AStarPO.update: trajectory ${split.index} (${split.tag}:${split.seed}) was sampled with a history window that dropped turns, so it has no single sequence to sum its log-ratio over; run A*-PO without historyWindow`,
      );
    const estimates = trajectories.map((t) => {
      const v = vstar(t);
      if (v === undefined || !Number.isFinite(v))
        throw new Error(
          `AStarPO.update: no V* estimate for start state ${t.tag}:${t.seed}; run stage 1 over the resets this batch comes from, or leave out states it dropped`,
        );
      return v;
    });
    const metrics: Record<string, number> = {};

    const refStart = performance.now();
    const refLogProbs = await this.referenceLogProbs(trajectories);
    metrics["timing_s/ref"] = seconds(refStart);
    const rows: Row[] = trajectories.map((trajectory, i) => ({
      trajectory,
      vstar: estimates[i]!,
      refLogProbs: refLogProbs[i]!,
    }));

    const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    metrics["apo/reward/mean"] = mean(trajectories.map((t) => t.reward));
    // RAGEN's (verl's) names for the trajectory scores, logged by every algorithm, critic or not.
    metrics["critic/score/mean"] = metrics["apo/reward/mean"];
    metrics["critic/score/max"] = Math.max(...trajectories.map((t) => t.reward));
    metrics["apo/vstar/mean"] = mean(estimates);
    // r − V̂*, what beta2 · log(π/π_ref) is regressed onto: A*-PO's advantage.
    metrics["apo/advantage/mean"] = mean(trajectories.map((t, i) => t.reward - estimates[i]!));
    metrics["response_length/mean"] = mean(trajectories.map((t) => t.responseLength));

    const trainStart = performance.now();
    Object.assign(metrics, await this.train(rows));
    metrics["actor/lr"] = this.optimizer.lr;
    metrics["timing_s/update_actor"] = seconds(trainStart);
    this.updates++;
    metrics["timing_s/step"] = seconds(stepStart);
    return metrics;
  }

  /** Reference log-probs of the sampled targets (0 elsewhere), micro-batch by micro-batch without gradients. */
  private referenceLogProbs(trajectories: readonly Trajectory[]): Promise<Float32Array[]> {
    const logProbs = () =>
      forwardRows(
        trajectories,
        this.config.microBatchSize,
        (input, targets, packed) =>
          this.reference.sequenceLogProbs(input, targets, this.config.temperature, packed.mask).logProbs,
      );
    // The actor as its own reference (LoRA): its base weights, with the adapters switched off.
    return this.reference === this.actor ? this.reference.withoutAdapters(logProbs) : logProbs();
  }

  /** One epoch of mini-batches (see trainMiniBatches); loss metrics are averaged over rows. */
  private train(rows: readonly Row[]): Promise<Record<string, number>> {
    const c = this.config;
    return trainMiniBatches(rows, {
      optimizer: this.optimizer,
      prefix: "actor",
      epochs: 1,
      miniBatchSize: c.miniBatchSize,
      microBatchSize: c.microBatchSize,
      shuffleSeed: c.shuffleSeed,
      trajectoryOf: (row) => row.trajectory,
      lossOf: (micro, packed) => this.microBatchLoss(micro, packed),
      metricWeight: (micro) => micro.length,
    });
  }

  private microBatchLoss(micro: readonly Row[], packed: PackedBatch) {
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
    const perRow = (values: readonly number[]): Tensor =>
      tensor(Float32Array.from(values), [packed.batch], { backend });
    return apoLoss(
      {
        logProbs,
        entropy,
        refLogProbs: tensor(padRows(micro, packed), shape, { backend }),
        mask: tensor(packed.mask, shape, { backend }),
        rewards: perRow(micro.map((r) => r.trajectory.reward)),
        vstar: perRow(micro.map((r) => r.vstar)),
      },
      { beta2: c.beta2, entropyCoeff: c.entropyCoeff },
    );
  }

  dispose(): void {
    this.optimizer.dispose();
  }
}

/** The rows' reference log-probs in the packed layout (padding 0, masked out anyway). */
function padRows(rows: readonly Row[], packed: PackedBatch): Float32Array {
  const out = new Float32Array(packed.batch * packed.seqLen);
  rows.forEach((r, b) => {
    out.set(r.refLogProbs, b * packed.seqLen);
  });
  return out;
}

function seconds(start: number): number {
  return (performance.now() - start) / 1000;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
