/**
 * Exporting a Qwen2 model as an f32 GGUF file that llama.cpp loads as the "qwen2" architecture (Node
 * only). Its purpose is checking this engine against an independent one: feed both the same token ids
 * and compare their next-token log-probabilities.
 */
import type { Qwen2Config } from "../io/config.js";
import { GgufError } from "../io/gguf.js";
import { type Qwen2GgufMetadataOptions, qwen2GgufMetadata, qwen2GgufTensors } from "../io/gguf-qwen2.js";
import { type GgufTensorToStream, writeGgufFile } from "../io/gguf-writer.js";
import type { Qwen2Model } from "./qwen2.js";

export interface ExportQwen2GgufOptions extends Qwen2GgufMetadataOptions {
  /** Replace an existing file (default: refuse). */
  overwrite?: boolean;
}

/**
 * Writes `model`'s weights (read from the device one tensor at a time) with `config`'s hyperparameters
 * and the tokenizer to `path`. Attached LoRA adapters are not part of the weights: merge them first
 * (`model.mergeLora()`), else the export refuses.
 */
export async function exportQwen2Gguf(
  model: Qwen2Model,
  config: Qwen2Config,
  path: string,
  options: ExportQwen2GgufOptions,
): Promise<{ byteLength: number }> {
  if (model.adapters !== undefined) {
    throw new GgufError(
      `${path}: the model has LoRA adapters attached; merge them (mergeLora()) before exporting`,
    );
  }
  const metadata = qwen2GgufMetadata(config, options);
  const sources = new Map<string, GgufTensorToStream>();
  for (const [name, tensor] of model.params)
    sources.set(name, { shape: tensor.shape, read: () => tensor.floats() });
  return writeGgufFile(path, metadata, qwen2GgufTensors(sources), { overwrite: options.overwrite });
}
