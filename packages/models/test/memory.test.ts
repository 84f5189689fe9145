import {
  AdamW,
  add,
  asyncScope,
  type Backend,
  backward,
  createCpuBackend,
  mul,
  scale,
  sum,
  tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG } from "../src/io/config.js";
import { generate } from "../src/model/generate.js";
import { estimateTrainingMemory, MemoryEstimateError } from "../src/model/memory.js";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import { countingBackend } from "./helpers/counting-backend.js";

const small: Qwen2Shape = {
  vocabSize: 256,
  hiddenSize: 64,
  intermediateSize: 128,
  numHiddenLayers: 4,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: true,
  initializerRange: 0.05,
};

/**
 * The peak bytes of one optimizer step as the PPO trainers run it: micro-batches of sequenceLogProbs
 * into a loss on log-probs and entropy, backward per micro-batch, AdamW step, gradients cleared. A first
 * step runs before, so that AdamW's moments exist as they do in a run.
 */
interface StepSettings {
  config: Qwen2Shape;
  recompute: boolean;
  microBatch: number;
  microBatches: number;
  seqLen: number;
  loraRank?: number;
  maxLogits?: number;
  /** f16 weights (toDtype) with loss scaling, counted on WebGPU, where a half takes 2 bytes. */
  dtype?: "f32" | "f16";
}

async function measuredStepPeak(settings: StepSettings): Promise<number> {
  const { config, recompute, microBatch, microBatches, seqLen, loraRank, maxLogits } = settings;
  const half = settings.dtype === "f16";
  const counter = countingBackend(
    half ? ((await webGpuBackend()) as Backend) : (createCpuBackend() as Backend),
  );
  const backend = counter.backend;
  const model = Qwen2Model.random(config, 1, backend).toDtype(settings.dtype ?? "f32");
  if (loraRank) model.attachLora({ rank: loraRank, alpha: 2 * loraRank });
  model.gradientCheckpointing = recompute;
  if (maxLogits !== undefined) model.maxLogits = maxLogits;
  const optimizer = new AdamW(model.parameters(), { lr: 1e-3, maxGradNorm: 1, lossScaling: half });
  const tokens = microBatch * seqLen;
  const step = async (): Promise<void> => {
    for (let m = 0; m < microBatches; m++) {
      await asyncScope(async () => {
        const ids = Int32Array.from({ length: tokens }, (_, i) => (i * 31 + m * 7) % config.vocabSize);
        const targets = Int32Array.from({ length: tokens }, (_, i) => (i * 17 + 3) % config.vocabSize);
        const { logProbs, entropy } = model.sequenceLogProbs({ ids, batch: microBatch, seqLen }, targets);
        const advantages = tensor(
          Float32Array.from({ length: tokens }, (_, i) => Math.sin(i)),
          [microBatch, seqLen],
          { backend },
        );
        const loss = add(sum(mul(logProbs, advantages)), scale(sum(entropy), 0.01));
        backward(optimizer.scaleLoss(scale(loss, 1 / microBatches)));
      });
    }
    const { gradNorm, clipScale } = optimizer.step();
    gradNorm.dispose();
    clipScale.dispose();
    optimizer.zeroGrad();
  };
  await step();
  counter.resetPeak();
  await step();
  const peak = counter.peakBytes();
  optimizer.dispose();
  model.dispose();
  return peak;
}

const cases: (StepSettings & { name: string })[] = [
  { name: "full fine-tuning", config: small, recompute: false, microBatch: 4, microBatches: 2, seqLen: 32 },
  { name: "with recomputation", config: small, recompute: true, microBatch: 4, microBatches: 2, seqLen: 32 },
  {
    name: "untied head, one micro-batch",
    config: { ...small, tieWordEmbeddings: false },
    recompute: false,
    microBatch: 2,
    microBatches: 1,
    seqLen: 48,
  },
  {
    name: "LoRA with recomputation",
    config: { ...small, numHiddenLayers: 6 },
    recompute: true,
    microBatch: 4,
    microBatches: 2,
    seqLen: 32,
    loraRank: 8,
  },
  {
    // A vocabulary 16x the hidden size, as Qwen2's is 170x: the head is the peak, and chunks of 16 tokens.
    name: "logits in chunks",
    config: { ...small, vocabSize: 1024 },
    recompute: true,
    microBatch: 4,
    microBatches: 2,
    seqLen: 32,
    maxLogits: 16 * 1024,
  },
  {
    // The head's gradient (vocabulary × hidden) outweighs a chunk's logits: one micro-batch, untied.
    name: "logits in chunks, a large head, one micro-batch",
    config: { ...small, vocabSize: 8192, tieWordEmbeddings: false },
    recompute: true,
    microBatch: 2,
    microBatches: 1,
    seqLen: 64,
    maxLogits: 16 * 8192,
  },
  {
    name: "logits in chunks, a large tied head, two micro-batches",
    config: { ...small, vocabSize: 8192 },
    recompute: true,
    microBatch: 2,
    microBatches: 2,
    seqLen: 64,
    maxLogits: 16 * 8192,
  },
  // f16 weights: f16 activations but for the attention's lse and the norms' rstd, f16 logits and gradients.
  {
    name: "f16 weights",
    config: { ...small, vocabSize: 1024 },
    recompute: false,
    microBatch: 4,
    microBatches: 2,
    seqLen: 64,
    dtype: "f16",
  },
  {
    name: "f16 weights with recomputation, LoRA",
    config: { ...small, vocabSize: 1024 },
    recompute: true,
    microBatch: 4,
    microBatches: 2,
    seqLen: 64,
    loraRank: 8,
    dtype: "f16",
  },
];

/** Peak bytes of `generate` on fresh weights, above the weights. */
async function measuredRolloutPeak(
  config: Qwen2Shape,
  batch: number,
  promptLength: number,
  newTokens: number,
  prefillTokens?: number,
  dtype: "f32" | "f16" = "f32",
) {
  // f16 is counted on WebGPU, where a half takes 2 bytes (the CPU backend holds it in an f32 word).
  const counter = countingBackend(
    dtype === "f16" ? ((await webGpuBackend()) as Backend) : (createCpuBackend() as Backend),
  );
  const model = Qwen2Model.random(config, 1, counter.backend).toDtype(dtype);
  const weights = counter.liveBytes();
  counter.resetPeak();
  const prompts = Array.from({ length: batch }, (_, b) =>
    Int32Array.from({ length: promptLength }, (_, i) => (i * 13 + b) % config.vocabSize),
  );
  await generate(model, prompts, { maxNewTokens: newTokens, temperature: 0, prefillTokens });
  const peak = counter.peakBytes() - weights;
  model.dispose();
  return peak;
}

const GiB = 2 ** 30;

describe("estimateTrainingMemory", () => {
  for (const c of cases) {
    it(`predicts the measured peak of a training step within 5%: ${c.name}`, async () => {
      const measured = await measuredStepPeak(c);
      const estimate = estimateTrainingMemory(c.config, {
        batch: c.microBatch * c.microBatches,
        microBatch: c.microBatch,
        seqLen: c.seqLen,
        recompute: c.recompute,
        lora: c.loraRank ? { rank: c.loraRank } : undefined,
        maxLogits: c.maxLogits,
        weights: c.dtype,
      });
      expect(Math.abs(estimate.trainingPeak - measured) / measured).toBeLessThan(0.05);
    });
  }

  it("predicts the measured peak of a rollout (KV cache and prefill) within 1%, whole or in groups", async () => {
    const [batch, promptLength, newTokens] = [6, 40, 8];
    const peaks: number[] = [];
    // One pass; groups of 2 rows (80 tokens a pass); 1 row a pass.
    for (const prefillTokens of [undefined, 80, 40]) {
      const measured = await measuredRolloutPeak(small, batch, promptLength, newTokens, prefillTokens);
      const { bytes } = estimateTrainingMemory(small, {
        microBatch: 1,
        seqLen: 1,
        rollout: { batch, promptLength, newTokens, prefillTokens },
      });
      const estimated = bytes.kvCache + bytes.rolloutForward + bytes.packedWeights;
      expect(Math.abs(estimated - measured) / measured).toBeLessThan(0.01);
      peaks.push(measured);
    }
    // Groups of rows lower the peak (measured: 1.64, 1.11 and 0.90 MB).
    expect(peaks[1]!).toBeLessThan(0.8 * peaks[0]!);
    expect(peaks[2]!).toBeLessThan(peaks[1]!);
  });

  it("counts an f16 model's generation in halves (its cache, its stacked weights), within 1% of the measured peak", async () => {
    const [batch, promptLength, newTokens] = [6, 40, 8];
    const measured = await measuredRolloutPeak(small, batch, promptLength, newTokens, undefined, "f16");
    const settings = { microBatch: 1, seqLen: 1, rollout: { batch, promptLength, newTokens } };
    const half = estimateTrainingMemory(small, { ...settings, weights: "f16" }).bytes;
    const full = estimateTrainingMemory(small, settings).bytes;
    const estimated = half.kvCache + half.rolloutForward + half.packedWeights;
    expect(Math.abs(estimated - measured) / measured).toBeLessThan(0.01);
    // No f32 copy of the weights: every rollout term is half the f32 model's.
    for (const term of ["kvCache", "rolloutForward", "packedWeights"] as const)
      expect(half[term], term).toBe(full[term] / 2);
  });

  it("counts Qwen2.5-0.5B's parameters and its f32 training state", () => {
    const e = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, { microBatch: 1, seqLen: 1 });
    expect(e.parameters).toBe(494_032_768);
    // Weights, gradients and AdamW's two moments in f32: 16 bytes a parameter, the "~8 GB".
    expect(e.bytes.weights + e.bytes.gradients + e.bytes.optimizerState).toBe(16 * 494_032_768);
    expect(e.bytes.masterWeights).toBe(0);
  });

  it("shows a configuration of Qwen2.5-0.5B that trains in 24 GiB, and one that does not", () => {
    const plan = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, {
      batch: 32,
      microBatch: 2,
      seqLen: 1024,
      recompute: true,
      rollout: { batch: 64, promptLength: 512, newTokens: 512 },
    });
    expect(plan.peak).toBeLessThan(22 * GiB); // leaves room for the driver and the kernels' scratch
    // In chunks of 441 tokens the head holds under 1 GiB of logits; whole, 2,048 × 151,936 values and two
    // gradients of them, 3.5 GiB.
    expect(plan.bytes.logits).toBeLessThan(GiB);
    expect(plan.trainingPeakPhase).toBe("head backward");
    const wholeLogits = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, {
      batch: 32,
      microBatch: 2,
      seqLen: 1024,
      recompute: true,
      maxLogits: Number.POSITIVE_INFINITY,
    });
    expect(wholeLogits.trainingPeakPhase).toBe("head backward");
    expect(wholeLogits.trainingPeak - plan.trainingPeak).toBeGreaterThan(2 * GiB);
    // Recomputation keeps a layer's input (hidden values per token) instead of its ~20k values per token.
    expect(plan.bytes.activationsPerLayer).toBe(2 * 1024 * 896 * 4);
    const keepEverything = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, {
      batch: 32,
      microBatch: 16,
      seqLen: 1024,
    });
    expect(keepEverything.trainingPeak).toBeGreaterThan(24 * GiB);
    expect(keepEverything.bytes.activations).toBeGreaterThan(10 * plan.bytes.activations);
  });

  it("scales with precision: f16 weights add an f32 master copy and halve the layers' f16 activations and logits", () => {
    const options = { batch: 32, microBatch: 2, seqLen: 1024, recompute: true };
    const f32 = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, options);
    const f16 = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, { ...options, weights: "f16" });
    expect(f16.bytes.weights).toBe(f32.bytes.weights / 2);
    expect(f16.bytes.masterWeights).toBe(f32.bytes.weights);
    expect(f16.bytes.logits).toBe(f32.bytes.logits / 2);
    expect(f16.bytes.optimizerState).toBe(f32.bytes.optimizerState);
    // The f32 lse and rstd keep a recomputed layer above half of its f32 size.
    expect(f16.bytes.recomputedLayer).toBeGreaterThan(f32.bytes.recomputedLayer / 2);
    expect(f16.bytes.recomputedLayer).toBeLessThan(f32.bytes.recomputedLayer);
    expect(f16.trainingPeak).toBeLessThan(f32.trainingPeak);
  });

  it("names a bad setting", () => {
    const c = QWEN2_5_0_5B_INSTRUCT_CONFIG;
    expect(() => estimateTrainingMemory(c, { microBatch: 0, seqLen: 8 })).toThrow(
      /microBatch must be a positive integer, got 0/,
    );
    expect(() => estimateTrainingMemory(c, { batch: 2, microBatch: 4, seqLen: 8 })).toThrow(
      MemoryEstimateError,
    );
    expect(() =>
      estimateTrainingMemory(c, {
        microBatch: 1,
        seqLen: 8,
        rollout: { batch: 1, promptLength: 4, newTokens: 0.5 },
      }),
    ).toThrow(/rollout.newTokens/);
  });
});
