/**
 * A Qwen2 checkpoint in llama.cpp's terms: the "qwen2" architecture's metadata keys, its tensor names,
 * and the byte-level BPE vocabulary of tokenizer.json as "gpt2" tokenizer metadata.
 *
 * No tensor is permuted: llama.cpp runs qwen2 with NeoX-style RoPE (rotating dims i and i + d/2), the
 * same as Hugging Face's rotate_half, so q_proj and k_proj go in as they are. (Only llama-family
 * conversions reorder q/k rows, because llama.cpp rotates adjacent pairs for those.)
 *
 * Browser-safe.
 */
import type { Qwen2Config } from "./config.js";
import { GgufError, type GgufMetadata, type GgufValue } from "./gguf.js";
import { type NamedTensors, namedTensorEntries } from "./safetensors.js";

/** llama.cpp's token types (llama_token_type). */
const TOKEN_TYPE = { normal: 1, control: 3, userDefined: 4, unused: 5 } as const;

const LAYER_TENSOR_NAMES: Readonly<Record<string, string>> = {
  "input_layernorm.weight": "attn_norm.weight",
  "self_attn.q_proj.weight": "attn_q.weight",
  "self_attn.q_proj.bias": "attn_q.bias",
  "self_attn.k_proj.weight": "attn_k.weight",
  "self_attn.k_proj.bias": "attn_k.bias",
  "self_attn.v_proj.weight": "attn_v.weight",
  "self_attn.v_proj.bias": "attn_v.bias",
  "self_attn.o_proj.weight": "attn_output.weight",
  "post_attention_layernorm.weight": "ffn_norm.weight",
  "mlp.gate_proj.weight": "ffn_gate.weight",
  "mlp.up_proj.weight": "ffn_up.weight",
  "mlp.down_proj.weight": "ffn_down.weight",
};

const TOP_TENSOR_NAMES: Readonly<Record<string, string>> = {
  "model.embed_tokens.weight": "token_embd.weight",
  "model.norm.weight": "output_norm.weight",
  "lm_head.weight": "output.weight",
};

/** llama.cpp's name for a Hugging Face Qwen2 parameter ("model.layers.3.mlp.up_proj.weight" -> "blk.3.ffn_up.weight"). */
export function qwen2GgufTensorName(name: string): string {
  const top = TOP_TENSOR_NAMES[name];
  if (top !== undefined) return top;
  const layer = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  const inLayer = layer === null ? undefined : LAYER_TENSOR_NAMES[layer[2]!];
  if (layer === null || inLayer === undefined) {
    throw new GgufError(`tensor "${name}" is not a Qwen2ForCausalLM parameter llama.cpp knows`);
  }
  return `blk.${layer[1]}.${inLayer}`;
}

/**
 * The weights under llama.cpp's names, in Hugging Face's order. With tied embeddings `lm_head.weight` is
 * absent and llama.cpp reuses token_embd for the output, as the model does.
 */
export function qwen2GgufTensors<T>(weights: NamedTensors<T>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [name, tensor] of namedTensorEntries(weights)) out.set(qwen2GgufTensorName(name), tensor);
  return out;
}

export interface Qwen2GgufMetadataOptions {
  /** Parsed tokenizer.json: a byte-level BPE model (as Qwen2's), required for llama.cpp to load the file. */
  tokenizer: unknown;
  /** Parsed tokenizer_config.json: pad token, add_bos_token and chat template, when present. */
  tokenizerConfig?: Readonly<Record<string, unknown>> | undefined;
  /** `general.name`. */
  name?: string;
  /**
   * `tokenizer.ggml.pre`: which of llama.cpp's built-in pre-tokenizer regexes splits text before BPE
   * (default "qwen2"). It must be one llama.cpp knows. Text tokenised by llama.cpp matches the
   * tokenizer.json only where that regex matches the tokenizer's own; token ids fed in directly are exact.
   */
  preTokenizer?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The content of a tokenizer_config token entry: a string or {content: string}. */
function tokenContent(entry: unknown): string | undefined {
  if (typeof entry === "string") return entry;
  if (isRecord(entry) && typeof entry.content === "string") return entry.content;
  return undefined;
}

interface GgufVocabulary {
  tokens: string[];
  tokenTypes: Int32Array;
  merges: string[];
  ids: Map<string, number>;
}

/** tokenizer.json's BPE vocabulary and added tokens as one id-indexed list of `vocabSize` tokens. */
function readVocabulary(tokenizer: unknown, vocabSize: number): GgufVocabulary {
  if (!isRecord(tokenizer) || !isRecord(tokenizer.model)) {
    throw new GgufError("tokenizer.json: expected an object with a `model`");
  }
  const model = tokenizer.model;
  if (model.type !== "BPE" || !isRecord(model.vocab) || !Array.isArray(model.merges)) {
    throw new GgufError(
      `tokenizer.json: only byte-level BPE tokenizers (model.type "BPE" with vocab and merges) can be exported, got ${String(model.type)}`,
    );
  }
  const tokens: (string | undefined)[] = new Array(vocabSize).fill(undefined);
  const tokenTypes = new Int32Array(vocabSize).fill(TOKEN_TYPE.unused);
  const place = (content: string, id: unknown, type: number) => {
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new GgufError(
        `tokenizer.json: token ${JSON.stringify(content)} has id ${String(id)}, outside the model's vocabulary of ${vocabSize}`,
      );
    }
    tokens[id] = content;
    tokenTypes[id] = type;
  };
  for (const [content, id] of Object.entries(model.vocab)) place(content, id, TOKEN_TYPE.normal);
  for (const added of Array.isArray(tokenizer.added_tokens) ? tokenizer.added_tokens : []) {
    if (!isRecord(added) || typeof added.content !== "string") continue;
    place(added.content, added.id, added.special === true ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined);
  }
  // Rows of the embedding no token uses (vocab_size is often rounded up) get placeholder names, as
  // llama.cpp's own converter writes them; every id needs a distinct string.
  const filled = tokens.map((token, id) => token ?? `[PAD${id}]`);
  const merges = model.merges.map((merge, index) => {
    const pair = typeof merge === "string" ? merge.split(" ") : merge;
    if (
      !Array.isArray(pair) ||
      pair.length !== 2 ||
      pair.some((part) => typeof part !== "string" || part === "" || part.includes(" "))
    ) {
      // llama.cpp splits each merge at its space, so a merge part holding a space cannot be written.
      throw new GgufError(
        `tokenizer.json: merge ${index} (${JSON.stringify(merge)}) is not two space-free parts`,
      );
    }
    return `${pair[0]} ${pair[1]}`;
  });
  return { tokens: filled, tokenTypes, merges, ids: new Map(filled.map((token, id) => [token, id])) };
}

/**
 * Every metadata key llama.cpp needs to load a Qwen2ForCausalLM as the "qwen2" architecture: the
 * hyperparameters (integers as uint32, floats as float32, the types it reads them as) and the tokenizer.
 */
export function qwen2GgufMetadata(config: Qwen2Config, options: Qwen2GgufMetadataOptions): GgufMetadata {
  const arch = "qwen2";
  const u32 = (value: number): GgufValue => ({ type: "uint32", value });
  const f32 = (value: number): GgufValue => ({ type: "float32", value });
  const metadata = new Map<string, GgufValue>([
    ["general.architecture", { type: "string", value: arch }],
    ["general.name", { type: "string", value: options.name ?? "qwen2" }],
    // LLAMA_FTYPE_ALL_F32: every tensor is f32.
    ["general.file_type", u32(0)],
    [`${arch}.context_length`, u32(config.maxPositionEmbeddings)],
    [`${arch}.embedding_length`, u32(config.hiddenSize)],
    [`${arch}.block_count`, u32(config.numHiddenLayers)],
    [`${arch}.feed_forward_length`, u32(config.intermediateSize)],
    [`${arch}.attention.head_count`, u32(config.numAttentionHeads)],
    [`${arch}.attention.head_count_kv`, u32(config.numKeyValueHeads)],
    [`${arch}.rope.freq_base`, f32(config.ropeTheta)],
    [`${arch}.attention.layer_norm_rms_epsilon`, f32(config.rmsNormEps)],
  ]);

  const vocabulary = readVocabulary(options.tokenizer, config.vocabSize);
  const tokenizerConfig = options.tokenizerConfig ?? {};
  metadata.set("tokenizer.ggml.model", { type: "string", value: "gpt2" });
  metadata.set("tokenizer.ggml.pre", { type: "string", value: options.preTokenizer ?? "qwen2" });
  metadata.set("tokenizer.ggml.tokens", { type: "array", itemType: "string", value: vocabulary.tokens });
  metadata.set("tokenizer.ggml.token_type", {
    type: "array",
    itemType: "int32",
    value: vocabulary.tokenTypes,
  });
  metadata.set("tokenizer.ggml.merges", { type: "array", itemType: "string", value: vocabulary.merges });

  const eos = Array.isArray(config.eosTokenId) ? config.eosTokenId[0] : config.eosTokenId;
  const specialIds: [string, number | undefined][] = [
    ["bos", config.bosTokenId ?? vocabulary.ids.get(tokenContent(tokenizerConfig.bos_token) ?? "")],
    ["eos", eos ?? vocabulary.ids.get(tokenContent(tokenizerConfig.eos_token) ?? "")],
    ["padding", vocabulary.ids.get(tokenContent(tokenizerConfig.pad_token) ?? "")],
  ];
  for (const [kind, id] of specialIds) {
    if (id !== undefined && id !== null) metadata.set(`tokenizer.ggml.${kind}_token_id`, u32(id));
  }
  // Qwen2 adds no BOS; llama.cpp would otherwise prepend its default one when it tokenises text.
  metadata.set("tokenizer.ggml.add_bos_token", {
    type: "bool",
    value: tokenizerConfig.add_bos_token === true,
  });
  if (typeof tokenizerConfig.chat_template === "string") {
    metadata.set("tokenizer.chat_template", { type: "string", value: tokenizerConfig.chat_template });
  }
  return metadata;
}
