import { describe, expect, it } from "vitest";
import { lengthMicroBatches } from "../src/micro-batches.js";

const same = (n: number) => n;
const padded = (micro: readonly number[]) => micro.length * Math.max(...micro);

/** The least cost of any split of the sorted lengths into runs, by trying every one (small inputs). */
function bruteForceCost(lengths: readonly number[], maxRows: number, overhead: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  const budget = maxRows * sorted.at(-1)!;
  let best = Number.POSITIVE_INFINITY;
  for (let cuts = 0; cuts < 1 << (sorted.length - 1); cuts++) {
    let cost = 0;
    let start = 0;
    for (let i = 1; i <= sorted.length; i++) {
      if (i < sorted.length && !(cuts & (1 << (i - 1)))) continue;
      const run = sorted.slice(start, i);
      if (run.length > 1 && padded(run) > budget) cost = Number.POSITIVE_INFINITY;
      cost += padded(run) + overhead;
      start = i;
    }
    best = Math.min(best, cost);
  }
  return best;
}

describe("lengthMicroBatches", () => {
  it("keeps rows of one length together and puts a long one apart (a Quest mini-batch)", () => {
    const lengths = [305, 506, 305, 305, 305, 305, 305, 305];
    expect(lengthMicroBatches(lengths, same, 8).map((m) => [m.length, m[0]])).toEqual([
      [7, 305],
      [1, 506],
    ]);
    // 2,641 padded tokens instead of 4,048 in one micro-batch of 8.
    expect(lengthMicroBatches(lengths, same, 8).reduce((n, m) => n + padded(m), 0)).toBe(2641);
  });

  it("finds the cheapest split, never over the micro-batch size's padded tokens", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let trial = 0; trial < 200; trial++) {
      const lengths = Array.from(
        { length: 1 + Math.floor(random() * 8) },
        () => 1 + Math.floor(random() * 60),
      );
      const maxRows = 1 + Math.floor(random() * 4);
      const overhead = Math.floor(random() * 40);
      const micros = lengthMicroBatches(lengths, same, maxRows, overhead);
      const context = JSON.stringify({ lengths, maxRows, overhead });
      expect(
        micros.flat().sort((a, b) => a - b),
        context,
      ).toEqual([...lengths].sort((a, b) => a - b));
      const budget = maxRows * Math.max(...lengths);
      for (const micro of micros) expect(padded(micro), context).toBeLessThanOrEqual(budget);
      const cost = micros.reduce((n, m) => n + padded(m) + overhead, 0);
      expect(cost, context).toBe(bruteForceCost(lengths, maxRows, overhead));
    }
  });

  it("returns micro-batches in ascending length, equal lengths in their given order", () => {
    const rows = [
      { id: "a", n: 9 },
      { id: "b", n: 3 },
      { id: "c", n: 9 },
      { id: "d", n: 3 },
    ];
    const micros = lengthMicroBatches(rows, (r) => r.n, 2, 100);
    expect(micros.map((m) => m.map((r) => r.id))).toEqual([
      ["b", "d"],
      ["a", "c"],
    ]);
    // With a small cost per micro-batch, one per length; with a high one, as few as fit.
    expect(lengthMicroBatches([4, 4, 8, 8], same, 4, 1)).toEqual([
      [4, 4],
      [8, 8],
    ]);
    expect(lengthMicroBatches([4, 4, 8, 8], same, 4, 1000)).toEqual([[4, 4, 8, 8]]);
    expect(lengthMicroBatches([4, 4, 8, 8], same, 1, 1000)).toEqual([[4, 4], [8], [8]]);
  });

  it("takes no rows and refuses a micro-batch size below 1", () => {
    expect(lengthMicroBatches([], same, 4)).toEqual([]);
    expect(() => lengthMicroBatches([1], same, 0)).toThrow("maxRows must be an integer >= 1, got 0");
    expect(() => lengthMicroBatches([1], same, 1.5)).toThrow(RangeError);
  });
});
