/**
 * A PolicyLoader with no files, as a browser page would have: a tiny random model built in memory, and
 * the actors a MemoryRunStorage checkpoint keeps, loaded back by their source name.
 */
import { Qwen2Model } from "@ragen/models";
import { tinyModel } from "@ragen/sft";
import { type Backend, webGpuBackend } from "@ragen/tensor-webgpu";
import {
  type LoadedPolicy,
  type MemoryRunStorage,
  type PolicyLoader,
  runTraining,
  type TrainingRun,
  type TrainingSummary,
} from "../../src/index.js";

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

/** Runs a training on `storage` with the in-memory model, quietly, as a browser page would. */
export async function trainInMemory(
  { settings, sources }: Pick<TrainingRun, "settings" | "sources">,
  storage: MemoryRunStorage,
  extra: Partial<TrainingRun> = {},
): Promise<TrainingSummary> {
  return runTraining({
    settings,
    sources,
    backend: await webGpuBackend(),
    storage,
    loadPolicy: memoryPolicyLoader(storage, settings.envs),
    say: () => {},
    ...extra,
  });
}
