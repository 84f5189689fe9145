import type { TokenBatch } from "@ragen/models";
import type { Trajectory } from "@ragen/rollout";
import { type AdamW, asyncScope, backward, noGrad, scale, type Tensor } from "@ragen/tensor-webgpu";
import { chunks, inputOf, type PackedBatch, packedLength, packTrajectories, shuffled } from "./batching.js";
import { readMetrics } from "./metrics.js";
import { lengthMicroBatches } from "./micro-batches.js";

/**
 * Runs `fn` without gradients on every trajectory, in micro-batches of similar length (at most
 * `microBatchSize` of the longest one's padded tokens each); returns one array per trajectory, in the
 * given order, aligned to its targets (length tokens - 1). A row's result does not depend on the rows
 * beside it, so the grouping changes only the time taken. `fn` also gets the packed micro-batch (its
 * loss mask says which positions anything reads).
 */
export async function forwardRows(
  trajectories: readonly Trajectory[],
  microBatchSize: number,
  fn: (input: TokenBatch, targets: Int32Array, packed: PackedBatch) => Tensor,
): Promise<Float32Array[]> {
  const out = new Array<Float32Array>(trajectories.length);
  const rows = trajectories.map((trajectory, index) => ({ trajectory, index }));
  for (const micro of lengthMicroBatches(rows, (r) => packedLength(r.trajectory), microBatchSize)) {
    const packed = packTrajectories(micro.map((r) => r.trajectory));
    const flat = await asyncScope(async () => {
      const result = noGrad(() => fn(inputOf(packed), packed.targets, packed));
      return result.floats();
    });
    micro.forEach((r, b) => {
      out[r.index] = flat.slice(b * packed.seqLen, b * packed.seqLen + packed.lengths[b]!);
    });
  }
  return out;
}

export interface MiniBatchTraining<R> {
  optimizer: AdamW;
  epochs: number;
  miniBatchSize: number;
  microBatchSize: number;
  shuffleSeed: number;
  /** Metric prefix of the steps' `grad_norm` and `skipped_steps` ("actor", "critic"). */
  prefix: string;
  trajectoryOf: (row: R) => Trajectory;
  /** The micro-batch's loss (mean over its rows) and its detached metric scalars. */
  lossOf: (micro: readonly R[], packed: PackedBatch) => { loss: Tensor; metrics: Record<string, Tensor> };
  /**
   * How much a micro-batch's metrics weigh in their averages; default its `lossWeight` (else its rows),
   * so that a loss metric is the mini-batch's loss however the rows were split into micro-batches.
   */
  metricWeight?: (micro: readonly R[]) => number;
  /**
   * What a micro-batch's loss counts for in its mini-batch: by default its rows (a loss that is a mean
   * over rows); a token-mean loss counts the tokens it averages, so that every token weighs the same
   * however the mini-batch is split.
   */
  lossWeight?: (micro: readonly R[]) => number;
  /**
   * The learning rate of the optimiser step about to be taken, from the steps already taken (a
   * schedule; a resumed run continues it, since the optimiser's step count is checkpointed). Default:
   * the optimiser's own rate.
   */
  learningRate?: (stepsTaken: number) => number;
}

/**
 * Epochs x mini-batches x micro-batches: each micro-batch's loss is weighted by its share of the
 * mini-batch (`lossWeight`: rows, or tokens for a token-mean), so the accumulated gradient is that of the
 * loss over the whole mini-batch, the same for any micro-batch size; one optimiser step per mini-batch.
 * Returns the loss metrics averaged over micro-batches, and grad_norm over steps.
 */
export async function trainMiniBatches<R>(
  rows: readonly R[],
  training: MiniBatchTraining<R>,
): Promise<Record<string, number>> {
  const { optimizer, prefix, trajectoryOf } = training;
  const metricWeight =
    training.metricWeight ?? training.lossWeight ?? ((micro: readonly R[]) => micro.length);
  const sums = new Map<string, { total: number; weight: number }>();
  const record = (name: string, value: number, weight: number) => {
    const entry = sums.get(name) ?? { total: 0, weight: 0 };
    entry.total += value * weight;
    entry.weight += weight;
    sums.set(name, entry);
  };
  let skippedSteps = 0;
  for (let epoch = 0; epoch < training.epochs; epoch++) {
    // Rollouts arrive grouped by env tag; a shuffle gives every mini-batch a mix of them. Seeding by
    // the optimiser's step count makes a resumed run deal the same mini-batches as an unbroken one.
    const order = shuffled(rows, training.shuffleSeed * 1_000_003 + optimizer.steps * 101 + epoch);
    for (const mini of chunks(order, training.miniBatchSize)) {
      optimizer.zeroGrad();
      // Micro-batches only split the work of one gradient: grouping rows of similar length there
      // changes nothing but the padding, which it cuts.
      const micros = lengthMicroBatches(mini, (r) => packedLength(trajectoryOf(r)), training.microBatchSize);
      const shares = lossShares(micros, training.lossWeight);
      for (const [m, micro] of micros.entries()) {
        const packed = packTrajectories(micro.map(trajectoryOf));
        const read = await asyncScope(async () => {
          const { loss, metrics } = training.lossOf(micro, packed);
          // Scaled by the optimiser's loss scale when it has one (f16 weights), which its step divides out.
          backward(optimizer.scaleLoss(scale(loss, shares[m]!)));
          return readMetrics(metrics);
        });
        const weight = metricWeight(micro);
        for (const [name, value] of Object.entries(read)) record(name, value, weight);
      }
      if (training.learningRate) optimizer.lr = training.learningRate(optimizer.steps);
      const step = optimizer.step();
      const [gradNorm, clipScale] = [await step.gradNorm.item(), await step.clipScale.item()];
      step.gradNorm.dispose();
      step.clipScale.dispose();
      if (optimizer.lossScaling) {
        const lossScale = optimizer.lossScale()!;
        record(`${prefix}/loss_scale`, await lossScale.item(), 1);
        lossScale.dispose();
      }
      if (clipScale === 0) skippedSteps++;
      // A skipped step's norm is not finite; averaging it in would hide every other step.
      else record(`${prefix}/grad_norm`, gradNorm, 1);
      optimizer.zeroGrad();
    }
  }
  const out: Record<string, number> = {};
  for (const [name, { total, weight }] of sums) out[name] = total / weight;
  out[`${prefix}/skipped_steps`] = skippedSteps;
  return out;
}

/** Each micro-batch's share of its mini-batch's loss: by `weight`, or by rows when there is none (or all weigh 0). */
function lossShares<R>(
  micros: readonly (readonly R[])[],
  weight?: (micro: readonly R[]) => number,
): number[] {
  const rows = micros.map((micro) => micro.length);
  const weights = weight ? micros.map(weight) : rows;
  const total = weights.reduce((a, b) => a + b, 0);
  if (total > 0) return weights.map((w) => w / total);
  const allRows = rows.reduce((a, b) => a + b, 0);
  return rows.map((r) => r / allRows);
}
