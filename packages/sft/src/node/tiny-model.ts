import { saveQwen2 } from "@ragen/models/node";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { type TinyModelOptions, tinyModel } from "../tiny-model.js";

/**
 * Saves a tiny model (`tinyModel`) into `dir` (which must not exist yet, or be empty) as a Hugging Face
 * folder: jobs load it exactly as they load the embedded model or a downloaded one.
 */
export async function saveTinyModel(dir: string, options: TinyModelOptions): Promise<void> {
  const backend = await webGpuBackend();
  const { model, config, trained } = tinyModel(options, backend);
  try {
    await saveQwen2(model, config, dir, {
      tokenizer: trained.tokenizerJson,
      tokenizerConfig: trained.tokenizerConfig as unknown as Record<string, unknown>,
    });
  } finally {
    model.dispose();
    backend.destroy();
  }
}
