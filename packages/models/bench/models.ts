/**
 * `pnpm bench:models`: forward+backward tokens/s and batched decode tokens/s of a Qwen2 model on this
 * machine's WebGPU adapter, beside the same model in PyTorch when python3 has torch.
 *
 *   pnpm --filter @ragen/models bench [--size tiny|small|qwen0.5b] [--batch 8] [--seq 128] [--steps 5]
 *     [--new-tokens 32] [--repeats 3] [--recompute]
 *
 * Fair by construction: PyTorch runs on the CPU with 1 thread and with every core (two OpenMP threads on
 * two shared cores can collapse), and the better is kept; the two sides alternate over `--repeats` rounds
 * and the table gives each side's median and range. Also prints the training step's peak of device memory
 * (the buffer pool's) beside estimateTrainingMemory's figure, and the memory plan for Qwen2.5-0.5B.
 */
import { spawnSync } from "node:child_process";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { estimateTrainingMemory } from "../src/model/memory.js";
import { Qwen2Model } from "../src/model/qwen2.js";
import { planTable } from "./memory-plan.js";
import { MODEL_SIZES, measureDecode, measureTraining } from "./model-bench.js";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "tiny" },
    batch: { type: "string", default: "8" },
    seq: { type: "string", default: "128" },
    steps: { type: "string", default: "5" },
    "new-tokens": { type: "string", default: "32" },
    repeats: { type: "string", default: "3" },
    recompute: { type: "boolean", default: false },
  },
});
const shape = MODEL_SIZES[values.size!];
if (!shape) throw new Error(`--size must be one of ${Object.keys(MODEL_SIZES).join(", ")}`);
const batch = Number(values.batch);
const seq = Number(values.seq);
const steps = Number(values.steps);
const newTokens = Number(values["new-tokens"]);
const repeats = Number(values.repeats);
const promptLength = Math.min(seq, 32);

const backend = await webGpuBackend();
const model = Qwen2Model.random(shape, 0, backend);
model.gradientCheckpointing = values.recompute!;

const script = join(dirname(fileURLToPath(import.meta.url)), "torch_models.py");
// The first Python with torch: $PYTHON, the one on PATH, then the system's (Debian's python3-torch).
const python = [process.env.PYTHON, "python3", "/usr/bin/python3"].find(
  (p) => p && spawnSync(p, ["-c", "import torch"]).status === 0,
);
const hasTorch = python !== undefined;
const threadChoices = [...new Set([1, cpus().length])];

const engine = { train: [] as number[], decode: [] as number[] };
const torch = new Map<number, { train: number[]; decode: number[] }>();
let dispatchesPerStep = 0;
for (let round = 0; round < repeats; round++) {
  // Alternate which side goes first, so drift in the machine's load does not favour one.
  const sides = round % 2 === 0 ? ["engine", "torch"] : ["torch", "engine"];
  for (const side of sides) {
    if (side === "engine") {
      const train = await measureTraining(model, backend, { batch, seq, steps });
      dispatchesPerStep = train.dispatchesPerStep;
      engine.train.push(train.tokensPerSecond);
      engine.decode.push((await measureDecode(model, { batch, promptLength, newTokens })).tokensPerSecond);
    } else if (hasTorch) {
      for (const threads of threadChoices) {
        const args = {
          shape,
          batch,
          seq,
          steps,
          decodeBatch: batch,
          promptLength,
          newTokens,
          device: "cpu",
          threads,
        };
        const run = spawnSync(python!, [script, JSON.stringify(args)], { encoding: "utf8" });
        if (run.status !== 0) {
          console.error(`PyTorch (${threads} threads) failed: ${run.stderr.trim().split("\n").at(-1)}`);
          continue;
        }
        const result = JSON.parse(run.stdout.trim().split("\n").at(-1)!) as { train: number; decode: number };
        const entry = torch.get(threads) ?? { train: [], decode: [] };
        entry.train.push(result.train);
        entry.decode.push(result.decode);
        torch.set(threads, entry);
      }
    }
  }
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const range = (v: number[]) => `${Math.min(...v).toFixed(0)}–${Math.max(...v).toFixed(0)}`;
/** The thread count whose median is higher, for one measure. */
const bestTorch = (key: "train" | "decode") =>
  [...torch.entries()].sort((a, b) => median(b[1][key]) - median(a[1][key]))[0];

console.log(`adapter: ${JSON.stringify(backend.ctx.info.adapter)}`);
console.log(
  `model ${values.size} (hidden ${shape.hiddenSize}, ${shape.numHiddenLayers} layers, vocab ${shape.vocabSize}), batch ${batch} x ${seq} tokens, ${repeats} alternating rounds`,
);
console.log(`dispatches per training step: ${dispatchesPerStep}`);
const rows = [
  ["", "this package (WebGPU): median (range)", "PyTorch CPU, best of 1 and all threads", "ratio"],
];
for (const [label, key] of [
  ["forward+backward tokens/s", "train"],
  ["batched decode tokens/s", "decode"],
] as const) {
  const best = bestTorch(key);
  const mine = median(engine[key]);
  rows.push([
    label,
    `${mine.toFixed(0)} (${range(engine[key])})`,
    best
      ? `${median(best[1][key]).toFixed(0)} (${range(best[1][key])}), ${best[0]} thread${best[0] > 1 ? "s" : ""}`
      : "-",
    best ? `${(mine / median(best[1][key])).toFixed(2)}x` : "-",
  ]);
}
if (!hasTorch)
  console.error("PyTorch column skipped: python3 has no torch (Debian: apt-get install python3-torch)");
for (const [a, b, c, d] of rows)
  console.log(`${a!.padEnd(28)}${b!.padStart(40)}${c!.padStart(44)}${d!.padStart(8)}`);
for (const [threads, r] of torch) {
  console.log(
    `  PyTorch ${threads} thread(s): forward+backward ${range(r.train)}, decode ${range(r.decode)} tokens/s`,
  );
}

// Nothing but training steps and decoding has run, so the pool's peak is a training step's.
const estimate = estimateTrainingMemory(shape, {
  microBatch: batch,
  seqLen: seq,
  recompute: values.recompute,
  entropy: false,
});
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
console.log(
  `training step peak memory${values.recompute ? " (recompute)" : ""}: ${mib(backend.ctx.pool.stats.peakInUseBytes)} measured (buffer pool), ${mib(estimate.trainingPeak - estimate.bytes.optimizerState)} estimated (${estimate.trainingPeakPhase})`,
);
console.log("\nQwen2.5-0.5B training memory, estimated (GiB; rollouts of 64 × 512+512 tokens):\n");
console.log(planTable());
model.dispose();
