/**
 * A small random Qwen2 with a vocabulary trained on env chats, saved as a Hugging Face folder: jobs load
 * it exactly as they load the embedded model or a downloaded one. For tests and smoke runs of examples.
 */
import { parseQwen2Config, Qwen2Model } from "@ragen/models";
import { saveQwen2 } from "@ragen/models/node";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { trainBpeTokenizer } from "@ragen/tokenizer";
import { generateSftConversations, sftCorpus } from "../sft-data.js";

export interface TinyModelOptions {
  /** Env tags whose chats the vocabulary is trained on. */
  envTags: readonly string[];
  /** Default 320. */
  vocabSize?: number;
  /** Initialisation seed, default 3. */
  seed?: number;
}

/** Saves the model into `dir` (which must not exist yet, or be empty). */
export async function saveTinyModel(dir: string, options: TinyModelOptions): Promise<void> {
  const chats = options.envTags.flatMap((envTag) =>
    generateSftConversations({ envTag, seeds: [1, 2, 3, 4], oracleProbability: 0.5 }),
  );
  const trained = trainBpeTokenizer(sftCorpus(chats), {
    vocabSize: options.vocabSize ?? 320,
    addedTokens: ["<think>", "</think>", "<answer>", "</answer>"],
  });
  const config = parseQwen2Config({
    architectures: ["Qwen2ForCausalLM"],
    model_type: "qwen2",
    vocab_size: trained.tokenizer.vocabSize,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: true,
    max_position_embeddings: 4096,
    eos_token_id: trained.tokenizer.imEndId,
  });
  const model = Qwen2Model.random(config, options.seed ?? 3, await webGpuBackend());
  try {
    await saveQwen2(model, config, dir, {
      tokenizer: trained.tokenizerJson,
      tokenizerConfig: trained.tokenizerConfig as unknown as Record<string, unknown>,
    });
  } finally {
    model.dispose();
  }
}
