/**
 * The model measurements behind `pnpm bench:models` and the portable benchmark: forward+backward tokens/s of
 * a language-model loss, and batched greedy decode tokens/s with a KV cache, of a randomly initialised
 * Qwen2-shaped model on a given backend.
 */
import {
  asyncScope,
  type Backend,
  backward,
  crossEntropy,
  mean,
  reshape,
  tensor,
} from "@ragen/tensor-webgpu";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG } from "../src/io/config.js";
import { generate } from "../src/model/generate.js";
import type { Qwen2Model, Qwen2Shape } from "../src/model/qwen2.js";

/** Qwen2.5-0.5B's shape with some fields replaced (the smaller benchmark models keep its constants). */
const qwenShape = (overrides: Partial<Qwen2Shape>): Qwen2Shape => ({
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  ...overrides,
});

/** Model sizes the benchmarks know, by name. */
export const MODEL_SIZES: Record<string, Qwen2Shape> = {
  tiny: qwenShape({
    vocabSize: 1024,
    hiddenSize: 128,
    intermediateSize: 344,
    numHiddenLayers: 4,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    ropeTheta: 10000,
  }),
  small: qwenShape({
    vocabSize: 2048,
    hiddenSize: 256,
    intermediateSize: 688,
    numHiddenLayers: 6,
    numAttentionHeads: 8,
    numKeyValueHeads: 2,
    ropeTheta: 10000,
  }),
  "qwen0.5b": qwenShape({}),
};

/** The deterministic token ids and targets both this engine and the PyTorch peer use. */
export function benchTokens(shape: Qwen2Shape, batch: number, seq: number) {
  return {
    ids: Int32Array.from({ length: batch * seq }, (_, i) => (i * 7919) % shape.vocabSize),
    targets: Int32Array.from({ length: batch * seq }, (_, i) => (i * 104729 + 1) % shape.vocabSize),
  };
}

/** `batch` prompts of `promptLength` of the benchmark's deterministic tokens, as decoding starts from. */
export function benchPrompts(shape: Qwen2Shape, batch: number, promptLength: number): Int32Array[] {
  const { ids } = benchTokens(shape, batch, promptLength);
  return Array.from({ length: batch }, (_, b) => ids.slice(b * promptLength, (b + 1) * promptLength));
}

export interface TrainingMeasurement {
  tokensPerSecond: number;
  secondsPerStep: number[];
  dispatchesPerStep: number;
  /** Bind groups created per step (each costs the CPU; a repeated step should reuse the last one's). */
  bindGroupsPerStep: number;
  /** Pooled buffers destroyed per step (released beyond the pool's budget: their bind groups go too). */
  buffersDestroyedPerStep: number;
  /** Of each step, the seconds spent waiting for the GPU (the rest is the CPU recording the work). */
  waitSecondsPerStep: number;
}

interface Counters {
  dispatches: number;
  waitMs: number;
  readbacks: number;
  bindGroups: number;
  buffersDestroyed: number;
}

/** The WebGPU context's counters (zeros on the CPU backend). */
const counters = (backend: Backend): Counters => {
  const ctx = (
    backend as { ctx?: { stats: Omit<Counters, "buffersDestroyed">; pool: { stats: { destroyed: number } } } }
  ).ctx;
  return {
    dispatches: ctx?.stats.dispatches ?? 0,
    waitMs: ctx?.stats.waitMs ?? 0,
    readbacks: ctx?.stats.readbacks ?? 0,
    bindGroups: ctx?.stats.bindGroups ?? 0,
    buffersDestroyed: ctx?.pool.stats.destroyed ?? 0,
  };
};

/** Forward + backward of mean cross-entropy over batch x seq tokens; `steps` timed after one warm-up. */
export async function measureTraining(
  model: Qwen2Model,
  backend: Backend,
  options: { batch: number; seq: number; steps: number },
): Promise<TrainingMeasurement> {
  const { batch, seq } = options;
  const shape = model.config;
  const { ids, targets } = benchTokens(shape, batch, seq);
  const step = async () => {
    await asyncScope(async () => {
      const logits = model.logits({ ids, batch, seqLen: seq });
      const t = tensor(targets, [batch * seq], { backend, dtype: "i32" });
      backward(mean(crossEntropy(reshape(logits, [batch * seq, shape.vocabSize]), t)));
      for (const p of model.parameters()) {
        p.grad?.dispose();
        p.grad = undefined;
      }
      await backend.sync();
    });
  };
  await step(); // compile
  const before = counters(backend);
  const secondsPerStep: number[] = [];
  for (let i = 0; i < options.steps; i++) {
    const start = performance.now();
    await step();
    secondsPerStep.push((performance.now() - start) / 1000);
  }
  const total = secondsPerStep.reduce((a, b) => a + b, 0);
  return {
    tokensPerSecond: (options.steps * batch * seq) / total,
    secondsPerStep,
    dispatchesPerStep: (counters(backend).dispatches - before.dispatches) / options.steps,
    bindGroupsPerStep: (counters(backend).bindGroups - before.bindGroups) / options.steps,
    buffersDestroyedPerStep: (counters(backend).buffersDestroyed - before.buffersDestroyed) / options.steps,
    waitSecondsPerStep: (counters(backend).waitMs - before.waitMs) / 1000 / options.steps,
  };
}

export interface DecodeMeasurement {
  tokensPerSecond: number;
  seconds: number;
  /** Seconds waiting for the GPU (its work and the copies back); the rest is the CPU's. */
  waitSeconds: number;
  dispatchesPerStep: number;
  readbacksPerStep: number;
}

/**
 * Decoding of `newTokens` for `batch` prompts of `promptLength` tokens (after one short warm-up), greedy or
 * sampled at `temperature`.
 */
export async function measureDecode(
  model: Qwen2Model,
  options: {
    batch: number;
    promptLength: number;
    newTokens: number;
    temperature?: number;
    /** generate's packProjections (default true). */
    packProjections?: boolean;
  },
): Promise<DecodeMeasurement> {
  const prompts = benchPrompts(model.config, options.batch, options.promptLength);
  const temperature = options.temperature ?? 0;
  const packProjections = options.packProjections ?? true;
  await generate(model, prompts, { maxNewTokens: 2, temperature, packProjections });
  const backend = model.parameters()[0]!.backend;
  const before = counters(backend);
  const start = performance.now();
  await generate(model, prompts, { maxNewTokens: options.newTokens, temperature, packProjections });
  const seconds = (performance.now() - start) / 1000;
  const after = counters(backend);
  return {
    tokensPerSecond: (options.batch * options.newTokens) / seconds,
    seconds,
    waitSeconds: (after.waitMs - before.waitMs) / 1000,
    dispatchesPerStep: (after.dispatches - before.dispatches) / options.newTokens,
    readbacksPerStep: (after.readbacks - before.readbacks) / options.newTokens,
  };
}
