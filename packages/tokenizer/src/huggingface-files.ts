// Reads Hugging Face tokenizer.json / tokenizer_config.json (byte-level BPE, as Qwen2/2.5/3 ship
// them) into a TokenizerDefinition, checking each part and naming the file and field when
// something is missing or unsupported.

import type { AddedToken } from "./added-tokens.js";
import { BYTE_TO_UNICODE, byteLevelToBytes, writeByteLevelBytes } from "./byte-level.js";
import { ChatTemplateRenderer, type ChatTemplateSource } from "./chat-template.js";
import type { SpecialTokenNames, TokenizerDefinition } from "./definition.js";
import { quoteInput, TokenizerFileError } from "./errors.js";
import { buildNormalizer } from "./normalizer.js";
import type { RankTable } from "./rank-table.js";
import { compileSplitPattern, GPT2_SPLIT_PATTERN } from "./split-pattern.js";
import { TokenBytesTable } from "./token-bytes.js";

export interface HuggingFaceFileNames {
  /** How to name tokenizer.json in errors (a path, when read from disk). */
  tokenizerJson?: string;
  tokenizerConfig?: string;
}

export interface HuggingFaceLoadOptions {
  /** A chat template to use instead of tokenizer_config.json's. */
  chatTemplate?: ChatTemplateSource;
}

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function parseJsonFile(source: string | object, file: string): JsonObject {
  let value: unknown = source;
  if (typeof source === "string") {
    try {
      value = JSON.parse(source);
    } catch (error) {
      // The parser's message quotes the bad input; the input itself is quoted escaped and cut short.
      throw new TokenizerFileError(
        file,
        `is not valid JSON (${(error as Error).message}); it starts ${quoteInput(source.trimStart(), 40)}`,
      );
    }
  }
  if (!isObject(value)) throw new TokenizerFileError(file, "must hold a JSON object");
  return value;
}

/** The definition of a tokenizer given as Hugging Face files (JSON text or parsed objects). */
export function definitionFromHuggingFaceFiles(
  tokenizerJson: string | object,
  tokenizerConfig?: string | object | null,
  options: HuggingFaceLoadOptions = {},
  names: HuggingFaceFileNames = {},
): TokenizerDefinition {
  const jsonFile = names.tokenizerJson ?? "tokenizer.json";
  const configFile = names.tokenizerConfig ?? "tokenizer_config.json";
  const json = parseJsonFile(tokenizerJson, jsonFile);
  const config = tokenizerConfig == null ? null : parseJsonFile(tokenizerConfig, configFile);
  const fail = (problem: string): never => {
    throw new TokenizerFileError(jsonFile, problem);
  };

  const model = json.model;
  if (!isObject(model)) fail('has no "model" object');
  const bpeModel = readBpeModel(model as JsonObject, fail);
  const addedTokens = readAddedTokens(json.added_tokens, fail);
  const splitPattern = readPreTokenizer(json.pre_tokenizer, fail);
  checkDecoder(json.decoder, fail);
  checkPostProcessor(json.post_processor, fail);
  let normalize: ((text: string) => string) | null = null;
  try {
    normalize = buildNormalizer(json.normalizer);
  } catch (error) {
    fail((error as Error).message);
  }

  const { ranks, rankToId, tokenBytes } = buildRankTable(
    bpeModel,
    addedTokens,
    (model as JsonObject).ignore_merges === true,
    fail,
  );
  const chatTemplate = options.chatTemplate ?? (config ? readChatTemplate(config, configFile) : undefined);
  if (chatTemplate !== undefined && options.chatTemplate === undefined) {
    try {
      new ChatTemplateRenderer(chatTemplate, {}).compileAll();
    } catch (error) {
      throw new TokenizerFileError(configFile, (error as Error).message);
    }
  }
  return {
    ranks,
    rankToId,
    splitPattern,
    normalize,
    tokenBytes,
    addedTokens,
    specialTokens: config ? readSpecialTokenNames(config, configFile) : defaultSpecialTokenNames(addedTokens),
    chatTemplate,
  };
}

interface BpeModel {
  vocab: Map<string, number>;
  /** The vocabulary entry of each id (holes for ids without one). */
  tokenById: (string | undefined)[];
  merges: [string, string][];
}

function readBpeModel(model: JsonObject, fail: (problem: string) => never): BpeModel {
  if (model.type !== undefined && model.type !== "BPE") {
    fail(`model.type is ${JSON.stringify(model.type)}; only byte-level "BPE" is supported`);
  }
  if (model.byte_fallback === true)
    fail("model.byte_fallback is not supported (byte-level BPE needs no fallback)");
  // Dropout skips merges at random while encoding: a training-time setting, not for inference.
  if (typeof model.dropout === "number" && model.dropout > 0) fail("model.dropout is not supported");
  for (const field of ["continuing_subword_prefix", "end_of_word_suffix"] as const) {
    const value = model[field];
    if (value !== undefined && value !== null && value !== "") fail(`model.${field} is not supported`);
  }
  if (!isObject(model.vocab)) fail('model.vocab must be an object of "token": id');
  const vocabObject = model.vocab as JsonObject;
  const vocab = new Map<string, number>();
  const tokenById: (string | undefined)[] = [];
  for (const token of Object.keys(vocabObject)) {
    const id = vocabObject[token];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0) {
      fail(`model.vocab[${JSON.stringify(token)}] is not a token id`);
    }
    if (tokenById[id as number] !== undefined) {
      fail(
        `model.vocab gives id ${id} to both ${JSON.stringify(tokenById[id as number])} and ${JSON.stringify(token)}`,
      );
    }
    vocab.set(token, id as number);
    tokenById[id as number] = token;
  }
  if (!Array.isArray(model.merges)) fail("model.merges must be an array");
  // Two spellings exist: "left right" (older files) and ["left", "right"] (newer ones, Qwen's).
  const rawMerges = model.merges as unknown[];
  const merges = new Array<[string, string]>(rawMerges.length);
  for (let index = 0; index < rawMerges.length; index++) {
    const merge = rawMerges[index];
    if (
      Array.isArray(merge) &&
      merge.length === 2 &&
      typeof merge[0] === "string" &&
      typeof merge[1] === "string"
    ) {
      merges[index] = merge as [string, string];
    } else if (typeof merge === "string") {
      const space = merge.indexOf(" ");
      if (space <= 0 || space !== merge.lastIndexOf(" ")) {
        fail(`model.merges[${index}] (${JSON.stringify(merge)}) is not "left right"`);
      }
      merges[index] = [merge.slice(0, space), merge.slice(space + 1)];
    } else {
      fail(`model.merges[${index}] must be "left right" or ["left", "right"]`);
    }
  }
  return { vocab, tokenById, merges };
}

function readAddedTokens(value: unknown, fail: (problem: string) => never): AddedToken[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) fail("added_tokens must be an array");
  return (value as unknown[]).map((entry, index) => {
    if (!isObject(entry) || typeof entry.content !== "string" || !Number.isInteger(entry.id)) {
      fail(`added_tokens[${index}] needs a string "content" and an integer "id"`);
    }
    const token = entry as JsonObject;
    return {
      id: token.id as number,
      content: token.content as string,
      special: token.special === true,
      normalized: token.normalized === true,
      lstrip: token.lstrip === true,
      rstrip: token.rstrip === true,
      singleWord: token.single_word === true,
    };
  });
}

/** The split pattern of the pre-tokenizer: Split(Regex) + ByteLevel(use_regex: false), or ByteLevel alone. */
function readPreTokenizer(config: unknown, fail: (problem: string) => never): RegExp {
  const unsupported = (what: string) =>
    fail(`pre_tokenizer: ${what} (supported: ByteLevel, or Sequence [Split with a Regex, ByteLevel])`);
  if (!isObject(config)) return unsupported("missing");
  const steps = config.type === "Sequence" ? config.pretokenizers : [config];
  if (!Array.isArray(steps)) return unsupported('"Sequence" without "pretokenizers"');

  let pattern: string | null = null;
  let sawByteLevel = false;
  for (const step of steps as unknown[]) {
    if (!isObject(step)) return unsupported("a step is not an object");
    if (step.type === "ByteLevel") {
      if (step.add_prefix_space === true) unsupported("ByteLevel with add_prefix_space: true");
      if (step.use_regex !== false) {
        if (pattern !== null) unsupported("two split patterns");
        pattern = GPT2_SPLIT_PATTERN;
      }
      sawByteLevel = true;
    } else if (step.type === "Split") {
      const regex = isObject(step.pattern) ? step.pattern.Regex : undefined;
      if (typeof regex !== "string") unsupported("Split needs a Regex pattern");
      if (step.behavior !== "Isolated" || step.invert === true)
        unsupported('Split must be "Isolated", not inverted');
      if (pattern !== null || sawByteLevel) unsupported("Split after another split or after ByteLevel");
      pattern = regex as string;
    } else {
      unsupported(`step type ${JSON.stringify(step.type)}`);
    }
  }
  if (!sawByteLevel) unsupported("no ByteLevel step");
  if (pattern === null) return unsupported("no split pattern");
  try {
    return compileSplitPattern(pattern);
  } catch (error) {
    return fail(
      `pre_tokenizer pattern ${JSON.stringify(pattern)} cannot be used: ${(error as Error).message}`,
    );
  }
}

function checkDecoder(config: unknown, fail: (problem: string) => never): void {
  if (config === undefined || config === null) return;
  if (!isObject(config) || config.type !== "ByteLevel") {
    fail(
      `decoder ${JSON.stringify(isObject(config) ? config.type : config)} is not supported (expected ByteLevel)`,
    );
  }
}

function checkPostProcessor(config: unknown, fail: (problem: string) => never): void {
  if (config === undefined || config === null) return;
  if (!isObject(config) || config.type !== "ByteLevel") {
    fail(
      `post_processor ${JSON.stringify(isObject(config) ? config.type : config)} is not supported ` +
        "(only ByteLevel, which adds no tokens)",
    );
  }
}

/**
 * gpt-tokenizer's core merges by rank, the rank of a token being the position of the merge that
 * creates it; single bytes come first. When ids follow that order (Qwen: byte tokens 0-255, then
 * merge i creates id 256 + i) ranks are ids; otherwise rankToId maps them back.
 */
function buildRankTable(
  { vocab, tokenById, merges }: BpeModel,
  addedTokens: readonly AddedToken[],
  ignoreMerges: boolean,
  fail: (problem: string) => never,
): { ranks: RankTable; rankToId: Int32Array | null; tokenBytes: TokenBytesTable } {
  const textEncoder = new TextEncoder();
  const addedBytes = new Map(
    addedTokens.map((token) => [token.id, addedTokenBytes(token.content, textEncoder)]),
  );
  let size = tokenById.length;
  for (const id of addedBytes.keys()) size = Math.max(size, id + 1);
  // Byte-level entries hold one byte per character.
  const tokenBytes = new TokenBytesTable(
    size,
    (id) => addedBytes.get(id)?.length ?? tokenById[id]?.length,
    (id, target, offset) => {
      const added = addedBytes.get(id);
      if (added !== undefined) target.set(added, offset);
      else if (!writeByteLevelBytes(tokenById[id]!, target, offset)) {
        fail(`model.vocab entry ${JSON.stringify(tokenById[id])} is not in the byte-level alphabet`);
      }
    },
  );

  const byteIds = BYTE_TO_UNICODE.map((char) => vocab.get(char));
  const missingBytes = byteIds.flatMap((id, byte) => (id === undefined ? [byte] : []));
  if (missingBytes.length > 0) {
    fail(
      `model.vocab lacks the single-byte tokens of bytes ${missingBytes.join(", ")} (byte-level BPE needs all 256)`,
    );
  }
  const rankOrder: number[] = (byteIds as number[]).slice().sort((a, b) => a - b);
  const ranked = new Set(rankOrder);
  for (let index = 0; index < merges.length; index++) {
    const [left, right] = merges[index]!;
    const id = vocab.get(left + right);
    if (id === undefined || !vocab.has(left) || !vocab.has(right)) {
      const missing = [left, right, left + right].find((part) => !vocab.has(part));
      fail(
        `model.merges[${index}] (${JSON.stringify(`${left} ${right}`)}): ${JSON.stringify(missing)} is not in model.vocab`,
      );
    }
    if (!ranked.has(id!)) {
      ranked.add(id!);
      rankOrder.push(id!);
    }
  }
  // With ignore_merges a whole pre-token found in the vocabulary is taken as is, which the core
  // also does; tokens no merge creates are then reachable too.
  if (ignoreMerges) {
    tokenById.forEach((_, id) => {
      if (!ranked.has(id)) rankOrder.push(id);
    });
  }

  const idsAreRanks = rankOrder.every((id, rank) => rank === 0 || id > rankOrder[rank - 1]!);
  const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  // Built with assignments only: the core must see holes, not undefined entries.
  const ranks: (string | number[])[] = [];
  const rankToId = idsAreRanks ? null : Int32Array.from(rankOrder);
  rankOrder.forEach((id, rank) => {
    const token = tokenById[id]!;
    // An added token may reuse a vocabulary id; the vocabulary entry is what BPE produces.
    const bytes = addedBytes.has(id) ? byteLevelToBytes(token)! : tokenBytes.get(id)!;
    ranks[idsAreRanks ? id : rank] = tokenText(bytes, utf8);
  });
  return { ranks, rankToId, tokenBytes };
}

/** A token as gpt-tokenizer's core wants it: its text when the bytes are valid UTF-8, else the bytes. */
function tokenText(bytes: Uint8Array, utf8: TextDecoder): string | number[] {
  let ascii = true;
  for (let i = 0; i < bytes.length && ascii; i++) ascii = bytes[i]! < 0x80;
  if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  try {
    // fatal: a partial UTF-8 sequence must stay bytes; ignoreBOM: "\uFEFF\n" must not become "\n".
    return utf8.decode(bytes);
  } catch {
    return Array.from(bytes);
  }
}

/**
 * Hugging Face's ByteLevel decoder also runs over added tokens: content written entirely in the
 * byte-level alphabet is mapped back to bytes, anything else is taken as UTF-8 text.
 */
function addedTokenBytes(content: string, textEncoder: TextEncoder): Uint8Array {
  return byteLevelToBytes(content) ?? textEncoder.encode(content);
}

function readChatTemplate(config: JsonObject, file: string): ChatTemplateSource | undefined {
  const template = config.chat_template;
  if (template === undefined || template === null) return undefined;
  if (typeof template === "string") return template;
  if (Array.isArray(template)) {
    const named: Record<string, string> = {};
    for (const [index, entry] of template.entries()) {
      if (!isObject(entry) || typeof entry.name !== "string" || typeof entry.template !== "string") {
        throw new TokenizerFileError(
          file,
          `chat_template[${index}] needs string "name" and "template" fields`,
        );
      }
      named[entry.name] = entry.template;
    }
    return named;
  }
  throw new TokenizerFileError(file, "chat_template must be a string or a list of {name, template}");
}

function readSpecialTokenNames(config: JsonObject, file: string): SpecialTokenNames {
  const names: SpecialTokenNames = {};
  for (const role of ["bos", "eos", "pad", "unk"] as const) {
    const value = config[`${role}_token`];
    if (value === undefined || value === null) continue;
    // Older configs write {"__type": "AddedToken", "content": "..."}.
    const content = typeof value === "string" ? value : isObject(value) ? value.content : undefined;
    if (typeof content !== "string") {
      throw new TokenizerFileError(file, `${role}_token must be a string or an object with "content"`);
    }
    names[role] = content;
  }
  return names;
}

/** Without tokenizer_config.json, "<|endoftext|>" (when present) ends documents, as in Qwen base models. */
function defaultSpecialTokenNames(addedTokens: readonly AddedToken[]): SpecialTokenNames {
  return addedTokens.some((token) => token.content === "<|endoftext|>") ? { eos: "<|endoftext|>" } : {};
}
