/**
 * The portable benchmark, bundled by build.mjs into `<folder>/bench.mjs`:
 *
 *   node bench.mjs [--quick] [--only matmul,attention,model] [--match 4096] [--min-time 0.5]
 *                  [--model qwen0.5b] [--batch 4] [--seq 512] [--steps 3]
 *                  [--decode-batch 16] [--prompt 32] [--new-tokens 32] [--lora-rank 0] [--dtype f32]
 *                  [--repeats 1]
 *                  [--starpo-groups 8] [--starpo-group-size 16] [--starpo-prompt 256] [--starpo-new-tokens 400]
 *                  [--torch auto|on|off] [--profile] [--tune] [--tune-budget S] [--tuning-file F]
 *                  [--out results-folder] [--help]
 *
 * Runs the kernel benchmarks (matmul, attention, row ops, ...) and the model benchmark (a Qwen2-shaped
 * model's forward+backward and batched decode) on the machine's preferred high-performance WebGPU adapter,
 * then the same shapes in PyTorch when python3 has torch: on CUDA when there is a GPU (matmul f32 with TF32
 * off and on, bf16; SDPA attention; the model in f32 and under bf16 autocast), else on the CPU with 1
 * thread and with all cores, keeping the better. With --repeats > 1 the model measurements alternate this
 * engine and PyTorch and report the median. Writes results.json and results.md to --out.
 *
 * The model section also decodes with each layer's projections as separate products, and with
 * --lora-rank N > 0 with LoRA adapters of rank N on every linear module, merged into the stacked weights
 * (as generate does) and as separate adapter products.
 *
 * --dtype f16: the model and the StarPO step on f16 weights (Qwen2Model.toDtype: mixed precision, whose
 * peer is PyTorch's bf16 autocast; the StarPO step's optimisers then scale the loss).
 *
 * --tune: times every matmul kernel that can run each PyTorch-compared matmul shape (matmulCandidates)
 * and reports the fastest beside PyTorch; then measures the model and the StarPO step again on matmul
 * kernels and attention tiles tuned to the problems they met (what a run with kernelTuning does).
 * --tune-budget S: each of those tuning passes starts no new problem after S seconds (largest problems
 * go first; the rest keep the fixed rule), so a run on a time-limited machine still ends with figures.
 * --tuning-file F: the tuning passes start from the measurements F holds for this adapter and write
 * theirs back to it, so that a later run (the GPU-server suite's next part) measures only what is left.
 * The untuned figures never read it.
 * --pool-gib N: the buffer pool keeps up to N GiB of released buffers (default: the larger of 2 GiB and the
 * most in use at once), to see what the pool's trimming costs a step (destroyed buffers drop the bind
 * groups, which the next step creates again).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { writeFileAtomic } from "../../../packages/logging/src/node/atomic-write.js";
import {
  benchPrompts,
  MODEL_SIZES,
  measureDecode,
  measureTraining,
} from "../../../packages/models/bench/model-bench.js";
import { generate } from "../../../packages/models/src/model/generate.js";
import { Qwen2Model } from "../../../packages/models/src/model/qwen2.js";
import { allCases } from "../../../packages/tensor-webgpu/bench/cases/index.js";
import {
  type KernelResult,
  median,
  runCases,
  selectCases,
} from "../../../packages/tensor-webgpu/bench/run-cases.js";
import {
  choiceName,
  enableKernelTuning,
  type KernelTime,
  type KernelTuningFile,
  type KernelTuningOptions,
  type KernelTuningPass,
  loadKernelTuning,
  type MatmulShape,
  matmulCandidates,
  measuredKernelProblems,
  saveKernelTuning,
  tileName,
  timeMatmulCandidates,
  tuneKernels,
  webGpuBackend,
} from "../../../packages/tensor-webgpu/src/index.js";
import { subgroupMatrixShape } from "../../../packages/tensor-webgpu/src/kernels/matmul.js";
import { comparisonRows, type PeerResults, rate, renderMarkdown, type TunedMatmulResult } from "./report.js";
import { measureStarPOStep, RAGEN_STEP, type StarPOStepResult } from "./starpo-step.js";

const USAGE = `usage: node bench.mjs [--quick] [--only kernels|matmul,attention,...,model,starpo] [--match TEXT] [--min-time S]
  [--model tiny|small|qwen0.5b] [--batch N] [--seq N] [--steps N] [--decode-batch N] [--prompt N]
  [--new-tokens N] [--lora-rank N] [--dtype f32|f16] [--repeats N] [--starpo-groups N] [--starpo-group-size N]
  [--starpo-prompt N] [--starpo-new-tokens N] [--torch auto|on|off] [--profile] [--tune] [--tune-budget S]
  [--tuning-file FILE] [--pool-gib N] [--out FOLDER]`;

const { values } = parseCommandLine({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    match: { type: "string" },
    "min-time": { type: "string", default: "0.5" },
    model: { type: "string", default: "qwen0.5b" },
    batch: { type: "string", default: "4" },
    seq: { type: "string", default: "512" },
    steps: { type: "string", default: "3" },
    "decode-batch": { type: "string", default: "16" },
    prompt: { type: "string", default: "32" },
    "new-tokens": { type: "string", default: "32" },
    "lora-rank": { type: "string", default: "0" },
    dtype: { type: "string", default: "f32" },
    repeats: { type: "string", default: "1" },
    "starpo-groups": { type: "string", default: String(RAGEN_STEP.groups) },
    "starpo-group-size": { type: "string", default: String(RAGEN_STEP.groupSize) },
    "starpo-prompt": { type: "string", default: String(RAGEN_STEP.promptLength) },
    "starpo-new-tokens": { type: "string", default: String(RAGEN_STEP.newTokens) },
    torch: { type: "string", default: "auto" },
    profile: { type: "boolean", default: false },
    tune: { type: "boolean", default: false },
    "tune-budget": { type: "string" },
    "tuning-file": { type: "string" },
    "pool-gib": { type: "string" },
    out: { type: "string", default: "bench-results" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

/** parseArgs, with an unknown or malformed option reported as one line and the usage, not a stack trace. */
function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    console.error(`bench.mjs: ${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const quick = values.quick!;
const modelDtype = values.dtype as "f32" | "f16";
if (modelDtype !== "f32" && modelDtype !== "f16") {
  console.error(`bench.mjs: --dtype must be f32 or f16, got ${values.dtype}\n${USAGE}`);
  process.exit(2);
}
const families = values.only?.split(",");
const wants = (family: string) => !families || families.includes(family);
const knownFamilies = new Set([...allCases.map((c) => c.family), "kernels", "model", "starpo"]);
const unknownFamilies = families?.filter((f) => !knownFamilies.has(f)) ?? [];
if (unknownFamilies.length > 0) {
  console.error(
    `bench.mjs: --only ${unknownFamilies.join(",")}: no such benchmark; choose from ${[...knownFamilies].join(", ")}`,
  );
  process.exit(2);
}
/** A numeric option's value; a value that is not a non-negative number stops the run with one line. */
const number = (name: keyof typeof values) => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`bench.mjs: --${name} must be a non-negative number, got ${JSON.stringify(values[name])}`);
    process.exit(2);
  }
  return value;
};

/** Seconds each tuning pass may take (--tune-budget), read now so that a bad value stops the run at once. */
const tuneBudget = values["tune-budget"] === undefined ? undefined : number("tune-budget");

/** Matmul shapes compared with PyTorch (the engine's case names are `${label} [auto]` / `[auto f16]`). */
const PEER_MATMUL = quick
  ? [{ label: "256^3", m: 256, n: 256, k: 256 }]
  : [
      { label: "1024^3", m: 1024, n: 1024, k: 1024 },
      { label: "2048^3", m: 2048, n: 2048, k: 2048 },
      { label: "4096^3", m: 4096, n: 4096, k: 4096 },
      { label: "qwen x·Wupᵀ [512x896]·[4864x896]ᵀ", m: 512, n: 4864, k: 896, transB: true },
      { label: "qwen dWq=dYᵀ·X [896x512]ᵀ·[512x896]", m: 896, n: 896, k: 512, transA: true },
    ];
/** Attention shapes compared with PyTorch's SDPA. */
const PEER_ATTENTION = (quick ? [128] : [512, 1024]).map((seqLen) => ({
  label: `qwen0.5b T=${seqLen} 14/2x64 b=1`,
  batch: 1,
  seqLen,
  numHeads: 14,
  numKvHeads: 2,
  headDim: 64,
}));

const backend = await webGpuBackend({
  powerPreference: "high-performance",
  maxPooledBytes: values["pool-gib"] === undefined ? undefined : number("pool-gib") * 2 ** 30,
});
const ctx = backend.ctx;
const { adapter, features, subgroupSizes } = ctx.info;
console.log(
  `adapter: ${[adapter.vendor, adapter.architecture, adapter.device, adapter.description].join(" ").trim()}`,
);
console.log(`adapter features: ${ctx.info.adapterFeatures.join(" ")}`);
console.log(
  `features: shader-f16 ${features.shaderF16}, subgroups ${features.subgroups} (${subgroupSizes.min}-${subgroupSizes.max}), ` +
    `subgroup matrices ${JSON.stringify(features.subgroupMatrixConfigs)} -> ${JSON.stringify(subgroupMatrixShape(ctx) ?? null)}, ` +
    `WGSL buffer_view ${features.bufferView} (subgroup-matrix loads through views ${features.subgroupMatrixViews})`,
);

// ---- latency of waiting: what one step of a decode loop pays at least, apart from its work
async function latencies() {
  const time = async (fn: () => Promise<unknown>, n: number) => {
    await fn();
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await fn();
      samples.push(performance.now() - t);
    }
    return median(samples);
  };
  const small = ctx.pool.acquire(16);
  const large = ctx.pool.acquire(16 * 151936 * 4);
  const result = {
    syncMs: await time(() => ctx.sync(), 20),
    read4BytesMs: await time(() => ctx.read(small, 4), 20),
    read9_7MBMs: await time(() => ctx.read(large, 16 * 151936 * 4), 5),
  };
  ctx.pool.release(small);
  ctx.pool.release(large);
  console.log(
    `latency: empty sync ${result.syncMs.toFixed(3)} ms, read 4 B ${result.read4BytesMs.toFixed(3)} ms, read 9.7 MB ${result.read9_7MBMs.toFixed(2)} ms`,
  );
  return result;
}
const latency = await latencies();

// ---- kernels
let kernels: KernelResult[] = [];
const kernelFamilies =
  !families || families.includes("kernels")
    ? undefined
    : families.filter((f) => f !== "model" && f !== "starpo");
if (kernelFamilies === undefined || kernelFamilies.length > 0) {
  const patterns = values.match?.split(",") ?? [];
  const quickNames = new Set([
    "256^3 [auto]",
    "256^3 [auto f16]",
    "256^3 [blocked]",
    `attention fwd ${PEER_ATTENTION[0]!.label}`,
    `attention fwd+bwd ${PEER_ATTENTION[0]!.label}`,
  ]);
  const selected = selectCases(allCases, kernelFamilies, patterns).filter(
    (c) => !quick || quickNames.has(c.name),
  );
  console.log(`\n# kernels (${selected.length} cases)`);
  kernels = await runCases(ctx, selected, { minSeconds: number("min-time") });
}

// ---- PyTorch
const python = [process.env.PYTHON, "python3", "/usr/bin/python3"].find(
  (p) => p && spawnSync(p, ["-c", "import torch"]).status === 0,
);
const torchMode = values.torch!;
if (torchMode === "on" && !python) throw new Error("--torch on: no python3 with torch found");
const usePeer = torchMode !== "off" && python !== undefined;
const peerScript = (name: string) =>
  [
    join(here, name),
    resolve(here, "../../../packages/tensor-webgpu/bench", name),
    resolve(here, "../../../packages/models/bench", name),
  ].find(existsSync);

function runPeer(script: string, args: object): Record<string, unknown> | undefined {
  const path = peerScript(script);
  if (!python || !path) return undefined;
  const run = spawnSync(python, [path, JSON.stringify(args)], { encoding: "utf8", maxBuffer: 1 << 26 });
  if (run.status !== 0) {
    console.error(
      `PyTorch peer ${script} failed: ${(run.stderr || run.error?.message || "").trim().split("\n").slice(-3).join(" | ")}`,
    );
    return undefined;
  }
  return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

const cuda =
  usePeer &&
  spawnSync(python!, ["-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"]).status ===
    0;
const peerDevice = cuda ? "cuda" : "cpu";
const threadChoices = cuda ? [1] : [...new Set([1, cpus().length])];
const peer: PeerResults = { device: peerDevice, matmul: [], attention: [], model: [] };

const ran = (name: string) => kernels.some((k) => k.name === name && !k.skipped);
if (usePeer && kernels.length > 0) {
  console.log(`\n# PyTorch kernels on ${peerDevice}`);
  for (const threads of threadChoices) {
    const result = runPeer("torch_kernels.py", {
      device: peerDevice,
      threads,
      repeats: quick ? 3 : 20,
      // Only the shapes this engine measured in this run.
      matmul: PEER_MATMUL.filter((m) => ran(`${m.label} [auto]`)),
      matmulModes: cuda ? ["f32", "tf32", "bf16", "f16"] : ["f32"],
      attention: PEER_ATTENTION.filter((a) => ran(`attention fwd ${a.label}`)),
    }) as (PeerResults & { threads: number; gpu?: string; torch?: string }) | undefined;
    if (!result) continue;
    peer.torch = result.torch;
    peer.gpu = result.gpu;
    // Keep the better thread count per case.
    for (const row of result.matmul) {
      const same = peer.matmul.find((r) => r.label === row.label && r.mode === row.mode);
      if (!same) peer.matmul.push({ ...row, threads: result.threads });
      else if (row.ms < same.ms) Object.assign(same, row, { threads: result.threads });
    }
    for (const row of result.attention) {
      const same = peer.attention.find((r) => r.label === row.label && r.pass === row.pass);
      if (!same) peer.attention.push({ ...row, threads: result.threads });
      else if (row.ms < same.ms) Object.assign(same, row, { threads: result.threads });
    }
  }
  for (const r of peer.matmul)
    console.log(
      `${r.label.padEnd(44)} ${r.mode.padEnd(5)} ${r.ms.toFixed(3).padStart(9)} ms ${r.tflops.toFixed(2).padStart(8)} TFLOP/s`,
    );
  for (const r of peer.attention)
    console.log(
      `attention ${r.pass.padEnd(8)} ${r.label.padEnd(34)} ${r.ms.toFixed(3).padStart(9)} ms ${r.tflops.toFixed(2).padStart(8)} TFLOP/s`,
    );
}

// ---- matmul kernels tuned per shape (--tune): every candidate on each PyTorch-compared shape
const tunedMatmuls: TunedMatmulResult[] = [];
if (values.tune && kernels.length > 0) {
  console.log("\n# matmul candidates per shape (--tune)");
  const dtypes = features.shaderF16 ? (["f32", "f16"] as const) : (["f32"] as const);
  for (const m of PEER_MATMUL.filter((m) => ran(`${m.label} [auto]`))) {
    for (const dtype of dtypes) {
      const shape: MatmulShape = {
        batch: 1,
        m: m.m,
        n: m.n,
        k: m.k,
        transA: !!m.transA,
        transB: !!m.transB,
        dtype,
      };
      const { timed, rejected } = await timeMatmulCandidates(ctx, shape, matmulCandidates(ctx, shape), {
        repeats: quick ? 2 : 5,
        rounds: 3,
      });
      const tflops = (ms: number) => (2 * m.m * m.n * m.k) / (ms / 1000) / 1e12;
      console.log(`${m.label} ${dtype}: ${timed.map((t) => `${t.kernel} ${rate(tflops(t.ms))}`).join(", ")}`);
      for (const r of rejected) console.log(`  left out ${r.kernel}: ${r.reason}`);
      tunedMatmuls.push({
        label: m.label,
        dtype,
        candidates: timed.map((t) => ({ kernel: t.kernel, ms: t.ms, tflops: tflops(t.ms) })),
        rejected,
      });
    }
  }
}

// ---- model
interface ModelResult {
  size: string;
  dtype: "f32" | "f16";
  batch: number;
  seq: number;
  decodeBatch: number;
  promptLength: number;
  newTokens: number;
  trainTokensPerSecond: number[];
  decodeTokensPerSecond: number[];
  dispatchesPerStep: number;
  peakBytes: number;
  phases?: Record<string, number>;
  /** GPU time per kernel of one forward+backward step and of one decoding step (--profile). */
  kernelProfile?: { train: KernelTime[]; decode: KernelTime[] };
  /** Decoding with separate projections, and with LoRA adapters merged and not (see measureProjections). */
  projections?: ProjectionsResult;
  /** The same measurements with the kernels tuned to the model's problems (--tune). */
  tuned?: {
    trainTokensPerSecond: number[];
    decodeTokensPerSecond: number[];
    problems: number;
    seconds: number;
    choices: { key: string; kernel: string; candidates: number }[];
  };
}
let model: ModelResult | undefined;
let starpo: StarPOStepResult | undefined;
let starpoTuned: StarPOStepResult | undefined;

/**
 * Writes results.json and results.md with what has been measured so far: after the kernels, after the
 * model and at the end, so that a run stopped by a time limit keeps its finished parts. The last one
 * prints the tables too.
 */
function writeReport(last: boolean): void {
  const out = resolve(values.out!);
  mkdirSync(out, { recursive: true });
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    adapter,
    features,
    adapterFeatures: ctx.info.adapterFeatures,
    latency,
    subgroupSizes,
    quick,
    complete: last,
    kernels,
    tunedMatmuls,
    model,
    starpo,
    starpoTuned,
    peer: usePeer ? peer : undefined,
  };
  const write = (name: string, text: string) => {
    writeFileAtomic(join(out, name), text);
  };
  const rows = comparisonRows(
    kernels,
    model,
    usePeer ? peer : undefined,
    PEER_MATMUL.map((m) => m.label),
    PEER_ATTENTION.map((a) => a.label),
    tunedMatmuls,
  );
  const markdown = renderMarkdown(report, rows);
  // The table first: a run killed between the two writes leaves results.json of the previous report,
  // never a results.json without its table.
  write("results.md", markdown);
  write("results.json", `${JSON.stringify(report, null, 2)}\n`);
  if (!last) return;
  console.log(`\n${markdown}`);
  console.log(`wrote ${join(out, "results.json")} and results.md`);
}
if (kernels.length > 0) writeReport(false);

if (wants("model")) {
  const size = quick ? "tiny" : values.model!;
  const shape = MODEL_SIZES[size];
  if (!shape) throw new RangeError(`--model must be one of ${Object.keys(MODEL_SIZES).join(", ")}`);
  const batch = quick ? 2 : number("batch");
  const seq = quick ? 32 : number("seq");
  const steps = quick ? 1 : number("steps");
  const decode = {
    batch: quick ? 2 : number("decode-batch"),
    promptLength: quick ? 8 : number("prompt"),
    newTokens: quick ? 4 : number("new-tokens"),
  };
  console.log(
    `\n# model ${size}: forward+backward ${batch} x ${seq} tokens, decode ${decode.batch} x ${decode.newTokens} after ${decode.promptLength}`,
  );
  const qwen = Qwen2Model.random(shape, 0, backend).toDtype(modelDtype);
  model = {
    size,
    dtype: modelDtype,
    batch,
    seq,
    decodeBatch: decode.batch,
    promptLength: decode.promptLength,
    newTokens: decode.newTokens,
    trainTokensPerSecond: [],
    decodeTokensPerSecond: [],
    dispatchesPerStep: 0,
    peakBytes: 0,
  };
  const peerArgs = {
    shape,
    batch,
    seq,
    steps,
    decodeBatch: decode.batch,
    promptLength: decode.promptLength,
    newTokens: decode.newTokens,
  };
  for (let r = 0; r < number("repeats"); r++) {
    const train = await measureTraining(qwen, backend, { batch, seq, steps });
    model.trainTokensPerSecond.push(train.tokensPerSecond);
    model.dispatchesPerStep = train.dispatchesPerStep;
    model.peakBytes = Math.max(model.peakBytes, ctx.pool.stats.peakInUseBytes);
    const dec = await measureDecode(qwen, decode);
    model.decodeTokensPerSecond.push(dec.tokensPerSecond);
    const stepSeconds = train.secondsPerStep.reduce((a, b) => a + b, 0) / train.secondsPerStep.length;
    console.log(
      `this engine: forward+backward ${train.tokensPerSecond.toFixed(1)} tokens/s (${train.dispatchesPerStep} dispatches/step, ` +
        `${train.bindGroupsPerStep.toFixed(0)} bind groups created/step, ${train.buffersDestroyedPerStep.toFixed(0)} buffers destroyed/step, ` +
        `${stepSeconds.toFixed(3)} s/step of which ${train.waitSecondsPerStep.toFixed(3)} s waiting for the GPU), ` +
        `decode ${dec.tokensPerSecond.toFixed(1)} tokens/s (${((dec.seconds / decode.newTokens) * 1000).toFixed(1)} ms/step, ` +
        `${((dec.waitSeconds / decode.newTokens) * 1000).toFixed(1)} ms waiting, ${dec.dispatchesPerStep.toFixed(0)} dispatches, ` +
        `${dec.readbacksPerStep.toFixed(1)} readbacks per step)`,
    );
    model.phases = {
      trainSecondsPerStep: stepSeconds,
      trainWaitSecondsPerStep: train.waitSecondsPerStep,
      decodeSecondsPerStep: dec.seconds / decode.newTokens,
      decodeWaitSecondsPerStep: dec.waitSeconds / decode.newTokens,
      decodeDispatchesPerStep: dec.dispatchesPerStep,
    };
    if (values.profile && r === 0 && ctx.info.features.timestampQuery) {
      const train = await profileKernels(() => measureTraining(qwen, backend, { batch, seq, steps: 0 }));
      printKernels("one forward+backward step", train);
      // The profile starts once the first token is back. Decoding records each step before the previous
      // one's tokens are read, so the step of token 2 is already recorded then: 8 more steps follow.
      const steps = 8;
      const prompts = benchPrompts(shape, decode.batch, decode.promptLength);
      let profiling = false;
      await generate(qwen, prompts, {
        maxNewTokens: 2 + steps,
        temperature: 0,
        onStep: (step) => {
          if (step === 1) {
            ctx.startKernelProfile();
            profiling = true;
          }
        },
      });
      if (!profiling) throw new Error("the decoding profile never started");
      const perStep = (await ctx.stopKernelProfile()).kernels.map((k) => ({
        ...k,
        dispatches: k.dispatches / steps,
        ms: k.ms / steps,
      }));
      printKernels(`one decoding step of ${decode.batch} sequences`, perStep);
      model.kernelProfile = { train, decode: perStep };
    }
    if (!usePeer) continue;
    for (const dtype of cuda ? ["f32", "bf16"] : ["f32"]) {
      for (const threads of threadChoices) {
        const result = runPeer("torch_models.py", { ...peerArgs, device: peerDevice, threads, dtype }) as
          | { train: number; decode: number; decodeMode?: string; threads: number; peakBytes: number }
          | undefined;
        if (!result) continue;
        peer.model.push({
          dtype,
          threads: result.threads,
          train: result.train,
          decode: result.decode,
          decodeMode: result.decodeMode,
          peakBytes: result.peakBytes,
        });
        const decodeMode = result.decodeMode ? ` (${result.decodeMode})` : "";
        console.log(
          `PyTorch ${peerDevice} ${dtype} ${result.threads} thread(s): forward+backward ${result.train.toFixed(1)} tokens/s, decode ${result.decode.toFixed(1)} tokens/s${decodeMode}`,
        );
      }
    }
  }
  if (values.tune) model.tuned = await measureTuned(qwen, { batch, seq, steps }, decode);
  model.projections = await measureProjections(qwen, number("lora-rank"), decode);
  qwen.dispose();
}

interface DecodeFigures {
  tokensPerSecond: number;
  dispatchesPerStep: number;
}

interface ProjectionsResult {
  /** Decoding with each layer's q/k/v and gate/up projections as separate products (packProjections off). */
  separate: DecodeFigures;
  /** With LoRA adapters of this rank on all seven modules (--lora-rank): merged into stacked weights, and separate. */
  lora?: { rank: number; merged: DecodeFigures; separate: DecodeFigures };
}

/**
 * Decoding as the model section measured it, but with separate projections; then, with --lora-rank, with
 * LoRA adapters attached (RAGEN's LoRA runs: rank 64 on every linear module), merged into the stacked
 * weights as generate does and as separate adapter products. The adapters stay attached: run it last.
 */
async function measureProjections(
  qwen: Qwen2Model,
  loraRank: number,
  decode: { batch: number; promptLength: number; newTokens: number },
): Promise<ProjectionsResult> {
  const figures = (d: { tokensPerSecond: number; dispatchesPerStep: number }) => ({
    tokensPerSecond: d.tokensPerSecond,
    dispatchesPerStep: d.dispatchesPerStep,
  });
  const show = (what: string, d: DecodeFigures) =>
    console.log(
      `${what}: ${d.tokensPerSecond.toFixed(1)} tokens/s, ${d.dispatchesPerStep.toFixed(0)} dispatches per step`,
    );
  const separate = figures(await measureDecode(qwen, { ...decode, packProjections: false }));
  show("decode with separate projections", separate);
  if (loraRank <= 0) return { separate };
  qwen.attachLora({ rank: loraRank, alpha: loraRank });
  const merged = figures(await measureDecode(qwen, decode));
  show(`decode with LoRA r=${loraRank} merged into the stacked weights`, merged);
  const unmerged = figures(await measureDecode(qwen, { ...decode, packProjections: false }));
  show(`decode with LoRA r=${loraRank} as separate products`, unmerged);
  return { separate, lora: { rank: loraRank, merged, separate: unmerged } };
}

/**
 * Before a tuning pass: take what --tuning-file holds for this adapter, so that the pass measures only
 * what is left. A file that cannot be used is reported and measured anew (tuning only makes kernels
 * faster; a benchmark should not end on it). Taking measurements turns tuning on, so the untuned figures
 * are measured before this is called.
 */
function takeSavedTuning(): void {
  const path = values["tuning-file"];
  if (path === undefined || !existsSync(path)) return;
  let saved: unknown;
  try {
    saved = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    const reason = (error as Error).message.replace(/\s+/g, " ");
    console.log(`--tuning-file ${path} is not readable JSON (${reason}); measuring anew`);
    return;
  }
  try {
    if (loadKernelTuning(ctx, saved, path)) {
      const file = saved as KernelTuningFile;
      const count = file.matmul.length + file.attention.length + (file.attentionForms?.length ?? 0);
      console.log(`took the measurements of ${count} kernel problems from ${path}`);
    } else console.log(`${path} holds another adapter's measurements; measuring anew and replacing them`);
  } catch (error) {
    console.log(`${(error as Error).message}; measuring anew`);
  }
}

/** After a tuning pass: write every measurement of this context to --tuning-file (atomically). */
function keepTuning(): void {
  const path = values["tuning-file"];
  if (path === undefined) return;
  mkdirSync(dirname(resolve(path)), { recursive: true });
  writeFileAtomic(path, `${JSON.stringify(saveKernelTuning(ctx), null, 2)}\n`);
  console.log(`kept ${measuredKernelProblems(ctx)} measured kernel problems in ${path}`);
}

/**
 * A tuning pass's options: --tune-budget, and each problem printed as tuning reaches it, with the seconds
 * so far (a long pass shows where it is).
 */
function tuningOptions(): KernelTuningOptions {
  const start = performance.now();
  return {
    budgetSeconds: tuneBudget,
    onProblem: (done, total, key) => {
      const seconds = ((performance.now() - start) / 1000).toFixed(1);
      if (key) console.log(`  tuning ${done + 1}/${total} (${seconds} s): ${key}`);
    },
  };
}

/** The count of what a pass measured, as "N matmul and M attention problems[ and K attention forms]". */
function measuredCount(pass: KernelTuningPass, more = ""): string {
  const forms = pass.attentionForms.length;
  return `${pass.matmul.length} ${more}matmul and ${pass.attention.length} attention problems${forms > 0 ? ` and ${forms} attention form${forms === 1 ? "" : "s"}` : ""}`;
}

/** What a budgeted pass left on the fixed rule, as a clause of its summary line. */
function leftOut(pass: KernelTuningPass): string {
  return pass.pending > 0 ? ` (the budget left ${pass.pending} smaller problems on the fixed rule)` : "";
}

/**
 * Tune the matmul kernels and attention tiles to the problems one forward+backward step and one decode
 * meet, then measure both again (as many rounds as --repeats), printing the profile of the tuned step with
 * --profile.
 */
async function measureTuned(
  qwen: Qwen2Model,
  train: { batch: number; seq: number; steps: number },
  decode: { batch: number; promptLength: number; newTokens: number },
): Promise<NonNullable<ModelResult["tuned"]>> {
  enableKernelTuning(ctx);
  takeSavedTuning();
  await measureTraining(qwen, backend, { ...train, steps: 0 });
  await measureDecode(qwen, { ...decode, newTokens: 2 });
  const start = performance.now();
  const tuned = await tuneKernels(ctx, tuningOptions());
  const seconds = (performance.now() - start) / 1000;
  console.log(`\ntuned ${measuredCount(tuned)} of the model in ${seconds.toFixed(1)} s${leftOut(tuned)}`);
  keepTuning();
  console.log("each problem's kernel and the times of its fastest candidates:");
  // Each problem's winner (the fastest, or the fixed rule's choice within the margin) and every time.
  const problems = [
    ...tuned.matmul.map((t) => ({
      key: t.key,
      kernel: choiceName(t.choice),
      times: t.candidates.map((c) => [c.kernel, c.ms] as const),
    })),
    ...tuned.attention.map((t) => ({
      key: t.key,
      kernel: tileName(t.tile),
      times: t.candidates.map((c) => [c.tile, c.ms] as const),
    })),
    ...tuned.attentionForms.map((t) => ({
      key: t.key,
      kernel: t.form,
      times: t.candidates.map((c) => [c.form, c.ms] as const),
    })),
  ];
  for (const { key, kernel, times } of problems)
    console.log(
      `  ${key.padEnd(28)} runs ${kernel}; ${times
        .slice(0, 4)
        .map(([name, ms]) => `${name} ${ms.toFixed(3)}`)
        .join(", ")} ms`,
    );
  // Kernels whose result differed from the untuned kernel's on this adapter (or that the driver refused).
  for (const t of [...tuned.matmul, ...tuned.attention, ...tuned.attentionForms])
    for (const r of t.rejected) console.log(`  left out ${r.kernel} on ${t.key}: ${r.reason}`);
  const result: NonNullable<ModelResult["tuned"]> = {
    trainTokensPerSecond: [],
    decodeTokensPerSecond: [],
    problems: measuredKernelProblems(ctx),
    seconds,
    choices: problems.map(({ key, kernel, times }) => ({ key, kernel, candidates: times.length })),
  };
  for (let r = 0; r < number("repeats"); r++) {
    const t = await measureTraining(qwen, backend, train);
    const d = await measureDecode(qwen, decode);
    result.trainTokensPerSecond.push(t.tokensPerSecond);
    result.decodeTokensPerSecond.push(d.tokensPerSecond);
    console.log(
      `this engine, tuned kernels: forward+backward ${t.tokensPerSecond.toFixed(1)} tokens/s, decode ${d.tokensPerSecond.toFixed(1)} tokens/s`,
    );
  }
  if (values.profile && ctx.info.features.timestampQuery)
    printKernels(
      "one forward+backward step, tuned kernels",
      await profileKernels(() => measureTraining(qwen, backend, { ...train, steps: 0 })),
    );
  return result;
}

/** Run `work` under a kernel profile: the kernels by GPU time. */
async function profileKernels(work: () => Promise<unknown>): Promise<KernelTime[]> {
  ctx.startKernelProfile();
  await work();
  return (await ctx.stopKernelProfile()).kernels;
}

function printKernels(what: string, kernels: KernelTime[]): void {
  const totalMs = kernels.reduce((sum, k) => sum + k.ms, 0);
  const dispatches = kernels.reduce((sum, k) => sum + k.dispatches, 0);
  console.log(`\nGPU time per kernel, ${what}: ${totalMs.toFixed(2)} ms in ${dispatches} dispatches`);
  for (const k of kernels.slice(0, 25)) {
    console.log(
      `  ${k.ms.toFixed(3).padStart(9)} ms ${((100 * k.ms) / totalMs).toFixed(1).padStart(5)}%` +
        ` ${String(k.dispatches).padStart(5)} x  ${k.label}`,
    );
  }
}

// ---- one StarPO step at RAGEN's settings
if (model) writeReport(false);
if (wants("starpo")) {
  const size = quick ? "tiny" : values.model!;
  const shape = MODEL_SIZES[size]!;
  const options = quick
    ? { groups: 4, groupSize: 2, promptLength: 8, newTokens: 4 }
    : {
        groups: number("starpo-groups"),
        groupSize: number("starpo-group-size"),
        promptLength: number("starpo-prompt"),
        newTokens: number("starpo-new-tokens"),
      };
  console.log(
    `\n# one StarPO step, ${size}: ${options.groups} groups x ${options.groupSize}, ${options.newTokens} new tokens after ${options.promptLength}`,
  );
  // f16: measureStarPOStep makes the critic in the actor's precision; both optimisers scale the loss.
  const actor = Qwen2Model.random(shape, 0, backend).toDtype(modelDtype);
  const printStep = (what: string, step: StarPOStepResult) =>
    console.log(
      `${what}: ${Object.entries(step.seconds)
        .map(([phase, s]) => `${phase} ${s.toFixed(2)}`)
        .join(
          ", ",
        )}; ${step.generatedTokens} tokens generated, ${step.trainedTrajectories} trajectories trained, ` +
        `peak ${(step.peakBytes / 2 ** 30).toFixed(2)} GiB`,
    );
  // With --tune the first step also notes its kernel problems; they are tuned, and a second step runs on them.
  if (values.tune) enableKernelTuning(ctx);
  starpo = await measureStarPOStep(actor, backend, options);
  printStep("seconds per phase", starpo);
  if (values.tune) {
    takeSavedTuning();
    const start = performance.now();
    const tuned = await tuneKernels(ctx, tuningOptions());
    console.log(
      `tuned ${measuredCount(tuned, "more ")} in ${((performance.now() - start) / 1000).toFixed(1)} s${leftOut(tuned)}`,
    );
    keepTuning();
    starpoTuned = await measureStarPOStep(actor, backend, options);
    printStep("seconds per phase, tuned kernels", starpoTuned);
  }
  actor.dispose();
}

// ---- report
writeReport(true);
backend.ctx.destroy();
