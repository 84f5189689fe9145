/**
 * LoRA adapters on disk in PEFT's layout — adapter_config.json and adapter_model.safetensors with
 * `base_model.model.<module>.lora_A.weight` / `lora_B.weight` — so PEFT loads ours and we load PEFT's
 * (unmerged F32/F16/BF16 weights of a Qwen2 base). The folder is written beside its final name and
 * renamed into place, so a crash never leaves half an adapter.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { type LoraAdapters, parseSafetensors, QWEN2_LINEAR_MODULES, type Qwen2Model } from "@ragen/models";
import { streamAllFromDevice, writeSafetensorsFile } from "@ragen/models/node";
import { noGrad, tensor, writeSlice } from "@ragen/tensor-webgpu";

export const ADAPTER_CONFIG_FILE = "adapter_config.json";
export const ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors";

type LoraTarget = (typeof QWEN2_LINEAR_MODULES)[number];

export interface AdapterConfig {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  /** The base model as the user named it. */
  baseModel: string;
}

/** Saves the attached adapters of `model` into `dir` (replacing an adapter folder there). */
export async function saveLoraAdapter(
  dir: string,
  adapters: LoraAdapters,
  config: AdapterConfig,
): Promise<void> {
  const peftConfig = {
    peft_type: "LORA",
    task_type: "CAUSAL_LM",
    base_model_name_or_path: config.baseModel,
    r: config.rank,
    lora_alpha: config.alpha,
    lora_dropout: 0,
    target_modules: config.targets,
    bias: "none",
    fan_in_fan_out: false,
    inference_mode: true,
    use_rslora: false,
    use_dora: false,
  };
  await writeFolderAtomic(dir, async (folder) => {
    writeFileSync(join(folder, ADAPTER_CONFIG_FILE), `${JSON.stringify(peftConfig, null, 2)}\n`);
    // lora_A [rank, in] and lora_B [out, rank], read from the device one at a time as they are written.
    await writeSafetensorsFile(
      join(folder, ADAPTER_WEIGHTS_FILE),
      streamAllFromDevice(adapters.peftWeights()),
      { format: "pt" },
    );
  });
}

/** The adapter settings in `dir`'s adapter_config.json; throws naming what is missing or unsupported. */
export function readAdapterConfig(dir: string): AdapterConfig {
  const path = join(dir, ADAPTER_CONFIG_FILE);
  if (!existsSync(path)) throw new Error(`${dir}: no ${ADAPTER_CONFIG_FILE} (not a LoRA adapter folder)`);
  const json = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  const rank = json.r;
  const alpha = json.lora_alpha ?? rank;
  if (json.peft_type !== undefined && json.peft_type !== "LORA")
    throw new Error(`${path}: peft_type ${JSON.stringify(json.peft_type)} is not LORA`);
  if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 1)
    throw new Error(`${path}: "r" must be a positive integer`);
  if (typeof alpha !== "number" || !(alpha > 0)) throw new Error(`${path}: "lora_alpha" must be positive`);
  if (json.use_dora === true || json.use_rslora === true)
    throw new Error(`${path}: DoRA and rsLoRA adapters are not supported`);
  const targets = json.target_modules ?? [...QWEN2_LINEAR_MODULES];
  if (
    !Array.isArray(targets) ||
    targets.some((t) => !(QWEN2_LINEAR_MODULES as readonly string[]).includes(t))
  )
    throw new Error(`${path}: target_modules must be among ${QWEN2_LINEAR_MODULES.join(", ")}`);
  return {
    rank,
    alpha,
    targets: targets as LoraTarget[],
    baseModel: String(json.base_model_name_or_path ?? ""),
  };
}

/** Attaches the adapter saved in `dir` to `model` (which must have no adapters yet); returns them. */
export function loadLoraAdapter(model: Qwen2Model, dir: string): LoraAdapters {
  const config = readAdapterConfig(dir);
  const weightsPath = join(dir, ADAPTER_WEIGHTS_FILE);
  if (!existsSync(weightsPath)) throw new Error(`${dir}: no ${ADAPTER_WEIGHTS_FILE}`);
  const file = parseSafetensors(readFileSync(weightsPath), { fileName: ADAPTER_WEIGHTS_FILE });
  const adapters = model.attachLora({ rank: config.rank, alpha: config.alpha, targets: config.targets });
  const expected = new Set<string>();
  noGrad(() => {
    for (const parameter of adapters.parameters()) {
      const name = `base_model.model.${parameter.name}`;
      expected.add(name);
      if (!file.has(name)) throw new Error(`${weightsPath}: no tensor ${name}`);
      const values = file.toFloat32(name);
      if (values.length !== parameter.size)
        throw new Error(
          `${weightsPath}: ${name} has ${values.length} values, the model needs ${parameter.size}`,
        );
      const source = tensor(values, parameter.shape, { backend: parameter.storage.backend });
      writeSlice(parameter, source, 0, 0);
      source.dispose();
    }
  });
  const extra = file.names().filter((name) => !expected.has(name));
  if (extra.length > 0) {
    model.detachLora();
    throw new Error(`${weightsPath}: tensors this model has no place for, e.g. ${extra[0]}`);
  }
  return adapters;
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
