import type { Trajectory } from "@ragen/rollout";
import {
  AdamW,
  affine,
  createCpuBackend,
  embedding,
  noGrad,
  reshape,
  scale,
  square,
  type Tensor,
  tensor,
} from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { maskedMean } from "../src/masked.js";
import { forwardRows, type MiniBatchTraining, trainMiniBatches } from "../src/minibatches.js";
import { unevenTrajectories } from "./fixtures.js";

const backend = createCpuBackend();
const VOCAB = 16;

/** A toy policy: one learned score per token id, [vocab, 1]. */
function scoreTable(): Tensor {
  const init = Float32Array.from({ length: VOCAB }, (_, i) => Math.sin(i + 1));
  return tensor(init, [VOCAB, 1], { backend, requiresGrad: true });
}

/** The score of every target, [batch, seqLen]. */
function targetScores(scores: Tensor, targets: Int32Array, batch: number, seqLen: number): Tensor {
  return reshape(embedding(scores, targets, [batch, seqLen, 1]), [batch, seqLen]);
}

/** Sampled tokens among the targets of these trajectories. */
const sampledTargets = (rows: readonly Trajectory[]) =>
  rows.reduce((n, t) => n + t.lossMask.subarray(1).reduce((a, b) => a + b, 0), 0);

/** A token-mean loss of the sampled targets' squared scores, with its value as a detached metric. */
function tokenMeanTraining(
  scores: Tensor,
  optimizer: AdamW,
  microBatchSize: number,
): MiniBatchTraining<Trajectory> {
  return {
    optimizer,
    epochs: 1,
    miniBatchSize: 8,
    microBatchSize,
    shuffleSeed: 3,
    prefix: "actor",
    trajectoryOf: (row) => row,
    lossOf: (_micro, packed) => {
      const shape = [packed.batch, packed.seqLen];
      const perToken = square(targetScores(scores, packed.targets, packed.batch, packed.seqLen));
      const loss = maskedMean(perToken, tensor(packed.mask, shape, { backend }));
      return { loss, metrics: { "actor/loss": noGrad(() => affine(loss, 1, 0)) } };
    },
    lossWeight: sampledTargets,
  };
}

/** The table's gradient at the first optimiser step of one pass with `microBatchSize`. */
async function firstGradient(microBatchSize: number): Promise<Float32Array> {
  const scores = scoreTable();
  const optimizer = new AdamW([scores], { lr: 0.01 });
  const step = optimizer.step.bind(optimizer);
  let captured: Tensor | undefined;
  optimizer.step = () => {
    captured ??= noGrad(() => scale(scores.grad!, 1)).keep();
    return step();
  };
  await trainMiniBatches(unevenTrajectories(VOCAB), tokenMeanTraining(scores, optimizer, microBatchSize));
  const grad = await captured!.floats();
  captured!.dispose();
  optimizer.dispose();
  return grad;
}

describe("forwardRows", () => {
  it("returns each trajectory's values aligned to its targets, whatever the micro-batch size", async () => {
    const trajectories = unevenTrajectories(VOCAB);
    const scores = scoreTable();
    for (const microBatchSize of [1, 3, 8]) {
      const rows = await forwardRows(trajectories, microBatchSize, (input, targets) =>
        targetScores(scores, targets, input.batch, input.seqLen),
      );
      expect(rows.map((r) => r.length)).toEqual(trajectories.map((t) => t.tokens.length - 1));
      const table = await scores.floats();
      rows.forEach((row, i) => {
        const expected = Array.from(trajectories[i]!.tokens.subarray(1), (id) => table[id]!);
        expect(Array.from(row)).toEqual(expected);
      });
    }
    scores.dispose();
  });
});

describe("trainMiniBatches", () => {
  it("accumulates the same gradient for micro-batches of 1, 2 and 4 rows (token-mean weighting)", async () => {
    const whole = await firstGradient(8);
    expect(whole.some((g) => g !== 0)).toBe(true);
    for (const micro of [1, 2, 4]) {
      const split = await firstGradient(micro);
      for (let j = 0; j < whole.length; j++) {
        expect(Math.abs(split[j]! - whole[j]!), `micro ${micro}, element ${j}`).toBeLessThan(
          1e-6 + 1e-5 * Math.abs(whole[j]!),
        );
      }
    }
  });

  it("reports the mini-batch's loss whatever the micro-batches (metrics weighted like the loss)", async () => {
    const lossWith = async (microBatchSize: number) => {
      const scores = scoreTable();
      const optimizer = new AdamW([scores], { lr: 0.01 });
      const metrics = await trainMiniBatches(
        unevenTrajectories(VOCAB),
        tokenMeanTraining(scores, optimizer, microBatchSize),
      );
      optimizer.dispose();
      scores.dispose();
      return metrics["actor/loss"]!;
    };
    const whole = await lossWith(8);
    for (const micro of [1, 2, 3]) expect(await lossWith(micro), `micro ${micro}`).toBeCloseTo(whole, 6);
  });

  it("takes one step per mini-batch and reports the loss, grad_norm and skipped steps", async () => {
    const scores = scoreTable();
    const optimizer = new AdamW([scores], { lr: 0.01 });
    const training = { ...tokenMeanTraining(scores, optimizer, 2), miniBatchSize: 3, epochs: 2 };
    const metrics = await trainMiniBatches(unevenTrajectories(VOCAB), training);
    // 8 rows in mini-batches of 3: 3 steps per epoch.
    expect(optimizer.steps).toBe(6);
    expect(Object.keys(metrics).sort()).toEqual(["actor/grad_norm", "actor/loss", "actor/skipped_steps"]);
    expect(metrics["actor/loss"]).toBeGreaterThan(0);
    expect(metrics["actor/grad_norm"]).toBeGreaterThan(0);
    expect(metrics["actor/skipped_steps"]).toBe(0);
    optimizer.dispose();
    scores.dispose();
  });

  it("deals the same mini-batches for the same seed and optimiser step", async () => {
    const dealt = async (shuffleSeed: number) => {
      const scores = scoreTable();
      const optimizer = new AdamW([scores], { lr: 0.01 });
      const seen: number[][] = [];
      await trainMiniBatches(unevenTrajectories(VOCAB), {
        ...tokenMeanTraining(scores, optimizer, 8),
        miniBatchSize: 4,
        shuffleSeed,
        lossOf: (micro, packed) => {
          seen.push(micro.map((t) => t.index).sort((a, b) => a - b));
          return tokenMeanTraining(scores, optimizer, 8).lossOf(micro, packed);
        },
      });
      optimizer.dispose();
      scores.dispose();
      return seen;
    };
    const a = await dealt(5);
    expect(a.flat().sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await dealt(5)).toEqual(a);
  });
});
