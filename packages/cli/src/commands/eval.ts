/**
 * `ragen eval <model> [config.yaml] [key=value ...]`: validation only, on the job's fixed seeds, beside
 * the oracle and random baselines. `<model>`: a run folder, its checkpoint/ or checkpoint/actor, a Hugging
 * Face folder, a LoRA adapter folder, "embedded" or a Hub id.
 */
import { formatEvalSummary, parseRunArguments, resolveRunSettings, runEval } from "@ragen/trainer/node";
import { commandCwd, UsageError } from "./usage.js";

export const EVAL_HELP = `usage: ragen eval <model> [--config file.yaml] [key=value ...]

Plays the validation seeds (123, 124, ...) as the training job validates, with the oracle and a random
policy on the same seeds, and writes metrics.jsonl, trajectories.jsonl, summary.json, config.json and
report.html to outDir (default runs/eval; an earlier evaluation there is replaced, a training run's
folder is refused).

<model>: a run folder (its checkpoint's actor), a checkpoint/ or checkpoint/actor folder, a Hugging Face
model folder, "embedded", or a Hub repo id. A LoRA run's checkpoint (or any PEFT adapter folder) loads
on the base model its adapter_config.json names, the adapter merged in. Useful fields (ragen train --help lists them all):
  envs=FrozenLake,Bandit  validation.groupsPerEnv=64  validation.temperature=0.5  rollout.maxTurns=5
  rollout.maxNewTokens=48  seed=0  outDir=runs/eval`;

const EVAL_OUT_DIR = "runs/eval";

export async function evalCommand(args: readonly string[]): Promise<void> {
  const [first, ...rest] = args;
  if (first === undefined || first === "--help" || first === "-h" || args.includes("--help")) {
    if (first === undefined) throw new UsageError(`which model? \n\n${EVAL_HELP}`);
    console.log(EVAL_HELP);
    return;
  }
  const modelArgs = first.includes("=") || first.startsWith("-") ? args : [`model=${first}`, ...rest];
  const { configFile, overrides } = parseRunArguments(modelArgs);
  const { settings: config } = await resolveRunSettings({
    configFile,
    overrides,
    cwd: commandCwd(),
    experiment: [{ source: "ragen eval", overrides: [`outDir=${EVAL_OUT_DIR}`] }],
    training: false,
    // Evaluation trains nothing, so the size-dependent learning rates do not matter (and a run folder has no config.json).
    sizeModel: false,
  });
  console.log(`RAGEN.ts eval — ${config.model} on ${config.validation.groupsPerEnv} seeds per env\n`);
  const summary = await runEval(config);
  console.log(`\n${formatEvalSummary(summary)}\n\nreport: ${summary.report}`);
}
