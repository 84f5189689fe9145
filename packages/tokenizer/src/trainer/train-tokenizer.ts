import { AddedTokenSplitter } from "../added-tokens.js";
import { bytesToByteLevel } from "../byte-level.js";
import { TokenizerError } from "../errors.js";
import type { AddedTokenJson, TokenizerConfigJson, TokenizerJson } from "../huggingface-json.js";
import { QWEN2_5_CHAT_TEMPLATE } from "../qwen-chat-template.js";
import { compileSplitPattern, QWEN2_SPLIT_PATTERN } from "../split-pattern.js";
import { Tokenizer } from "../tokenizer.js";
import { consistentMerges } from "./consistent-merges.js";
import { learnMerges, MAX_TRAINED_VOCAB } from "./learn-merges.js";

/** The special tokens of Qwen's chat format, in Qwen's id order. */
export const CHAT_SPECIAL_TOKENS: readonly string[] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

export interface BpeTrainingOptions {
  /** Size of the vocabulary: 256 byte tokens + learned merges + special and added tokens. */
  vocabSize: number;
  /** A pair must occur this often to be merged (default 2); training may stop below vocabSize. */
  minFrequency?: number;
  /** Special tokens, placed after the learned tokens (default CHAT_SPECIAL_TOKENS). */
  specialTokens?: readonly string[];
  /** Non-special tokens matched anywhere in text, e.g. ["<think>", "</think>"] (default none). */
  addedTokens?: readonly string[];
  /** Default: the Qwen2.5 chat template. */
  chatTemplate?: string;
  /** Default "<|im_end|>", which ends an assistant turn (Qwen instruct models). */
  eosToken?: string;
  /** Default "<|endoftext|>". */
  padToken?: string;
  /** tokenizer_config.json's model_max_length (default 32768). */
  modelMaxLength?: number;
  /**
   * Characters no two of which may share a token, e.g. a text grid's cell symbols ("_PGO"), so that
   * every cell is one token and a small model can count columns. Default: none.
   */
  separateCharacters?: string;
  /**
   * The pre-tokenizer's split pattern (Oniguruma syntax, as in tokenizer.json); tokens never cross
   * its pieces. Default: Qwen2's. A pattern with an extra first alternative keeps a phrase in one
   * piece, so BPE can make it one token, e.g. `" ?\\(\\d, \\d\\)|" + QWEN2_SPLIT_PATTERN` for grid
   * coordinates "(2, 3)".
   */
  splitPattern?: string;
}

/** A trained tokenizer: the Hugging Face files and the Tokenizer loaded from them. */
export interface TrainedTokenizer {
  /** tokenizer.json content (save it with JSON.stringify, or saveTokenizer from "@ragen/tokenizer/node"). */
  tokenizerJson: TokenizerJson;
  /** tokenizer_config.json content, with the chat template. */
  tokenizerConfig: TokenizerConfigJson;
  tokenizer: Tokenizer;
  /** Merges learned (fewer than requested when pairs ran out of minFrequency). */
  learnedMerges: number;
}

/**
 * Trains a small byte-level BPE vocabulary the way Qwen's is built (NFC, Qwen's split pattern,
 * GPT-2 byte alphabet), with the chat special tokens, and returns it as standard Hugging Face
 * files. Special and added tokens in the corpus are cut out before counting. Deterministic: the
 * same texts (in any order) give the same files.
 */
export function trainBpeTokenizer(corpus: Iterable<string>, options: BpeTrainingOptions): TrainedTokenizer {
  const specialTokens = [...(options.specialTokens ?? CHAT_SPECIAL_TOKENS)];
  const addedTokens = [...(options.addedTokens ?? [])];
  const reserved = [...specialTokens, ...addedTokens];
  if (new Set(reserved).size !== reserved.length)
    throw new TokenizerError("special and added tokens must be distinct");
  if (!Number.isInteger(options.vocabSize) || options.vocabSize < 256 + reserved.length) {
    throw new TokenizerError(
      `vocabSize must be an integer of at least ${256 + reserved.length} (256 bytes + special tokens)`,
    );
  }
  if (options.vocabSize > MAX_TRAINED_VOCAB)
    throw new TokenizerError(`vocabSize must be at most ${MAX_TRAINED_VOCAB}`);

  const splitPattern = options.splitPattern ?? QWEN2_SPLIT_PATTERN;
  let compiledSplit: RegExp;
  try {
    compiledSplit = compileSplitPattern(splitPattern);
  } catch (error) {
    throw new TokenizerError(`splitPattern ${JSON.stringify(splitPattern)}: ${(error as Error).message}`);
  }
  const pretokenCounts = countPretokens(corpus, reserved, compiledSplit);
  const learned = learnMerges(
    pretokenCounts,
    options.vocabSize - 256 - reserved.length,
    options.minFrequency ?? 2,
    separationRule(options.separateCharacters ?? ""),
  );

  const vocab: Record<string, number> = {};
  learned.tokens.forEach((bytes, id) => {
    vocab[bytesToByteLevel(bytes)] = id;
  });
  const tokenText = (id: number) => bytesToByteLevel(learned.tokens[id]!);
  const merges = consistentMerges(learned).map(([left, right]): [string, string] => [
    tokenText(left),
    tokenText(right),
  ]);
  const addedTokenEntries = reserved.map(
    (content, index): AddedTokenJson => ({
      id: learned.tokens.length + index,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: index < specialTokens.length,
    }),
  );

  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson: TokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: addedTokenEntries,
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: splitPattern }, behavior: "Isolated", invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };

  const eosToken = options.eosToken ?? "<|im_end|>";
  const padToken = options.padToken ?? "<|endoftext|>";
  for (const [role, token] of [
    ["eosToken", eosToken],
    ["padToken", padToken],
  ] as const) {
    if (!specialTokens.includes(token))
      throw new TokenizerError(`${role} "${token}" is not one of the special tokens`);
  }
  const tokenizerConfig: TokenizerConfigJson = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(
      addedTokenEntries.map(({ id, ...entry }) => [String(id), entry] as const),
    ),
    additional_special_tokens: specialTokens.filter((token) => token !== eosToken && token !== padToken),
    bos_token: null,
    chat_template: options.chatTemplate ?? QWEN2_5_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: eosToken,
    errors: "replace",
    model_max_length: options.modelMaxLength ?? 32768,
    pad_token: padToken,
    split_special_tokens: false,
    tokenizer_class: "Qwen2Tokenizer",
    unk_token: null,
  };

  return {
    tokenizerJson,
    tokenizerConfig,
    tokenizer: Tokenizer.fromFiles(tokenizerJson, tokenizerConfig),
    learnedMerges: learned.merges.length,
  };
}

/** A merge veto: tokens may hold at most one of `characters` (compared after NFC, as text is encoded). */
function separationRule(characters: string): ((bytes: Uint8Array) => boolean) | undefined {
  const separate = new Set(characters.normalize("NFC"));
  if (separate.size === 0) return undefined;
  // Incomplete UTF-8 sequences decode to U+FFFD, which is never one of the characters.
  const utf8 = new TextDecoder("utf-8", { fatal: false });
  return (bytes) => {
    let found = 0;
    for (const character of utf8.decode(bytes)) if (separate.has(character) && ++found > 1) return false;
    return true;
  };
}

/** How often each pre-token occurs, with special/added tokens cut out and NFC applied as when encoding. */
function countPretokens(
  corpus: Iterable<string>,
  reserved: readonly string[],
  pattern: RegExp,
): Map<string, number> {
  const splitter = new AddedTokenSplitter(
    reserved.map((content, id) => ({
      id,
      content,
      special: true,
      normalized: false,
      lstrip: false,
      rstrip: false,
      singleWord: false,
    })),
  );
  const counts = new Map<string, number>();
  for (const text of corpus) {
    for (const segment of splitter.split(text)) {
      if (typeof segment === "number") continue;
      for (const [pretoken] of segment.normalize("NFC").matchAll(pattern)) {
        counts.set(pretoken, (counts.get(pretoken) ?? 0) + 1);
      }
    }
  }
  return counts;
}
