/**
 * A rank table in gpt-tokenizer's format: index = merge rank, value = the token's text when its
 * bytes are valid UTF-8, else its bytes. Holes are ranks without a mergeable token.
 */
export type RankTable = readonly (string | readonly number[] | undefined)[];
