/**
 * Prefix caching for multi-turn generation. An agent's prompt at turn k+1 is its prompt at turn k, the
 * tokens it sampled, and a little new text; recomputing the whole conversation every turn is most of the
 * cost of a rollout. A PrefixCache keeps the KV cache of the last generate() call together with the
 * tokens each row holds, so the next call copies the longest shared prefix of each prompt into its new
 * cache and runs the model on the remaining tokens only.
 *
 * The cached keys and values belong to the weights that computed them: clear() the cache whenever the
 * model changes (a rollout policy clears it at the start of every rollout).
 */
import type { KvCache } from "./qwen2.js";

interface CachedRow {
  /** Tokens whose keys and values sit in the cache, in order. */
  tokens: Int32Array;
  /** Slot of the first of them (rows are left-padded). */
  start: number;
}

/** Where a prompt's reusable prefix is: a row of the stored cache and how many of its tokens. */
export interface PrefixMatch {
  row: number;
  length: number;
}

export class PrefixCache {
  private cache: KvCache | undefined;
  private rows: CachedRow[] = [];

  /** Tokens reused and computed so far (how much the cache saved). */
  readonly stats = { reusedTokens: 0, computedTokens: 0 };

  /** For each prompt, the stored row sharing its longest prefix (at most prompt length - 1 tokens). */
  match(prompts: readonly Int32Array[]): PrefixMatch[] {
    return prompts.map((prompt, i) => {
      let best: PrefixMatch = { row: -1, length: 0 };
      // Rollouts usually keep their envs in order: try the same row first, then the rest.
      const order = this.rows.map((_, r) => r);
      if (i < order.length) [order[0], order[i]] = [order[i]!, order[0]!];
      for (const r of order) {
        const shared = commonPrefix(this.rows[r]!.tokens, prompt, prompt.length - 1);
        if (shared > best.length) best = { row: r, length: shared };
        if (best.length === prompt.length - 1) break;
      }
      return best;
    });
  }

  /**
   * Copy row `match.row`'s first `length` cached positions into row `row` of `target`, from slot
   * `slot`, in every layer.
   */
  copyInto(target: KvCache, row: number, slot: number, match: PrefixMatch, length: number): void {
    const source = this.cache;
    if (!source || length === 0) return;
    const cached = this.rows[match.row]!;
    if (length > match.length)
      throw new RangeError(`PrefixCache: ${length} tokens asked, ${match.length} shared`);
    source.copyTo(target, match.row * source.capacity + cached.start, row * target.capacity + slot, length);
  }

  /** Keep `cache` (now owned by this object) and what each of its rows holds; drops the previous one. */
  store(cache: KvCache, rows: CachedRow[]): void {
    if (this.cache !== cache) this.cache?.dispose();
    this.cache = cache;
    this.rows = rows;
  }

  /** Forget everything (the model's weights changed, or the memory is wanted back). */
  clear(): void {
    this.cache?.dispose();
    this.cache = undefined;
    this.rows = [];
  }
}

function commonPrefix(a: Int32Array, b: Int32Array, limit: number): number {
  const n = Math.min(a.length, b.length, limit);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
