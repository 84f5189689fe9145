/**
 * LoRA adapters on disk in PEFT's layout — adapter_config.json and adapter_model.safetensors with
 * `base_model.model.<module>.lora_A.weight` / `lora_B.weight` — so PEFT loads ours and we load PEFT's
 * (unmerged F32/F16/BF16 weights of a Qwen2 base). The folder is written beside its final name and
 * renamed into place, so a crash never leaves half an adapter.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { LoraAdapters } from "@ragen/models";
import { type AdapterConfig, writeLoraAdapterFiles } from "@ragen/models/node";

// The layout itself lives with the model (training checkpoints write it too); these names stay here for
// existing imports.
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  type AdapterConfig,
  loadLoraAdapter,
  readAdapterConfig,
} from "@ragen/models/node";

/** Saves the attached adapters of `model` into `dir` (replacing an adapter folder there). */
export async function saveLoraAdapter(
  dir: string,
  adapters: LoraAdapters,
  config: AdapterConfig,
): Promise<void> {
  await writeFolderAtomic(dir, (folder) => writeLoraAdapterFiles(folder, adapters, config));
}

/** Fills a new folder with `write` and renames it to `dir`, replacing what was there. */
async function writeFolderAtomic(dir: string, write: (folder: string) => Promise<void>): Promise<void> {
  const target = resolve(dir);
  const parent = dirname(target);
  mkdirSync(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const partial = join(parent, `.${basename(target)}.tmp-${suffix}`);
  mkdirSync(partial);
  try {
    await write(partial);
    const previous = join(parent, `.${basename(target)}.old-${suffix}`);
    if (existsSync(target)) renameSync(target, previous);
    renameSync(partial, target);
    rmSync(previous, { recursive: true, force: true });
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
}
