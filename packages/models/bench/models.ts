/**
 * `pnpm bench:models`: forward+backward tokens/s and batched decode tokens/s of a Qwen2 model on this
 * machine's WebGPU adapter, beside the same model in PyTorch on the CPU when Python and torch are present.
 *
 *   pnpm --filter @ragen/models bench [--size tiny|small|qwen0.5b] [--batch 8] [--seq 128] [--steps 5]
 *     [--recompute]
 *
 * Also prints the training step's peak of device memory (the buffer pool's) beside estimateTrainingMemory's
 * figure for it, and the memory plan for Qwen2.5-0.5B (bench/memory-plan.ts).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  asyncScope,
  backward,
  crossEntropy,
  mean,
  reshape,
  tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { generate } from "../src/model/generate.js";
import { estimateTrainingMemory } from "../src/model/memory.js";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import { planTable } from "./memory-plan.js";

const SIZES: Record<string, Qwen2Shape> = {
  tiny: {
    vocabSize: 1024,
    hiddenSize: 128,
    intermediateSize: 344,
    numHiddenLayers: 4,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
  },
  small: {
    vocabSize: 2048,
    hiddenSize: 256,
    intermediateSize: 688,
    numHiddenLayers: 6,
    numAttentionHeads: 8,
    numKeyValueHeads: 2,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
  },
  "qwen0.5b": {
    vocabSize: 151936,
    hiddenSize: 896,
    intermediateSize: 4864,
    numHiddenLayers: 24,
    numAttentionHeads: 14,
    numKeyValueHeads: 2,
    rmsNormEps: 1e-6,
    ropeTheta: 1000000,
    tieWordEmbeddings: true,
  },
};

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "tiny" },
    batch: { type: "string", default: "8" },
    seq: { type: "string", default: "128" },
    steps: { type: "string", default: "5" },
    "new-tokens": { type: "string", default: "32" },
    recompute: { type: "boolean", default: false },
  },
});
const shape = SIZES[values.size!];
if (!shape) throw new Error(`--size must be one of ${Object.keys(SIZES).join(", ")}`);
const batch = Number(values.batch);
const seq = Number(values.seq);
const steps = Number(values.steps);
const newTokens = Number(values["new-tokens"]);

const backend = await webGpuBackend();
const model = Qwen2Model.random(shape, 0, backend);
model.gradientCheckpointing = values.recompute!;
const ids = Int32Array.from({ length: batch * seq }, (_, i) => (i * 7919) % shape.vocabSize);
const targets = Int32Array.from({ length: batch * seq }, (_, i) => (i * 104729 + 1) % shape.vocabSize);

async function trainStep(): Promise<void> {
  await asyncScope(async () => {
    const logits = model.logits({ ids, batch, seqLen: seq });
    const t = tensor(targets, [batch * seq], { backend, dtype: "i32" });
    backward(mean(crossEntropy(reshape(logits, [batch * seq, shape!.vocabSize]), t)));
    for (const p of model.parameters()) {
      p.grad?.dispose();
      p.grad = undefined;
    }
    await backend.sync();
  });
}

await trainStep(); // compile
const dispatchesBefore =
  backend.name === "webgpu"
    ? (backend as { ctx: { stats: { dispatches: number } } }).ctx.stats.dispatches
    : 0;
const trainStart = performance.now();
for (let i = 0; i < steps; i++) await trainStep();
const trainSeconds = (performance.now() - trainStart) / 1000;
const dispatchesPerStep =
  ((backend as { ctx: { stats: { dispatches: number } } }).ctx.stats.dispatches - dispatchesBefore) / steps;
const trainTokensPerSecond = (steps * batch * seq) / trainSeconds;
// Nothing but training steps has run, so the pool's peak is a step's (pooled size classes: up to 25% slack).
const measuredPeak = backend.ctx.pool.stats.peakInUseBytes;
// The step here has no optimizer and one consumer of the logits (cross-entropy).
const estimate = estimateTrainingMemory(shape, {
  microBatch: batch,
  seqLen: seq,
  recompute: values.recompute,
  entropy: false,
});
const estimatedPeak = estimate.trainingPeak - estimate.bytes.optimizerState;

const prompts = Array.from({ length: batch }, (_, b) => ids.slice(b * seq, b * seq + Math.min(seq, 32)));
await generate(model, prompts, { maxNewTokens: 2, temperature: 0 });
const decodeStart = performance.now();
await generate(model, prompts, { maxNewTokens: newTokens, temperature: 0 });
const decodeTokensPerSecond = (batch * newTokens) / ((performance.now() - decodeStart) / 1000);

const rows: [string, string, string][] = [
  ["", "this package (WebGPU)", "PyTorch (CPU)"],
  ["forward+backward tokens/s", trainTokensPerSecond.toFixed(1), "-"],
  ["batched decode tokens/s", decodeTokensPerSecond.toFixed(1), "-"],
];

const script = join(dirname(fileURLToPath(import.meta.url)), "torch_models.py");
const python = ["/usr/bin/python3", "python3"].find((p) => p === "python3" || existsSync(p))!;
const torch = spawnSync(python, [script, JSON.stringify({ shape, batch, seq, steps, newTokens })], {
  encoding: "utf8",
});
if (torch.status === 0) {
  const result = JSON.parse(torch.stdout.trim().split("\n").at(-1)!) as {
    train: number;
    decode: number;
    threads: number;
  };
  rows[1]![2] = result.train.toFixed(1);
  rows[2]![2] = result.decode.toFixed(1);
  rows[0]![2] = `PyTorch (CPU, ${result.threads} threads)`;
} else {
  console.error(
    `PyTorch column skipped: ${(torch.stderr || torch.error?.message || "").trim().split("\n").at(-1)}`,
  );
}
console.log(
  `adapter: ${JSON.stringify((backend as { ctx: { info: { adapter: unknown } } }).ctx.info.adapter)}`,
);
console.log(
  `model ${values.size} (hidden ${shape.hiddenSize}, ${shape.numHiddenLayers} layers, vocab ${shape.vocabSize}), batch ${batch} x ${seq} tokens`,
);
console.log(`dispatches per training step: ${dispatchesPerStep}`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
console.log(
  `training step peak memory${values.recompute ? " (recompute)" : ""}: ${mib(measuredPeak)} measured (buffer pool), ${mib(estimatedPeak)} estimated (${estimate.trainingPeakPhase})`,
);
for (const [a, b, c] of rows) console.log(`${a.padEnd(28)}${b.padStart(24)}${c.padStart(28)}`);
console.log("\nQwen2.5-0.5B training memory, estimated (GiB; rollouts of 64 × 512+512 tokens):\n");
console.log(planTable());
model.dispose();
