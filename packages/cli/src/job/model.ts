/**
 * The policy the job trains: the embedded tiny checkpoint shipped with this package, a local Hugging
 * Face folder, or a Hub repo id (downloaded into the standard Hugging Face cache).
 */

import type { Qwen2Config, Qwen2Model } from "@ragen/models";
import { loadQwen2 } from "@ragen/models/node";
import type { Backend } from "@ragen/tensor-webgpu";
import type { Tokenizer } from "@ragen/tokenizer";
import { loadTokenizer } from "@ragen/tokenizer/node";
import { EMBEDDED_MODEL_DIR } from "../embedded-model.js";
import { EMBEDDED_MODEL } from "./config.js";

export interface LoadedPolicy {
  model: Qwen2Model;
  config: Qwen2Config;
  tokenizer: Tokenizer;
  /** The folder the weights were read from. */
  path: string;
  /** tokenizer.json and tokenizer_config.json as read, so checkpoints carry them on. */
  tokenizerFiles: { tokenizer: unknown; tokenizerConfig: Record<string, unknown> | undefined };
}

/** `reference`: "embedded", a folder, or a Hub repo id. */
export async function loadPolicy(
  reference: string,
  backend: Backend,
  onProgress?: (loaded: number, total: number) => void,
): Promise<LoadedPolicy> {
  const source = reference === EMBEDDED_MODEL ? EMBEDDED_MODEL_DIR : reference;
  const { model, folder } = await loadQwen2(source, backend, {
    ...(onProgress ? { onProgress: (p) => onProgress(p.bytesDone, p.bytesTotal) } : {}),
  });
  const tokenizer = await loadTokenizer(folder.path);
  if (tokenizer.imEndId === undefined)
    throw new Error(`${folder.path}: the tokenizer has no <|im_end|> token, so responses could never end`);
  return {
    model,
    config: folder.config,
    tokenizer,
    path: folder.path,
    tokenizerFiles: { tokenizer: folder.tokenizer, tokenizerConfig: folder.tokenizerConfig },
  };
}

/** How many weights the model has (its learning-rate defaults depend on it). */
export function parameterCount(model: Qwen2Model): number {
  return model.parameters().reduce((total, weights) => total + weights.size, 0);
}
