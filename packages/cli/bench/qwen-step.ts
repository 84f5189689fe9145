/**
 * One StarPO step of a Qwen2.5-0.5B-shaped model, run as a new user would run it: Qwen2.5-0.5B-Instruct's
 * config, random weights, Qwen's tokenizer files, `ragen train profile=ragen` with LoRA, then `ragen
 * eval` on the checkpoint it wrote. Only the batch, the validation seeds and the new tokens are shrunk.
 * Prints the seconds of each phase, the process's peak resident memory (sampled from /proc) beside
 * estimateTrainingMemory's figure for the same settings, and writes them to <work>/qwen-step.json.
 *
 *   pnpm bench:qwen-step [-- work=/tmp/qwen-step key=value ...]     (extra key=values go to ragen train)
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { estimateTrainingMemory, QWEN2_5_0_5B_INSTRUCT_CONFIG } from "@ragen/models";
import { type TrainingSettings, trainingMemoryOptions } from "@ragen/trainer";
import { writeRandomQwenFolder } from "../scripts/random-qwen-folder.js";

const GiB = 2 ** 30;
const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const args = process.argv.slice(2);
const work = args.find((a) => a.startsWith("work="))?.slice(5) ?? "/tmp/qwen-step";
const extra = args.filter((a) => !a.startsWith("work="));

/** What the run trains: RAGEN's base config with LoRA, shrunk to one group of two Bandit episodes. */
export const STEP_SETTINGS = {
  envGroups: 1,
  groupSize: 2,
  maxNewTokens: 16,
  validationSeeds: 1,
  loraRank: 64,
};

const trainArgs = (model: string, outDir: string) => [
  "train",
  "profile=ragen",
  `model=${model}`,
  `outDir=${outDir}`,
  "steps=1",
  "envs=Bandit",
  `train.envGroups=${STEP_SETTINGS.envGroups}`,
  `train.groupSize=${STEP_SETTINGS.groupSize}`,
  `rollout.maxNewTokens=${STEP_SETTINGS.maxNewTokens}`,
  `validation.groupsPerEnv=${STEP_SETTINGS.validationSeeds}`,
  `lora.rank=${STEP_SETTINGS.loraRank}`,
  "lora.critic=true",
  ...extra,
];

interface Measured {
  seconds: number;
  peakRssBytes: number;
  exitCode: number | null;
}

/** Runs `node bin.js ...argv`, echoing its output, and samples its peak resident set (VmHWM). */
function runMeasured(argv: string[]): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [bin, ...argv], { stdio: "inherit" });
    let peak = 0;
    const sample = () => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
        const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
        peak = Math.max(peak, kb * 1024);
      } catch {
        // The process has ended between two samples.
      }
    };
    const timer = setInterval(sample, 100);
    child.on("error", reject);
    child.on("exit", (exitCode) => {
      clearInterval(timer);
      resolve({ seconds: (performance.now() - start) / 1000, peakRssBytes: peak, exitCode });
    });
  });
}

mkdirSync(work, { recursive: true });
const model = join(work, "qwen2.5-0.5b-random");
const folderStart = performance.now();
await writeRandomQwenFolder(model, QWEN2_5_0_5B_INSTRUCT_CONFIG);
console.log(`model folder ready in ${((performance.now() - folderStart) / 1000).toFixed(1)} s: ${model}`);

const outDir = join(work, "run");
rmSync(outDir, { recursive: true, force: true });
const train = await runMeasured(trainArgs(model, outDir));
if (train.exitCode !== 0) throw new Error(`ragen train exited with ${train.exitCode}`);
const evalDir = join(work, "eval");
rmSync(evalDir, { recursive: true, force: true });
const evaluation = await runMeasured([
  "eval",
  outDir,
  `outDir=${evalDir}`,
  "validation.groupsPerEnv=1",
  "rollout.maxNewTokens=16",
]);
if (evaluation.exitCode !== 0) throw new Error(`ragen eval exited with ${evaluation.exitCode}`);

const rows = readFileSync(join(outDir, "metrics.jsonl"), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line) as Record<string, number>);
const step = rows.find((row) => row.step === 1);
if (!step) throw new Error(`${outDir}/metrics.jsonl has no row for step 1`);
const metric = (name: string): number | undefined => step[name];
const longest = metric("perf/max_sequence_length") ?? 0;
// The run's own settings, as it saved them, through the same options its start-up check used.
const saved = JSON.parse(readFileSync(join(outDir, "config.json"), "utf8")) as { settings: TrainingSettings };
const estimate = estimateTrainingMemory(
  QWEN2_5_0_5B_INSTRUCT_CONFIG,
  trainingMemoryOptions(saved.settings, Math.max(1, longest)),
);
const phases = ["gen", "ref", "values", "adv", "update_critic", "update_actor", "step"] as const;
const result = {
  settings: { ...STEP_SETTINGS, extra },
  longestSequence: longest,
  seconds: {
    train: train.seconds,
    eval: evaluation.seconds,
    ...Object.fromEntries(phases.map((p) => [p, metric(`timing_s/${p}`)])),
  },
  peakRssGiB: { train: train.peakRssBytes / GiB, eval: evaluation.peakRssBytes / GiB },
  // The buffer pool's peak of bytes held by tensors: what the estimate predicts.
  deviceMemoryPeakGiB: metric("perf/max_memory"),
  estimateGiB: {
    peak: estimate.peak / GiB,
    training: estimate.trainingPeak / GiB,
    rollout: estimate.rolloutPeak / GiB,
  },
};
writeFileSync(join(work, "qwen-step.json"), `${JSON.stringify(result, null, 2)}\n`);
console.log(`\n${JSON.stringify(result, null, 2)}`);
if (!existsSync(join(outDir, "checkpoint"))) throw new Error(`${outDir} has no checkpoint`);
