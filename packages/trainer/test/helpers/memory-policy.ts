/**
 * A tiny random Qwen2 with a vocabulary trained on env prompts, built in memory: a PolicyLoader with no
 * files, as a browser page would have, that also loads the actors a MemoryRunStorage checkpoint keeps.
 */
import { createEnv } from "@ragen/envs";
import { parseQwen2Config, type Qwen2Config, Qwen2Model } from "@ragen/models";
import { instructionText } from "@ragen/rollout";
import type { Backend } from "@ragen/tensor-webgpu";
import { trainBpeTokenizer } from "@ragen/tokenizer";
import type { LoadedPolicy, MemoryRunStorage, PolicyLoader } from "../../src/index.js";

export function memoryPolicyLoader(storage: MemoryRunStorage, envTags: readonly string[]): PolicyLoader {
  const corpus = envTags.flatMap((tag) => {
    const env = createEnv(tag);
    const lines = [instructionText(env.instructions, env.actions, 2)];
    for (const seed of [1, 2, 3]) lines.push(env.reset(seed));
    return [...lines, ...(env.actions ?? []).map((a) => `<think>I try ${a}.</think><answer>${a}</answer>`)];
  });
  const trained = trainBpeTokenizer(corpus, {
    vocabSize: 300,
    addedTokens: ["<think>", "</think>", "<answer>", "</answer>"],
  });
  const config: Qwen2Config = parseQwen2Config({
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
  return async (name: string, backend: Backend): Promise<LoadedPolicy> => {
    const saved = storage.actors.get(name);
    const model = saved
      ? Qwen2Model.fromWeights(config, saved, backend)
      : Qwen2Model.random(config, 3, backend);
    return {
      model,
      config,
      tokenizer: trained.tokenizer,
      source: name,
      tokenizerFiles: { tokenizer: trained.tokenizerJson, tokenizerConfig: undefined },
      identity: async () => `${name}#memory`,
    };
  };
}
