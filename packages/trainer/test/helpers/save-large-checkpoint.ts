/**
 * Run in a child process by checkpoint-memory.test.ts: builds an actor, a critic and both optimisers'
 * moments on the device, then saves a checkpoint and prints how far the process's resident memory rose
 * above where it stood when the save began (the kernel's high-water mark, reset just before the save).
 */
import { readFileSync, writeFileSync } from "node:fs";
import {
  QWEN2_5_0_5B_INSTRUCT_CONFIG,
  type Qwen2Config,
  Qwen2Model,
  Qwen2ValueModel,
  qwen2ParameterShapes,
} from "@ragen/models";
import { AdamW, webGpuBackend } from "@ragen/tensor-webgpu";
import { saveCheckpoint } from "../../src/node/checkpoint-files.js";

const outDir = process.argv[2];
if (!outDir) throw new Error("usage: save-large-checkpoint <outDir>");

// ~18M parameters (72 MB in f32) in tensors of at most 3 MB: a checkpoint many times the largest tensor.
const config: Qwen2Config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  vocabSize: 1024,
  hiddenSize: 512,
  intermediateSize: 1536,
  numHiddenLayers: 6,
  numAttentionHeads: 8,
  numKeyValueHeads: 2,
  headDim: 64,
  maxPositionEmbeddings: 512,
  bosTokenId: 0,
  eosTokenId: 1,
  torchDtype: "float32",
};

/** Resident set size and its high-water mark, in bytes (Linux). */
function residentBytes(): { now: number; peak: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024;
  return { now: kib("VmRSS"), peak: kib("VmHWM") };
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// On a software adapter (lavapipe in CI) device buffers are host memory, as in the run that ran out of it.
const backend = await webGpuBackend();
// Cheap, distinct values: random initialisation would only slow the test down.
const weights = (extra: [string, number[]][] = []) =>
  new Map(
    [...qwen2ParameterShapes(config), ...extra].map(([name, shape], i) => [
      name,
      new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(i / 100),
    ]),
  );
const actor = Qwen2Model.fromWeights(config, weights(), backend);
const critic = Qwen2ValueModel.fromWeights(
  config,
  weights([
    ["score.weight", [1, config.hiddenSize]],
    ["score.bias", [1]],
  ]),
  backend,
);
const optimizers = {
  actor: new AdamW(actor.parameters(), { lr: 1e-5 }),
  critic: new AdamW(critic.parameters(), { lr: 1e-5 }),
};
for (const optimizer of Object.values(optimizers)) {
  optimizer.loadStateDict({
    steps: 1,
    moments: optimizer.params.map((p) => ({
      m: new Float32Array(p.size).fill(0.5),
      v: new Float32Array(p.size).fill(0.25),
    })),
  });
}
// Every host copy made while building is garbage now: the save starts from the device buffers alone.
await backend.sync();
collectGarbage();
await new Promise((resolve) => setTimeout(resolve, 50));
collectGarbage();

// Writing 5 to clear_refs resets the high-water mark to the current resident size.
writeFileSync("/proc/self/clear_refs", "5");
const before = residentBytes().now;
const started = performance.now();
await saveCheckpoint(
  outDir,
  {
    actor,
    actorConfig: config,
    tokenizerFiles: { tokenizer: "{}", tokenizerConfig: undefined },
    critic,
    optimizers,
  },
  { step: 1, trainResets: 1, model: "large" },
);
const seconds = (performance.now() - started) / 1000;
const parameterBytes = actor.parameters().reduce((sum, p) => sum + p.size * 4, 0);
process.stdout.write(
  `${JSON.stringify({ residentBefore: before, residentPeak: residentBytes().peak, parameterBytes, seconds })}\n`,
);
process.exit(0);
