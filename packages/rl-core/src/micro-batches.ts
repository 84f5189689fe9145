/**
 * Micro-batches of similar length. A micro-batch is padded to its longest row, so rows of very different
 * lengths together waste work on padding (39% of the tokens a Quest run's updates ran, cut by count). Rows
 * are sorted by length and cut where the padding saved outweighs the cost of one more forward pass,
 * never putting more padded tokens in one micro-batch than `maxRows` of the longest row would: the peak
 * memory the micro-batch size allows stays what it was. verl's dynamic batch size does the same job.
 */

/** What one more micro-batch costs beside its padded tokens, in tokens: its dispatches and read-back. */
export const MICRO_BATCH_OVERHEAD_TOKENS = 128;

/**
 * `items` split into micro-batches of ascending length, each a run of the sorted items, minimising the
 * padded tokens (rows × longest) plus `overheadTokens` per micro-batch, under at most `maxRows` × the
 * longest item's padded tokens per micro-batch. Equal lengths keep their given order.
 */
export function lengthMicroBatches<T>(
  items: readonly T[],
  lengthOf: (item: T) => number,
  maxRows: number,
  overheadTokens = MICRO_BATCH_OVERHEAD_TOKENS,
): T[][] {
  if (!(Number.isInteger(maxRows) && maxRows >= 1))
    throw new RangeError(`lengthMicroBatches: maxRows must be an integer >= 1, got ${maxRows}`);
  if (items.length === 0) return [];
  const sorted = items
    .map((item, index) => ({ item, index, length: lengthOf(item) }))
    .sort((a, b) => a.length - b.length || a.index - b.index);
  const budget = maxRows * sorted.at(-1)!.length;
  // best[j]: the least cost of the first j sorted items; from[j]: where their last micro-batch starts.
  const n = sorted.length;
  const best = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
  const from = new Int32Array(n + 1);
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    const longest = sorted[j - 1]!.length;
    // Going back, each micro-batch ending at j only grows; stop at the budget (one row always fits).
    for (let i = j - 1; i >= 0 && (i === j - 1 || (j - i) * longest <= budget); i--) {
      const cost = best[i]! + (j - i) * longest + overheadTokens;
      if (cost < best[j]!) {
        best[j] = cost;
        from[j] = i;
      }
    }
  }
  const out: T[][] = [];
  for (let j = n; j > 0; j = from[j]!) out.push(sorted.slice(from[j]!, j).map((s) => s.item));
  return out.reverse();
}
