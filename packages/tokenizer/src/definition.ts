/** What a Tokenizer is made of, apart from the class that runs it: the loaders build these. */
import type { AddedToken } from "./added-tokens.js";
import type { ChatTemplateSource } from "./chat-template.js";
import type { RankTable } from "./rank-table.js";
import type { TokenBytesTable } from "./token-bytes.js";

/** Names (contents) of the tokens with a role, as tokenizer_config.json gives them. */
export interface SpecialTokenNames {
  bos?: string;
  eos?: string;
  pad?: string;
  unk?: string;
}

/**
 * Everything a Tokenizer is made of, whatever file format it came from.
 * @internal built by the loaders (Hugging Face files, gpt-tokenizer encodings, the trainer).
 */
export interface TokenizerDefinition {
  ranks: RankTable;
  rankToId: Int32Array | null;
  splitPattern: RegExp;
  normalize: ((text: string) => string) | null;
  /** Decoded bytes of every id, added tokens included. */
  tokenBytes: TokenBytesTable;
  addedTokens: readonly AddedToken[];
  specialTokens: SpecialTokenNames;
  chatTemplate?: ChatTemplateSource | undefined;
}
