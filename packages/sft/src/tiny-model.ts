/**
 * A small random Qwen2 with a vocabulary trained on env chats, built in memory: for tests and smoke runs
 * (`saveTinyModel` in "@ragen/sft/node" saves it as a Hugging Face folder).
 */
import { parseQwen2Config, type Qwen2Config, Qwen2Model } from "@ragen/models";
import type { Backend } from "@ragen/tensor-webgpu";
import { type TrainedTokenizer, trainBpeTokenizer } from "@ragen/tokenizer";
import { generateSftConversations, sftCorpus } from "./sft-data.js";

export interface TinyModelOptions {
  /** Env tags whose chats the vocabulary is trained on. */
  envTags: readonly string[];
  /** Default 320. */
  vocabSize?: number;
  /** Initialisation seed, default 3. */
  seed?: number;
}

export interface TinyModel {
  model: Qwen2Model;
  config: Qwen2Config;
  /** The trained vocabulary: the tokenizer and its tokenizer.json / tokenizer_config.json. */
  trained: TrainedTokenizer;
}

export function tinyModel(options: TinyModelOptions, backend: Backend): TinyModel {
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
  return { model: Qwen2Model.random(config, options.seed ?? 3, backend), config, trained };
}
