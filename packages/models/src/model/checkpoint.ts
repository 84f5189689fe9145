/**
 * Loading and saving Qwen2 models as Hugging Face folders (Node only): a local folder or a Hub repo id in,
 * config.json + model.safetensors (+ tokenizer files) out — a folder transformers loads as is.
 */
import type { Backend } from "@ragen/tensor-webgpu";
import type { Qwen2Config } from "../io/config.js";
import { type ModelFolder, writeModelFolder } from "../io/folder.js";
import { loadModelFolder, type ResolveModelOptions } from "../io/hub.js";
import type { FloatDtype } from "../io/safetensors.js";
import { streamAllFromDevice } from "../io/safetensors-writer.js";
import { Qwen2Model } from "./qwen2.js";
import { type ReadQwen2WeightsOptions, readQwen2Weights } from "./weights.js";

export interface LoadedQwen2 {
  model: Qwen2Model;
  folder: ModelFolder;
}

export interface LoadQwen2Options extends ResolveModelOptions, ReadQwen2WeightsOptions {}

/**
 * Load a model from a local folder or a Hub repo id ("Qwen/Qwen2.5-0.5B-Instruct") onto `backend`.
 * Tensors the config does not use are refused unless `ignoreUnexpected` (see readQwen2Weights).
 */
export async function loadQwen2(
  reference: string,
  backend: Backend,
  options: LoadQwen2Options = {},
): Promise<LoadedQwen2> {
  const folder = await loadModelFolder(reference, options);
  const model = Qwen2Model.fromWeights(folder.config, readQwen2Weights(folder, options), backend);
  return { model, folder };
}

export interface SaveQwen2Options {
  /** Stored dtype (default F32: bit-exact reloads). */
  dtype?: FloatDtype;
  tokenizer?: unknown;
  tokenizerConfig?: Readonly<Record<string, unknown>>;
  generationConfig?: Readonly<Record<string, unknown>>;
  overwrite?: boolean;
}

/**
 * Save `model` as a Hugging Face folder, atomically (a crash never leaves half a checkpoint). Weights are
 * read from the device and written one tensor at a time, so the host needs about the largest tensor's
 * size, not the model's.
 */
export async function saveQwen2(
  model: Qwen2Model,
  config: Qwen2Config,
  path: string,
  options: SaveQwen2Options = {},
): Promise<void> {
  const dtype = options.dtype ?? "F32";
  // Read from the device one weight at a time as the file is written, never the whole model at once.
  const tensors = streamAllFromDevice(model.params, dtype);
  await writeModelFolder(
    path,
    {
      config: {
        ...config,
        torchDtype: dtype === "F32" ? "float32" : dtype === "F16" ? "float16" : "bfloat16",
      },
      tensors,
      tokenizer: options.tokenizer,
      tokenizerConfig: options.tokenizerConfig,
      generationConfig: options.generationConfig,
    },
    { overwrite: options.overwrite },
  );
}
