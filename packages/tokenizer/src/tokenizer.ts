import { type AddedToken, AddedTokenSplitter } from "./added-tokens.js";
import { BpeEncoder } from "./bpe-encoder.js";
import { bytesToByteLevel } from "./byte-level.js";
import { type ChatMessage, type ChatTemplateOptions, ChatTemplateRenderer } from "./chat-template.js";
import type { TokenizerDefinition } from "./definition.js";
import { TokenizerError } from "./errors.js";
import { definitionFromHuggingFaceFiles, type HuggingFaceLoadOptions } from "./huggingface-files.js";
import { StreamingDecoder } from "./streaming-decoder.js";
import type { TokenBytesTable } from "./token-bytes.js";

export type { SpecialTokenNames, TokenizerDefinition } from "./definition.js";

export interface EncodeOptions {
  /**
   * true (default): special tokens written in the text (<|im_start|>, <|endoftext|>...) become their
   * ids, as Hugging Face tokenizers do. false: they are encoded as plain text, so untrusted text
   * cannot inject them. Non-special added tokens (Qwen's <think>) are recognised either way.
   */
  allowSpecial?: boolean;
}

export interface DecodeOptions {
  /** Leave special tokens (eos, im_start, ...) out of the text. Default false. */
  skipSpecialTokens?: boolean;
  /**
   * Leave out ids no token has instead of throwing: a model's padding rows (Qwen2.5 has 151,936 rows for
   * 151,665 tokens) can be sampled, and model output must never crash a rollout. Default false.
   */
  skipUnknownIds?: boolean;
}

interface AddedTokenSplitters {
  raw: AddedTokenSplitter;
  normalized: AddedTokenSplitter;
}

/**
 * A byte-level BPE tokenizer: Hugging Face tokenizer.json files (Qwen2/2.5/3 style), the OpenAI
 * encodings of gpt-tokenizer, and vocabularies trained with trainBpeTokenizer all load into it.
 * Build one with Tokenizer.fromFiles, loadOpenAITokenizer, trainBpeTokenizer or (in Node) loadTokenizer.
 */
export class Tokenizer {
  /** One more than the largest token id (added tokens included). */
  readonly vocabSize: number;
  readonly bosTokenId: number | undefined;
  readonly eosTokenId: number | undefined;
  readonly padTokenId: number | undefined;
  readonly unkTokenId: number | undefined;
  /** ChatML turn delimiters, where the vocabulary has them. */
  readonly imStartId: number | undefined;
  readonly imEndId: number | undefined;
  /** The added tokens (special or not), in id order. */
  readonly addedTokens: readonly AddedToken[];

  private readonly encoder: BpeEncoder;
  private readonly normalize: ((text: string) => string) | null;
  private readonly tokenBytes: TokenBytesTable;
  private readonly specialIds: ReadonlySet<number>;
  private readonly addedTokenById: ReadonlyMap<number, AddedToken>;
  private readonly splittersWithSpecial: AddedTokenSplitters;
  private readonly splittersWithoutSpecial: AddedTokenSplitters;
  private readonly chatTemplate: ChatTemplateRenderer | null;
  private idByToken: Map<string, number> | null = null;
  private readonly utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

  /**
   * A tokenizer from Hugging Face files: tokenizer.json (required) and tokenizer_config.json (for
   * the chat template and the eos/pad/bos tokens), each as JSON text or an already parsed object.
   * Throws TokenizerFileError naming the file and the problem when a file cannot be used.
   */
  static fromFiles(
    tokenizerJson: string | object,
    tokenizerConfig?: string | object | null,
    options: HuggingFaceLoadOptions = {},
  ): Tokenizer {
    return new Tokenizer(definitionFromHuggingFaceFiles(tokenizerJson, tokenizerConfig, options));
  }

  /** @internal use Tokenizer.fromFiles, loadOpenAITokenizer or trainBpeTokenizer. */
  constructor(definition: TokenizerDefinition) {
    this.encoder = new BpeEncoder(definition);
    this.normalize = definition.normalize;
    this.tokenBytes = definition.tokenBytes;
    this.vocabSize = definition.tokenBytes.size;
    this.addedTokens = [...definition.addedTokens].sort((a, b) => a.id - b.id);
    this.addedTokenById = new Map(this.addedTokens.map((token) => [token.id, token]));
    this.specialIds = new Set(this.addedTokens.filter((token) => token.special).map((token) => token.id));
    // Tokens marked `normalized` are looked for in normalized text, so their content is normalized too.
    const normalizeContent = (token: AddedToken): AddedToken =>
      this.normalize ? { ...token, content: this.normalize(token.content) } : token;
    const splitters = (tokens: readonly AddedToken[]): AddedTokenSplitters => ({
      raw: new AddedTokenSplitter(tokens.filter((token) => !token.normalized)),
      normalized: new AddedTokenSplitter(tokens.filter((token) => token.normalized).map(normalizeContent)),
    });
    this.splittersWithSpecial = splitters(this.addedTokens);
    this.splittersWithoutSpecial = splitters(this.addedTokens.filter((token) => !token.special));

    const idOf = (content: string | undefined) =>
      content === undefined
        ? undefined
        : (this.addedTokens.find((token) => token.content === content)?.id ?? this.tokenToId(content));
    const names = definition.specialTokens;
    this.bosTokenId = idOf(names.bos);
    this.eosTokenId = idOf(names.eos);
    this.padTokenId = idOf(names.pad);
    this.unkTokenId = idOf(names.unk);
    this.imStartId = this.addedTokens.find((token) => token.content === "<|im_start|>")?.id;
    this.imEndId = this.addedTokens.find((token) => token.content === "<|im_end|>")?.id;

    this.chatTemplate =
      definition.chatTemplate === undefined
        ? null
        : new ChatTemplateRenderer(definition.chatTemplate, {
            ...(names.bos !== undefined && { bos_token: names.bos }),
            ...(names.eos !== undefined && { eos_token: names.eos }),
            ...(names.pad !== undefined && { pad_token: names.pad }),
            ...(names.unk !== undefined && { unk_token: names.unk }),
          });
  }

  /** Token ids of `text`. Never adds BOS/EOS: chat templates and callers place those. */
  encode(text: string, options: EncodeOptions = {}): number[] {
    const splitters =
      options.allowSpecial === false ? this.splittersWithoutSpecial : this.splittersWithSpecial;
    const ids: number[] = [];
    for (const segment of splitters.raw.split(text)) {
      if (typeof segment === "number") {
        ids.push(segment);
        continue;
      }
      const normalized = this.normalize ? this.normalize(segment) : segment;
      if (splitters.normalized.isEmpty) {
        this.encoder.encodeInto(normalized, ids);
        continue;
      }
      for (const part of splitters.normalized.split(normalized)) {
        if (typeof part === "number") ids.push(part);
        else this.encoder.encodeInto(part, ids);
      }
    }
    return ids;
  }

  /** The text of token ids. Bytes that do not form valid UTF-8 become U+FFFD, as in Hugging Face's decode. */
  decode(ids: Iterable<number>, options: DecodeOptions = {}): string {
    return this.utf8.decode(this.bytesOf(ids, options));
  }

  /** The raw bytes of token ids (what decode turns into text). */
  decodeBytes(ids: Iterable<number>, options: DecodeOptions = {}): Uint8Array {
    return this.bytesOf(ids, options);
  }

  /** A decoder for ids that arrive one by one (generation); see StreamingDecoder. */
  createStreamingDecoder(options: DecodeOptions = {}): StreamingDecoder {
    return new StreamingDecoder(this.tokenBytes, this.includeFilter(options));
  }

  /** The id of a vocabulary entry, written as in tokenizer.json ("Ġhello", "<|im_end|>"). */
  tokenToId(token: string): number | undefined {
    if (this.idByToken === null) {
      const idByToken = new Map<string, number>();
      for (let id = 0; id < this.vocabSize; id++) {
        const text = this.idToToken(id);
        if (text !== undefined) idByToken.set(text, id);
      }
      this.idByToken = idByToken;
    }
    return this.idByToken.get(token);
  }

  /** The vocabulary entry of an id, written as in tokenizer.json (byte-level: " hello" is "Ġhello"). */
  idToToken(id: number): string | undefined {
    const added = this.addedTokenById.get(id);
    if (added !== undefined) return added.content;
    const bytes = this.tokenBytes.get(id);
    return bytes === undefined ? undefined : bytesToByteLevel(bytes);
  }

  /** Whether an id is a special added token (eos, im_start, ...). */
  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  get hasChatTemplate(): boolean {
    return this.chatTemplate !== null;
  }

  /** The conversation as the prompt text the model was trained on (transformers' apply_chat_template). */
  applyChatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    if (this.chatTemplate === null) {
      throw new TokenizerError(
        "this tokenizer has no chat template (tokenizer_config.json has no chat_template); pass one when loading",
      );
    }
    return this.chatTemplate.render(messages, options);
  }

  /** Token ids of the rendered conversation; special tokens in it are always recognised. */
  encodeChat(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): number[] {
    return this.encode(this.applyChatTemplate(messages, options), { allowSpecial: true });
  }

  private includeFilter(options: DecodeOptions): (id: number) => boolean {
    return options.skipSpecialTokens ? (id) => !this.specialIds.has(id) : () => true;
  }

  private bytesOf(ids: Iterable<number>, options: DecodeOptions): Uint8Array {
    const known = options.skipUnknownIds ? [...ids].filter((id) => this.tokenBytes.has(id)) : ids;
    return this.tokenBytes.concat(known, this.includeFilter(options), (id) => {
      throw new TokenizerError(`unknown token id ${id} (vocabulary size ${this.vocabSize})`);
    });
  }
}
