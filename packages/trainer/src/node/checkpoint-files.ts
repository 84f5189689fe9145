/**
 * Run checkpoints: everything a killed run needs to continue exactly — the actor as a Hugging Face folder
 * (loadable by transformers and by `ragen train model=<dir>/actor`), the critic's weights, both
 * optimisers' moments, and where the training seeds are. A LoRA run's checkpoint holds its adapter in
 * PEFT's layout (adapter_config.json, adapter_model.safetensors) in place of the actor folder, and a
 * LoRA critic's adapters and score head. A checkpoint is written beside the old one and swapped in with
 * renames, so a kill at any moment leaves one complete checkpoint.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  parseSafetensors,
  QWEN2_LINEAR_MODULES,
  type Qwen2Config,
  Qwen2ValueModel,
  readQwen2ValueWeights,
} from "@ragen/models";
import {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  isLoraAdapterFolder,
  readLoraAdapterWeights,
  saveQwen2,
  streamAllFromDevice,
  type TensorToStream,
  writeLoraAdapterFiles,
  writeSafetensorsFile,
} from "@ragen/models/node";
import type { AdamW, AdamWState, Backend, Tensor } from "@ragen/tensor-webgpu";
import { criticCheckpointWeights } from "../run/lora.js";
import type { CheckpointParts, CheckpointState } from "../run/storage.js";

export const CHECKPOINT_DIR = "checkpoint";
const FILES = {
  actor: "actor",
  critic: "critic.safetensors",
  optimizers: "optimizers.safetensors",
  state: "state.json",
} as const;

export function checkpointPath(outDir: string): string {
  return join(outDir, CHECKPOINT_DIR);
}

/** Writes a checkpoint of `parts` at `state` into `<outDir>/checkpoint`, replacing the previous one. */
export async function saveCheckpoint(
  outDir: string,
  parts: CheckpointParts,
  state: CheckpointState,
): Promise<void> {
  const final = checkpointPath(outDir);
  const partial = `${final}.partial`;
  const previous = `${final}.previous`;
  rmSync(partial, { recursive: true, force: true });
  try {
    mkdirSync(partial, { recursive: true });
    await writeCheckpointParts(partial, parts, state);
  } catch (error) {
    // A half-written checkpoint is never used; leaving it would only take the disk space a retry needs.
    rmSync(partial, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    const path = (error as NodeJS.ErrnoException).path ?? partial;
    throw new Error(
      `saving the checkpoint failed: ${code ? `${code} on ${path}` : (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  // Swap: the old checkpoint stays complete until the new one has its final name.
  rmSync(previous, { recursive: true, force: true });
  if (existsSync(final)) renameSync(final, previous);
  renameSync(partial, final);
  rmSync(previous, { recursive: true, force: true });
}

async function writeCheckpointParts(partial: string, parts: CheckpointParts, state: CheckpointState) {
  const adapters = parts.actor.adapters;
  // A LoRA run's base weights are the start model's, unchanged: the adapter alone is saved, which
  // `ragen sft merge` folds into the base and `ragen eval` loads on it.
  if (adapters)
    await writeLoraAdapterFiles(partial, adapters, {
      rank: adapters.options.rank,
      alpha: adapters.options.alpha,
      targets: [...(adapters.options.targets ?? QWEN2_LINEAR_MODULES)],
      baseModel: state.model,
    });
  else
    await saveQwen2(parts.actor, parts.actorConfig, join(partial, FILES.actor), {
      tokenizer: parts.tokenizerFiles.tokenizer,
      ...(parts.tokenizerFiles.tokenizerConfig
        ? { tokenizerConfig: parts.tokenizerFiles.tokenizerConfig }
        : {}),
    });
  // Every safetensors file is streamed: one tensor (or moment) at a time from the device to the disk, so a
  // save needs about the largest tensor's size in host memory, not the checkpoint's.
  if (parts.critic)
    await writeSafetensorsFile(
      join(partial, FILES.critic),
      streamAllFromDevice(criticCheckpointWeights(parts.critic)),
    );
  const { tensors, metadata } = optimizerMoments(parts.optimizers, await lossScalesOf(parts.optimizers));
  await writeSafetensorsFile(join(partial, FILES.optimizers), tensors, metadata);
  // Last, so a `.partial` with a state.json is complete.
  writeFileSync(join(partial, FILES.state), `${JSON.stringify(state, null, 2)}\n`);
}

/** The loss scale of each optimiser that scales, read from the device. */
async function lossScalesOf(
  optimizers: CheckpointParts["optimizers"],
): Promise<Record<string, { scale: number; finiteSteps: number }>> {
  const out: Record<string, { scale: number; finiteSteps: number }> = {};
  for (const [name, optimizer] of Object.entries(optimizers)) {
    const lossScale = await optimizer?.readLossScale();
    if (lossScale) out[name] = lossScale;
  }
  return out;
}

/**
 * Each optimiser's moments as `<name>.<param index>.m|v` (flat, read when written), an f16 weight's f32
 * master copy as `<name>.<param index>.master`, and its step count and loss scale in the metadata.
 */
function optimizerMoments(
  optimizers: CheckpointParts["optimizers"],
  lossScales: Record<string, { scale: number; finiteSteps: number }>,
): {
  tensors: Map<string, TensorToStream>;
  metadata: Record<string, string>;
} {
  const tensors = new Map<string, TensorToStream>();
  const metadata: Record<string, string> = {};
  const flat = (moment: Tensor): TensorToStream => ({
    dtype: "F32",
    shape: [moment.size],
    read: () => moment.floats(),
  });
  for (const [name, optimizer] of Object.entries(optimizers)) {
    if (!optimizer) continue;
    metadata[`${name}.steps`] = String(optimizer.steps);
    if (lossScales[name]) {
      metadata[`${name}.loss_scale`] = String(lossScales[name].scale);
      metadata[`${name}.loss_scale_finite_steps`] = String(lossScales[name].finiteSteps);
    }
    optimizer.params.forEach((_, i) => {
      const moments = optimizer.moments(i);
      if (!moments) return;
      tensors.set(`${name}.${i}.m`, flat(moments.m));
      tensors.set(`${name}.${i}.v`, flat(moments.v));
      if (moments.master) tensors.set(`${name}.${i}.master`, flat(moments.master));
    });
  }
  return { tensors, metadata };
}

/** A checkpoint folder's state, when the folder is complete; why not, otherwise. */
function readCheckpointDir(dir: string): { state: CheckpointState } | { problem: string } {
  const statePath = join(dir, FILES.state);
  if (!existsSync(statePath)) return { problem: `${statePath}: missing` };
  let state: CheckpointState;
  try {
    state = JSON.parse(readFileSync(statePath, "utf8")) as CheckpointState;
  } catch (error) {
    return { problem: `${statePath}: not valid JSON (${(error as Error).message})` };
  }
  if (!Number.isInteger(state?.step) || !Number.isInteger(state?.trainResets))
    return { problem: `${statePath}: not a checkpoint state (step and trainResets must be integers)` };
  if (state.lora) {
    for (const file of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE])
      if (!existsSync(join(dir, file))) return { problem: `${join(dir, file)}: missing` };
  } else {
    const actorConfig = join(dir, FILES.actor, "config.json");
    if (!existsSync(actorConfig)) return { problem: `${actorConfig}: missing` };
  }
  const optimizersPath = join(dir, FILES.optimizers);
  if (!existsSync(optimizersPath)) return { problem: `${optimizersPath}: missing` };
  try {
    parseSafetensors(readFileSync(optimizersPath), { fileName: optimizersPath });
  } catch (error) {
    return { problem: `${optimizersPath}: unreadable (${(error as Error).message})` };
  }
  return { state };
}

/**
 * The checkpoint to resume from. The save writes `.partial` completely (state.json last), then renames
 * checkpoint → `.previous` and `.partial` → checkpoint, so whatever the point of death: `checkpoint`
 * wins; without it a complete `.partial` (newer than `.previous`); else `.previous`. With `repair` (only
 * for the run that holds the folder's lock) the chosen one is renamed to `checkpoint` and the others
 * removed, so the next save starts from a clean swap. `checkpoint` only ever gets its name complete, so a
 * broken one was damaged afterwards: an error naming the file, never silently passed over.
 */
export function findCheckpoint(
  outDir: string,
  options: { repair?: boolean } = {},
): { dir: string; state: CheckpointState } | undefined {
  const final = checkpointPath(outDir);
  const partial = `${final}.partial`;
  const previous = `${final}.previous`;
  if (existsSync(final)) {
    const found = readCheckpointDir(final);
    if ("state" in found) return { dir: final, state: found.state };
    throw new Error(`${found.problem}; the run's checkpoint is damaged`);
  }
  for (const dir of [partial, previous]) {
    if (!existsSync(dir)) continue;
    const found = readCheckpointDir(dir);
    if (!("state" in found)) continue;
    if (!options.repair) return { dir, state: found.state };
    rmSync(final, { recursive: true, force: true });
    renameSync(dir, final);
    for (const other of [partial, previous]) rmSync(other, { recursive: true, force: true });
    return { dir: final, state: found.state };
  }
  return undefined;
}

/**
 * Where a checkpoint's actor loads from: its actor folder (a Hugging Face model folder), or for a LoRA
 * run the checkpoint folder itself, whose adapter loads on the base model it names.
 */
export function checkpointActorDir(dir: string): string {
  const actor = join(dir, FILES.actor);
  return !existsSync(actor) && isLoraAdapterFolder(dir) ? dir : actor;
}

/**
 * A LoRA run's trained tensors in checkpoint `dir`: the actor's adapter by PEFT name, or the critic's
 * adapters and score head.
 */
export function loadCheckpointAdapters(dir: string, part: "actor" | "critic"): Map<string, Float32Array> {
  if (part === "actor") return readLoraAdapterWeights(dir);
  const path = join(dir, FILES.critic);
  const file = parseSafetensors(readFileSync(path), { fileName: path });
  return new Map(file.names().map((name) => [name, file.toFloat32(name)]));
}

/**
 * The critic saved in a checkpoint, on `backend`: every tensor present with the config's shape and
 * finite, as for the actor, so a damaged critic stops the resume instead of training on garbage.
 */
export function loadCheckpointCritic(dir: string, config: Qwen2Config, backend: Backend): Qwen2ValueModel {
  const path = join(dir, FILES.critic);
  const file = parseSafetensors(readFileSync(path), { fileName: path });
  const weights = readQwen2ValueWeights({ config, weights: file }, { source: path });
  return Qwen2ValueModel.fromWeights(config, weights, backend);
}

/** Restores the optimisers' moments saved under the same names. */
export function loadCheckpointOptimizers(dir: string, optimizers: Record<string, AdamW | undefined>): void {
  const file = parseSafetensors(readFileSync(join(dir, FILES.optimizers)), { fileName: FILES.optimizers });
  for (const [name, optimizer] of Object.entries(optimizers)) {
    if (!optimizer) continue;
    const steps = Number(file.header.metadata[`${name}.steps`] ?? Number.NaN);
    if (!Number.isInteger(steps))
      throw new Error(`${join(dir, FILES.optimizers)}: no saved state for the ${name} optimiser`);
    const state: AdamWState = {
      steps,
      moments: optimizer.params.map((_, i) => {
        if (!file.has(`${name}.${i}.m`)) return undefined;
        const moment = { m: file.toFloat32(`${name}.${i}.m`), v: file.toFloat32(`${name}.${i}.v`) };
        const master = `${name}.${i}.master`;
        return file.has(master) ? { ...moment, master: file.toFloat32(master) } : moment;
      }),
    };
    const scale = file.header.metadata[`${name}.loss_scale`];
    if (scale !== undefined)
      state.lossScale = {
        scale: Number(scale),
        finiteSteps: Number(file.header.metadata[`${name}.loss_scale_finite_steps`] ?? 0),
      };
    optimizer.loadStateDict(state);
  }
}
