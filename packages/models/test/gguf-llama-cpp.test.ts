/**
 * This engine's next-token log-probs against an independent engine's: the embedded model (the one the
 * trainer starts from) exported to GGUF and run by llama.cpp (node-llama-cpp's prebuilt CPU binary) on
 * the same token ids, f32 weights and an f32 KV cache on both sides.
 *
 * Measured on the embedded model and the 81 tokens below (x86-64, lavapipe): max |Δ log π| = 1.7e-5 on
 * the webgpu backend and 1.8e-5 on the cpu one, importance weights exp(Δ) within [0.999982, 1.000005],
 * max |Δp| over the whole vocabulary 1.9e-5. With llama.cpp's default f16 KV cache the log-probs differ
 * by up to 5e-3, and with q/k rows permuted llama-style (a wrong conversion) by 4.8.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Backend, createCpuBackend, noGrad, webGpuBackend } from "@ragen/tensor-webgpu";
import {
  type ControlledEvaluateInputItem,
  getLlama,
  type Llama,
  LlamaLogLevel,
  type Token,
} from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Qwen2Config } from "../src/io/config.js";
import type { ModelFolder } from "../src/io/folder.js";
import type { GgufTensorToWrite } from "../src/io/gguf.js";
import { qwen2GgufMetadata, qwen2GgufTensors } from "../src/io/gguf-qwen2.js";
import { writeGgufFile } from "../src/io/gguf-writer.js";
import { loadQwen2 } from "../src/model/checkpoint.js";
import { exportQwen2Gguf } from "../src/model/gguf-export.js";
import { Qwen2Model } from "../src/model/qwen2.js";

const EMBEDDED_MODEL = join(import.meta.dirname, "../../trainer/embedded-model");

// The chat template's rendering of a FrozenLake-style prompt, then a response and <|im_end|>:
//   <|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nYou are on a frozen lake.
//   Start: (0, 0) Goal: (3, 3). Reach the goal without falling into a hole. Actions: Up, Down, Left,
//   Right.<|im_end|>\n<|im_start|>assistant\n<think>The goal is down and right.</think><answer>Right</answer><|im_end|>
// Ids, never text, so that both engines see exactly the same tokens whatever their tokenisers would do.
const PROMPT = [
  867, 82, 88, 82, 83, 68, 76, 198, 277, 530, 257, 470, 471, 13, 868, 198, 867, 84, 82, 261, 198, 277, 530,
  548, 257, 697, 665, 13, 374, 332, 83, 25, 507, 220, 415, 25, 500, 13, 220, 715, 545, 284, 316, 795, 672,
  581, 257, 559, 13, 355, 676, 25, 564, 11, 582, 11, 538, 11, 535, 13, 868, 198, 867, 64, 82, 466, 468, 198,
];
const RESPONSE = [869, 454, 316, 315, 440, 435, 436, 13, 870, 871, 492, 872, 868];
const IDS = [...PROMPT, ...RESPONSE];

// About 5x the measured differences; llama.cpp's f16 KV cache (5e-3) or any layout error is far above.
const LOG_PROB_TOLERANCE = 1e-4;
const PROBABILITY_TOLERANCE = 1e-4;
/** The clip of PPO-style truncated importance weights min(π_ours / π_llama, 2). */
const WEIGHT_CLIP = 2;

const scratch = mkdtempSync(join(tmpdir(), "gguf-llama-cpp-"));
let gpu: Backend;
let llama: Llama;

beforeAll(async () => {
  gpu = await webGpuBackend();
  // The prebuilt CPU binary only: never a download, a source build or a GPU.
  llama = await getLlama({
    gpu: false,
    build: "never",
    skipDownload: true,
    progressLogs: false,
    maxThreads: 2,
    logLevel: LlamaLogLevel.error,
  });
});

afterAll(async () => {
  await llama?.dispose();
  rmSync(scratch, { recursive: true, force: true });
});

interface NextTokenDistributions {
  /** log π(ids[i+1] | ids[0..i]) for i < length - 1. */
  logProbs: Float64Array;
  /** [length - 1, vocab] next-token probabilities. */
  probabilities: Float64Array;
}

/** This engine's: the log-probs as the trainer computes them (sequenceLogProbs) and the softmax of the logits. */
async function ourDistributions(model: Qwen2Model, ids: readonly number[]): Promise<NextTokenDistributions> {
  const vocab = model.config.vocabSize;
  const batch = { ids: Int32Array.from(ids), batch: 1, seqLen: ids.length };
  const targets = new Int32Array(ids.length);
  targets.set(ids.slice(1));
  const [logProbs, logits] = await noGrad(async () => [
    await model.sequenceLogProbs(batch, targets).logProbs.floats(),
    await model.logits(batch).floats(),
  ]);
  const positions = ids.length - 1;
  const probabilities = new Float64Array(positions * vocab);
  for (let i = 0; i < positions; i++) {
    const row = logits.subarray(i * vocab, (i + 1) * vocab);
    const max = row.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
    let sum = 0;
    for (let t = 0; t < vocab; t++) sum += Math.exp(row[t]! - max);
    for (let t = 0; t < vocab; t++) probabilities[i * vocab + t] = Math.exp(row[t]! - max) / sum;
  }
  return { logProbs: Float64Array.from(logProbs.subarray(0, positions)), probabilities };
}

/**
 * llama.cpp's: with no sampling options node-llama-cpp samples greedily, which leaves the logits as they
 * are, and its probabilities are the softmax over the whole vocabulary.
 */
async function llamaDistributions(
  modelPath: string,
  vocab: number,
  ids: readonly number[],
): Promise<NextTokenDistributions> {
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  try {
    const context = await model.createContext({
      contextSize: 256,
      batchSize: 256,
      threads: 2,
      flashAttention: false,
      // llama.cpp keeps keys and values in f16 by default; f32 makes the comparison f32 throughout.
      experimentalKvCacheKeyType: "F32",
      experimentalKvCacheValueType: "F32",
    });
    try {
      const results = await context.getSequence().controlledEvaluate(
        ids.map((id, i): ControlledEvaluateInputItem => {
          const token = id as Token;
          return i < ids.length - 1 ? [token, { generateNext: { probabilities: true } }] : token;
        }),
      );
      const positions = ids.length - 1;
      const logProbs = new Float64Array(positions);
      const probabilities = new Float64Array(positions * vocab);
      for (let i = 0; i < positions; i++) {
        const next = results[i]?.next.probabilities;
        if (next === undefined || next.size !== vocab) {
          throw new Error(
            `llama.cpp gave ${next?.size ?? "no"} probabilities at position ${i}, not ${vocab}`,
          );
        }
        for (const [token, p] of next) probabilities[i * vocab + (token as number)] = p;
        logProbs[i] = Math.log(next.get(ids[i + 1]! as Token)!);
      }
      return { logProbs, probabilities };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

function maxAbsDifference(a: Float64Array, b: Float64Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

function truncatedWeights(ours: Float64Array, theirs: Float64Array): number[] {
  return Array.from(ours, (logProb, i) => Math.min(Math.exp(logProb - theirs[i]!), WEIGHT_CLIP));
}

/** q/k rows reordered as llama.cpp's converter does for llama-family models (interleaved RoPE pairs). */
function permuteLlamaStyle(data: Float32Array, rows: number, headDim: number): Float32Array {
  const columns = data.length / rows;
  const out = new Float32Array(data.length);
  for (let row = 0; row < rows; row++) {
    const head = Math.floor(row / headDim);
    const within = row % headDim;
    const source = head * headDim + (within % 2) * (headDim / 2) + Math.floor(within / 2);
    out.set(data.subarray(source * columns, (source + 1) * columns), row * columns);
  }
  return out;
}

describe("next-token log-probs against llama.cpp on the embedded model", () => {
  let folder: ModelFolder;
  let config: Qwen2Config;
  let llamaResult: NextTokenDistributions;

  beforeAll(async () => {
    const loaded = await loadQwen2(EMBEDDED_MODEL, gpu);
    folder = loaded.folder;
    config = folder.config;
    const path = join(scratch, "embedded.gguf");
    await exportQwen2Gguf(loaded.model, config, path, {
      tokenizer: folder.tokenizer,
      tokenizerConfig: folder.tokenizerConfig,
      name: "ragen-embedded",
    });
    loaded.model.dispose();
    expect(Math.max(...IDS)).toBeLessThan(config.vocabSize);
    llamaResult = await llamaDistributions(path, config.vocabSize, IDS);
  });

  for (const backendName of ["webgpu", "cpu"] as const) {
    it(`agree on the ${backendName} backend: |Δ log π| < ${LOG_PROB_TOLERANCE}, weights within 1 ± ${LOG_PROB_TOLERANCE}`, async () => {
      const backend = backendName === "webgpu" ? gpu : createCpuBackend();
      const { model } = await loadQwen2(EMBEDDED_MODEL, backend);
      const ours = await ourDistributions(model, IDS);
      model.dispose();

      expect(maxAbsDifference(ours.logProbs, llamaResult.logProbs)).toBeLessThan(LOG_PROB_TOLERANCE);
      const weights = truncatedWeights(ours.logProbs, llamaResult.logProbs);
      expect(Math.min(...weights)).toBeGreaterThan(1 - LOG_PROB_TOLERANCE);
      expect(Math.max(...weights)).toBeLessThan(1 + LOG_PROB_TOLERANCE);
      // The response's tokens are unlikely ones; the whole distribution covers the likely ones too.
      expect(maxAbsDifference(ours.probabilities, llamaResult.probabilities)).toBeLessThan(
        PROBABILITY_TOLERANCE,
      );
    });
  }

  it("agree on a random model with an untied output head", async () => {
    // Wider than the default initialisation so the distributions are far from uniform.
    const untied = { ...config, numHiddenLayers: 2, tieWordEmbeddings: false, initializerRange: 0.1 };
    const model = Qwen2Model.random(untied, 11, gpu);
    const path = join(scratch, "untied.gguf");
    await exportQwen2Gguf(model, untied, path, { tokenizer: folder.tokenizer });
    const ours = await ourDistributions(model, IDS);
    model.dispose();
    const theirs = await llamaDistributions(path, untied.vocabSize, IDS);
    expect(maxAbsDifference(ours.logProbs, theirs.logProbs)).toBeLessThan(LOG_PROB_TOLERANCE);
    expect(maxAbsDifference(ours.probabilities, theirs.probabilities)).toBeLessThan(PROBABILITY_TOLERANCE);
  });

  it("disagree grossly when q/k are permuted llama-style, so the check can fail", async () => {
    const { model } = await loadQwen2(EMBEDDED_MODEL, gpu);
    const ours = await ourDistributions(model, IDS);
    const tensors = new Map<string, GgufTensorToWrite>();
    for (const [name, values] of await model.stateDict()) {
      const shape = model.param(name).shape;
      const wrongLayout = /\.(q_proj|k_proj)\.(weight|bias)$/.test(name);
      tensors.set(name, {
        shape,
        data: wrongLayout ? permuteLlamaStyle(values, shape[0]!, config.headDim) : values,
      });
    }
    model.dispose();
    const path = join(scratch, "permuted-qk.gguf");
    const metadata = qwen2GgufMetadata(config, {
      tokenizer: folder.tokenizer,
      tokenizerConfig: folder.tokenizerConfig,
    });
    await writeGgufFile(path, metadata, qwen2GgufTensors(tensors));
    const theirs = await llamaDistributions(path, config.vocabSize, IDS);

    expect(maxAbsDifference(ours.logProbs, theirs.logProbs)).toBeGreaterThan(1);
    const weights = truncatedWeights(ours.logProbs, theirs.logProbs);
    expect(Math.min(...weights)).toBeLessThan(0.5);
    expect(Math.max(...weights)).toBe(WEIGHT_CLIP);
  });
});
