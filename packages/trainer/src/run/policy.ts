/** The policy a run trains, as its loader hands it over, and what the loop needs to know about it. */
import type { Qwen2Config, Qwen2Model } from "@ragen/models";
import type { Backend } from "@ragen/tensor-webgpu";
import type { Tokenizer } from "@ragen/tokenizer";

export interface LoadedPolicy {
  model: Qwen2Model;
  config: Qwen2Config;
  tokenizer: Tokenizer;
  /** Where the weights were read from (a folder, a URL), for messages. */
  source: string;
  /** tokenizer.json and tokenizer_config.json as read, so checkpoints carry them on. */
  tokenizerFiles: { tokenizer: unknown; tokenizerConfig: Record<string, unknown> | undefined };
  /** The model's name and a hash of its weights: A*-PO's V* cache keys, never reused for other weights. */
  identity(): Promise<string>;
}

/** Loads a model by name ("embedded", a folder, a Hub id, a checkpoint's actor) on `backend`. */
export type PolicyLoader = (
  name: string,
  backend: Backend,
  onProgress?: (loaded: number, total: number) => void,
) => Promise<LoadedPolicy>;

/** How many weights the model has (the small-model profile depends on it). */
export function parameterCount(model: Qwen2Model): number {
  return model.parameters().reduce((total, weights) => total + weights.size, 0);
}
