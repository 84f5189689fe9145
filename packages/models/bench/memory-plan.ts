/**
 * The memory plan for training Qwen2.5-0.5B: estimateTrainingMemory's breakdown for a set of settings,
 * as markdown tables (the README's Memory section is this output). No device needed.
 *
 *   pnpm --filter @ragen/models exec tsx bench/memory-plan.ts
 */
import { fileURLToPath } from "node:url";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG } from "../src/io/config.js";
import { estimateTrainingMemory, type TrainingMemoryOptions } from "../src/model/memory.js";

const GiB = 2 ** 30;
/** What a 24 GB card leaves to tensors after the driver, the kernels' scratch and fragmentation. */
const BUDGET = 22 * GiB;
const ROLLOUT = { batch: 64, promptLength: 512, newTokens: 512 };

/** The plan: recomputation at the trainers' default micro-batch of 4 sequences. */
export const PLAN: TrainingMemoryOptions = { microBatch: 4, seqLen: 1024, recompute: true };

export const PLAN_SETTINGS: { name: string; options: TrainingMemoryOptions }[] = [
  { name: "f32, every activation kept, micro-batch 8", options: { microBatch: 8, seqLen: 1024 } },
  { name: "f32, every activation kept, micro-batch 4", options: { microBatch: 4, seqLen: 1024 } },
  { name: "**f32, recompute, micro-batch 4** (the plan)", options: PLAN },
  {
    name: "f32, recompute, micro-batch 4, logits whole (`maxLogits = Infinity`)",
    options: { ...PLAN, maxLogits: Number.POSITIVE_INFINITY },
  },
  { name: "f32, recompute, micro-batch 2", options: { microBatch: 2, seqLen: 1024, recompute: true } },
  {
    name: "f32, recompute, micro-batch 1 of 4096 tokens",
    options: { microBatch: 1, seqLen: 4096, recompute: true },
  },
  {
    name: "f32, recompute, micro-batch 4, critic + reference model",
    options: { ...PLAN, critic: true, referenceModel: true },
  },
  {
    name: "f32, recompute, micro-batch 2, critic + reference model",
    options: { microBatch: 2, seqLen: 1024, recompute: true, critic: true, referenceModel: true },
  },
  {
    // What precision=f16 runs: f16 weights, gradients and activations, f32 masters; the attention
    // region's tensors in f32; rollouts on an f32 copy of the weights, with an f32 KV cache.
    name: "f16 weights + f32 master (`precision=f16`), recompute, micro-batch 4",
    options: { ...PLAN, weights: "f16" },
  },
  { name: "LoRA r=64 (f32), recompute, micro-batch 4", options: { ...PLAN, lora: { rank: 64 } } },
];

const gib = (bytes: number) => (bytes / GiB).toFixed(2);
const fits = (peak: number) => (peak > BUDGET ? "no" : BUDGET - peak < GiB ? "barely" : "yes");

/** One row per setting: the terms that move, the two peaks, and whether it fits the budget. */
export function planTable(): string {
  const rows = [
    "| setting (sequences of 1024 tokens, 32 a step) | weights + master | gradients | AdamW | kept activations | head (logits) | training peak | rollout peak | fits 24 GB |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const { name, options } of PLAN_SETTINGS) {
    const e = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, {
      batch: 32,
      ...options,
      rollout: ROLLOUT,
    });
    const b = e.bytes;
    rows.push(
      `| ${name} | ${gib(b.weights + b.masterWeights)} | ${gib(b.gradients)} | ${gib(b.optimizerState)} | ${gib(b.activations)} | ${gib(b.logits)} | ${gib(e.trainingPeak)} | ${gib(e.rolloutPeak)} | ${fits(e.peak)} |`,
    );
  }
  return rows.join("\n");
}

/** Every term of one setting, with what it is. */
export function breakdownTable(options: TrainingMemoryOptions): string {
  const e = estimateTrainingMemory(QWEN2_5_0_5B_INSTRUCT_CONFIG, { batch: 32, ...options, rollout: ROLLOUT });
  const b = e.bytes;
  const rows: [string, number, string][] = [
    ["weights", b.weights, "494M parameters × 4 bytes"],
    ["gradients", b.gradients, "one per parameter, from the first backward of a step to its optimizer step"],
    ["AdamW moments", b.optimizerState, "m and v per parameter"],
    [
      "kept activations",
      b.activations,
      "each layer's input (4 × 1024 tokens × 896), 24 layers + the final norm's",
    ],
    [
      "recomputed layer",
      b.recomputedLayer,
      "one layer's activations while its backward runs (~20k values a token)",
    ],
    ["MLP backward", b.layerBackward, "gradients of gate, up and their product (3 × 4864 a token)"],
    [
      "head",
      b.logits,
      "a chunk's logits and their log-prob and entropy gradients (3 × 441 tokens × 151,936), the final norm's output and the chunks' copies of it (and, in the phase, each chunk's head gradient before it is added in)",
    ],
    [
      "embedding gradient",
      b.embeddingGradient,
      "a new 151,936 × 896 gradient and its sum with the accumulated one",
    ],
    ["KV cache (rollout)", b.kvCache, "2 × 24 layers × 64 sequences × 1024 tokens × 128"],
    [
      "prefill (rollout)",
      b.rolloutForward,
      "one layer's tensors over a pass of 16 × 512 prompt tokens (generate's 8,192 a pass), that group's KV cache, and the last position's logits",
    ],
    ["stacked projections (rollout)", b.packedWeights, "24 layers' q/k/v and gate/up weights, copied"],
  ];
  return [
    "| term | GiB | what |",
    "|---|---|---|",
    ...rows.map(([term, bytes, what]) => `| ${term} | ${gib(bytes)} | ${what} |`),
    `| **training peak** (${e.trainingPeakPhase}) | **${gib(e.trainingPeak)}** | weights + AdamW + its largest phase |`,
    `| **rollout peak** | **${gib(e.rolloutPeak)}** | weights + AdamW + stacked projections + KV cache + prefill |`,
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(
    `Qwen2.5-0.5B training memory (rollouts: ${ROLLOUT.batch} × ${ROLLOUT.promptLength}+${ROLLOUT.newTokens} tokens)\n`,
  );
  console.log(planTable());
  console.log("\nThe plan, term by term:\n");
  console.log(breakdownTable(PLAN));
}
