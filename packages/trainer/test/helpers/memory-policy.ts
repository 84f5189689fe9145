/**
 * A PolicyLoader with no files, as a browser page would have: a tiny random model built in memory, and
 * the actors a MemoryRunStorage checkpoint keeps, loaded back by their source name.
 */
import { Qwen2Model } from "@ragen/models";
import { tinyModel } from "@ragen/sft";
import type { Backend } from "@ragen/tensor-webgpu";
import type { LoadedPolicy, MemoryRunStorage, PolicyLoader } from "../../src/index.js";

export function memoryPolicyLoader(storage: MemoryRunStorage, envTags: readonly string[]): PolicyLoader {
  return async (name: string, backend: Backend): Promise<LoadedPolicy> => {
    const tiny = tinyModel({ envTags }, backend);
    const saved = storage.actors.get(name);
    let model = tiny.model;
    if (saved) {
      tiny.model.dispose();
      model = Qwen2Model.fromWeights(tiny.config, saved, backend);
    }
    return {
      model,
      config: tiny.config,
      tokenizer: tiny.trained.tokenizer,
      source: name,
      tokenizerFiles: { tokenizer: tiny.trained.tokenizerJson, tokenizerConfig: undefined },
      identity: async () => `${name}#memory`,
    };
  };
}
