import { BYTE_LEVEL_ORDER } from "../byte-level.js";
import { PairQueue } from "./pair-queue.js";

/** Ids stay below this, so that a pair (left, right) packs into one exact number. */
export const MAX_TRAINED_VOCAB = 1 << 20;
const pairKey = (left: number, right: number) => left * MAX_TRAINED_VOCAB + right;
const leftOf = (key: number) => Math.floor(key / MAX_TRAINED_VOCAB);
const rightOf = (key: number) => key % MAX_TRAINED_VOCAB;

export interface LearnedMerges {
  /** The bytes of each token by id: ids 0-255 are single bytes in GPT-2/Qwen order, then one token per merge. */
  tokens: Uint8Array[];
  /** The (left id, right id) pair joined by each merge; merge i created token 256 + i. */
  merges: [number, number][];
}

interface Word {
  symbols: number[];
  count: number;
}

/**
 * Classic BPE training over pre-token counts: repeatedly join the most frequent adjacent pair
 * (ties: smallest left id, then smallest right id), until `maxMerges` merges are learned or no
 * pair occurs `minFrequency` times. Deterministic for a given multiset of pre-tokens.
 * `mayJoin` (default: always) vetoes tokens by their bytes; a vetoed pair is never merged.
 */
export function learnMerges(
  pretokenCounts: ReadonlyMap<string, number>,
  maxMerges: number,
  minFrequency: number,
  mayJoin: (bytes: Uint8Array) => boolean = () => true,
): LearnedMerges {
  const tokens: Uint8Array[] = BYTE_LEVEL_ORDER.map((byte) => Uint8Array.of(byte));
  const words = initialWords(pretokenCounts);
  const pairCounts = new Map<number, number>();
  const wordsWithPair = new Map<number, Set<number>>();
  const notePair = (key: number, wordIndex: number) => {
    const holders = wordsWithPair.get(key);
    if (holders === undefined) wordsWithPair.set(key, new Set([wordIndex]));
    else holders.add(wordIndex);
  };
  words.forEach(({ symbols, count }, wordIndex) => {
    for (let i = 0; i + 1 < symbols.length; i++) {
      const key = pairKey(symbols[i]!, symbols[i + 1]!);
      pairCounts.set(key, (pairCounts.get(key) ?? 0) + count);
      notePair(key, wordIndex);
    }
  });
  // Counts only grow when a merge creates a pair; then a fresh entry is queued. Entries of pairs
  // that shrank are corrected when popped.
  const queue = new PairQueue();
  for (const [key, count] of pairCounts) queue.push(count, key);

  const merges: [number, number][] = [];
  const vetoed = new Set<number>();
  while (merges.length < maxMerges) {
    const entry = queue.pop();
    if (entry === undefined) break;
    const live = pairCounts.get(entry.key) ?? 0;
    if (entry.count !== live) {
      if (entry.count > live && live > 0) queue.push(live, entry.key);
      continue;
    }
    if (live < minFrequency) break;

    const left = leftOf(entry.key);
    const right = rightOf(entry.key);
    if (vetoed.has(entry.key)) continue;
    const bytes = concatBytes(tokens[left]!, tokens[right]!);
    if (!mayJoin(bytes)) {
      // Its count stays live (neighbouring merges still adjust it); it is just never chosen.
      vetoed.add(entry.key);
      continue;
    }
    const joined = tokens.length;
    tokens.push(bytes);
    merges.push([left, right]);

    const grown = new Set<number>();
    const change = (key: number, delta: number) => {
      pairCounts.set(key, (pairCounts.get(key) ?? 0) + delta);
      if (delta > 0) grown.add(key);
    };
    for (const wordIndex of wordsWithPair.get(entry.key) ?? []) {
      const word = words[wordIndex]!;
      word.symbols = joinPair(word.symbols, left, right, joined, (before, after) => {
        change(before, -word.count);
        change(after, word.count);
        notePair(after, wordIndex);
      });
    }
    wordsWithPair.delete(entry.key);
    pairCounts.delete(entry.key);
    for (const key of grown) queue.push(pairCounts.get(key)!, key);
  }
  return { tokens, merges };
}

function initialWords(pretokenCounts: ReadonlyMap<string, number>): Word[] {
  const idOfByte = new Array<number>(256);
  BYTE_LEVEL_ORDER.forEach((byte, id) => {
    idOfByte[byte] = id;
  });
  const utf8 = new TextEncoder();
  const words: Word[] = [];
  for (const [pretoken, count] of pretokenCounts) {
    const symbols = Array.from(utf8.encode(pretoken), (byte) => idOfByte[byte]!);
    if (symbols.length > 1) words.push({ symbols, count });
  }
  return words;
}

/**
 * The word's symbols with every (left, right) occurrence, scanned left to right, replaced by
 * `joined`. For each neighbouring pair that changes, reports the pair key that disappears and
 * the one that replaces it; the caller also drops all counts of (left, right) itself.
 */
function joinPair(
  symbols: readonly number[],
  left: number,
  right: number,
  joined: number,
  onNeighbourChange: (before: number, after: number) => void,
): number[] {
  const out: number[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (symbols[i] !== left || symbols[i + 1] !== right) {
      out.push(symbols[i]!);
      continue;
    }
    if (out.length > 0) {
      // The previous symbol may itself be `joined` (from an occurrence just before), in which case
      // the pair being replaced is (joined, left): counted when that occurrence was handled.
      const previous = out[out.length - 1]!;
      onNeighbourChange(pairKey(previous, left), pairKey(previous, joined));
    }
    const next = symbols[i + 2];
    if (next !== undefined) onNeighbourChange(pairKey(right, next), pairKey(joined, next));
    out.push(joined);
    i++;
  }
  return out;
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
