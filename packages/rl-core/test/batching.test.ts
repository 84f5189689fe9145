import { describe, expect, it } from "vitest";
import { chunks, shuffled } from "../src/batching.js";

describe("mini-batch dealing", () => {
  it("shuffles to a permutation that depends only on the seed", () => {
    const items = Array.from({ length: 32 }, (_, i) => i);
    const a = shuffled(items, 7);
    expect([...a].sort((x, y) => x - y)).toEqual(items);
    expect(shuffled(items, 7)).toEqual(a);
    expect(shuffled(items, 8)).not.toEqual(a);
    expect(a).not.toEqual(items);
    expect(items).toEqual(Array.from({ length: 32 }, (_, i) => i));
  });

  it("mixes rows that arrive grouped (16 of one env tag, then 16 of another) into both halves", () => {
    const rows = Array.from({ length: 32 }, (_, i) => (i < 16 ? "FrozenLake" : "Bandit"));
    for (let seed = 0; seed < 20; seed++) {
      for (const half of chunks(shuffled(rows, seed), 16)) {
        expect(half.filter((tag) => tag === "Bandit").length).toBeGreaterThan(2);
        expect(half.filter((tag) => tag === "FrozenLake").length).toBeGreaterThan(2);
      }
    }
  });

  it("chunks keep order and put the remainder last", () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([], 3)).toEqual([]);
  });
});
