/**
 * LoRA adapters on disk in PEFT's layout — adapter_config.json and adapter_model.safetensors with
 * `base_model.model.<module>.lora_A.weight` / `lora_B.weight` — so PEFT loads ours and we load PEFT's
 * (unmerged F32/F16/BF16 weights of a Qwen2 base). The files go into a folder the caller chooses: an
 * adapter folder of its own, or a training checkpoint beside its optimiser state.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseSafetensors } from "../io/safetensors.js";
import { streamAllFromDevice, writeSafetensorsFile } from "../io/safetensors-writer.js";
import { type LoraAdapters, type LoraTarget, QWEN2_LINEAR_MODULES } from "./lora.js";
import type { Qwen2Model } from "./qwen2.js";

export const ADAPTER_CONFIG_FILE = "adapter_config.json";
export const ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors";

export interface AdapterConfig {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  /** The base model as the user named it. */
  baseModel: string;
}

/** Whether `dir` holds a LoRA adapter (its adapter_config.json). */
export function isLoraAdapterFolder(dir: string): boolean {
  return existsSync(join(dir, ADAPTER_CONFIG_FILE));
}

/**
 * Writes `adapters` into the existing folder `dir` as adapter_config.json and adapter_model.safetensors,
 * each tensor read from the device as it is written.
 */
export async function writeLoraAdapterFiles(
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
  writeFileSync(join(dir, ADAPTER_CONFIG_FILE), `${JSON.stringify(peftConfig, null, 2)}\n`);
  // lora_A [rank, in] and lora_B [out, rank].
  await writeSafetensorsFile(join(dir, ADAPTER_WEIGHTS_FILE), streamAllFromDevice(adapters.peftWeights()), {
    format: "pt",
  });
}

/** The adapter settings in `dir`'s adapter_config.json; throws naming what is missing or unsupported. */
export function readAdapterConfig(dir: string): AdapterConfig {
  const path = join(dir, ADAPTER_CONFIG_FILE);
  if (!existsSync(path)) throw new Error(`${dir}: no ${ADAPTER_CONFIG_FILE} (not a LoRA adapter folder)`);
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`);
  }
  const rank = json.r;
  const alpha = json.lora_alpha ?? rank;
  if (json.peft_type !== undefined && json.peft_type !== "LORA")
    throw new Error(`${path}: peft_type ${JSON.stringify(json.peft_type)} is not LORA`);
  if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 1)
    throw new Error(`${path}: "r" must be a positive integer`);
  if (typeof alpha !== "number" || !(alpha > 0)) throw new Error(`${path}: "lora_alpha" must be positive`);
  if (json.use_dora === true || json.use_rslora === true)
    throw new Error(`${path}: DoRA and rsLoRA adapters are not supported`);
  // PEFT writes "all-linear" as the list it expanded to, but a config may still say it.
  const named = json.target_modules ?? [...QWEN2_LINEAR_MODULES];
  const targets = named === "all-linear" ? [...QWEN2_LINEAR_MODULES] : named;
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

/** The adapter's tensors in `dir`, by their PEFT names, as f32. */
export function readLoraAdapterWeights(dir: string): Map<string, Float32Array> {
  const path = join(dir, ADAPTER_WEIGHTS_FILE);
  if (!existsSync(path)) throw new Error(`${dir}: no ${ADAPTER_WEIGHTS_FILE}`);
  const file = parseSafetensors(readFileSync(path), { fileName: path });
  return new Map(file.names().map((name) => [name, file.toFloat32(name)]));
}

/**
 * Attaches the adapter saved in `dir` to `model` (which must have no adapters yet) and returns it; a
 * file that does not fit the model leaves the model without adapters.
 */
export function loadLoraAdapter(model: Qwen2Model, dir: string): LoraAdapters {
  const config = readAdapterConfig(dir);
  const weights = readLoraAdapterWeights(dir);
  const adapters = model.attachLora({ rank: config.rank, alpha: config.alpha, targets: config.targets });
  try {
    adapters.load(weights, join(dir, ADAPTER_WEIGHTS_FILE));
  } catch (error) {
    model.detachLora();
    throw error;
  }
  return adapters;
}
