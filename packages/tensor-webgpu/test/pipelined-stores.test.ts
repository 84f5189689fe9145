// The "subgroup-matrix-pipelined" kernel's staged stores, as workgroup memory's 32 four-byte banks see
// them: how many passes each store instruction of a 32-lane subgroup takes.
import { describe, expect, it } from "vitest";
import { storeRotations } from "../src/kernels/matmul-gpu.js";

const WIDE = 8; // halves per load
const PAD = 8; // halves of padding per staged row

/**
 * Passes of each of the 8 store instructions by which the lanes of subgroup `warp` write their loads
 * (wide-load number e = share · 128 + warp · 32 + lane) into a stage whose rows hold `minor` halves.
 */
function storePasses(minor: number, rotations: readonly number[] | undefined, warp: number, share: number) {
  const perRow = minor / WIDE;
  const stride = minor + PAD;
  return Array.from({ length: WIDE }, (_, store) => {
    const wordsByBank = new Map<number, Set<number>>();
    for (let lane = 0; lane < 32; lane++) {
      const e = share * 128 + warp * 32 + lane;
      const slotBytes = 2 * (Math.floor(e / perRow) * stride + (e % perRow) * WIDE);
      // In order: half `store`; rotated: half `store % 2` of word (store / 2 + rotation) % 4.
      const byte = rotations ? (((store >> 1) + rotations[lane]!) % 4) * 4 + (store & 1) * 2 : store * 2;
      const word = (slotBytes + byte) >> 2;
      const words = wordsByBank.get(word % 32) ?? new Set<number>();
      words.add(word);
      wordsByBank.set(word % 32, words);
    }
    return Math.max(...[...wordsByBank.values()].map((words) => words.size));
  });
}

describe("staged stores of the pipelined tensor-core kernel", () => {
  // Rows of a stage hold a k-step (16 or 32 halves) or a tile's width (64 or 128), by operand and transpose.
  for (const minor of [16, 32, 64, 128]) {
    it(`rotated, take one pass per store where in order they take four (rows of ${minor} halves)`, () => {
      const rotations = storeRotations(minor / WIDE, minor + PAD);
      expect(rotations).toHaveLength(32);
      expect(rotations.every((r) => Number.isInteger(r) && r >= 0 && r < 4)).toBe(true);
      for (const warp of [0, 1, 2, 3])
        for (const share of [0, 1, 3]) {
          expect(storePasses(minor, rotations, warp, share)).toEqual(Array(WIDE).fill(1));
          expect(storePasses(minor, undefined, warp, share)).toEqual(Array(WIDE).fill(4));
        }
    });
  }
});
