/** A PPO-shaped loss on a tiny Qwen2, and what the tests that compare its gradients need. */
import { add, backward, createCpuBackend, mul, scope, sum, type Tensor, tensor } from "@ragen/tensor-webgpu";
import { Qwen2Model, type Qwen2Shape, type TokenBatch } from "../../src/model/qwen2.js";
import { countingBackend } from "./counting-backend.js";

export const tinyShape: Qwen2Shape = {
  vocabSize: 40,
  hiddenSize: 32,
  intermediateSize: 48,
  numHiddenLayers: 3,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: true,
  initializerRange: 0.2,
};

/** `rows` rows of `seqLen` tokens (every other one left-padded by 2) and the token each position predicts. */
export function batchOf(
  config: Qwen2Shape,
  seqLen: number,
  rows = 2,
): { input: TokenBatch; targets: Int32Array } {
  const ids = Int32Array.from({ length: rows * seqLen }, (_, i) => (i * 11 + 5) % config.vocabSize);
  const targets = Int32Array.from({ length: rows * seqLen }, (_, i) => (i * 7 + 2) % config.vocabSize);
  const start = Int32Array.from({ length: rows }, (_, b) => (b % 2) * 2);
  return { input: { ids, batch: rows, seqLen, start }, targets };
}

/** Fixed uneven weights, so that every position's log-prob and entropy matter to the loss. */
export function unevenWeights(like: Tensor, shape: number[], seed: number): Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  return tensor(
    Float32Array.from({ length: size }, (_, i) => Math.sin(seed + i * 1.7)),
    shape,
    { backend: like.backend },
  );
}

/** A PPO-like loss: weighted log-probs plus weighted entropies. */
export function policyLoss(model: Qwen2Model, seqLen: number, rows = 2): Tensor {
  const { input, targets } = batchOf(model.config, seqLen, rows);
  const embedding = model.param("model.embed_tokens.weight");
  const { logProbs, entropy } = model.sequenceLogProbs(input, targets, 0.9);
  const shape = [input.batch, input.seqLen];
  return add(
    sum(mul(logProbs, unevenWeights(embedding, shape, 1))),
    sum(mul(entropy, unevenWeights(embedding, shape, 2))),
  );
}

/** Gradients of every tensor in `params` after one backward of `lossOf`, then cleared. */
export async function gradientsOf(params: Tensor[], lossOf: () => Tensor): Promise<Float32Array[]> {
  scope(() => backward(lossOf()));
  const grads = await Promise.all(params.map((p) => p.grad!.floats()));
  for (const p of params) {
    p.grad?.dispose();
    p.grad = undefined;
  }
  return grads;
}

export function maxAbsDiff(a: readonly Float32Array[], b: readonly Float32Array[]): number {
  let worst = 0;
  a.forEach((x, i) => {
    for (let j = 0; j < x.length; j++) worst = Math.max(worst, Math.abs(x[j]! - b[i]![j]!));
  });
  return worst;
}

/**
 * The most bytes one forward and backward of `policyLoss` holds above the model's own (CPU reference,
 * counted allocations), on a fresh model of `shape` that `setUp` configures.
 */
export function countedBackwardPeak(
  shape: Qwen2Shape,
  setUp: (model: Qwen2Model) => void,
  seqLen: number,
  rows: number,
): number {
  const counter = countingBackend(createCpuBackend());
  const model = Qwen2Model.random(shape, 3, counter.backend);
  setUp(model);
  const base = counter.liveBytes();
  counter.resetPeak();
  scope(() => backward(policyLoss(model, seqLen, rows)));
  const peak = counter.peakBytes() - base;
  model.dispose();
  return peak;
}
