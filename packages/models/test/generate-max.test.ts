import { describe, expect, it } from "vitest";
import { maxOver } from "../src/model/generate.js";

describe("maxOver", () => {
  it("finds the longest of 200,000 prompts, where spreading into Math.max overflows the stack", () => {
    const prompts = Array.from({ length: 200_000 }, (_, i) => new Int32Array(1 + (i % 7)));
    prompts[123_456] = new Int32Array(50);
    expect(maxOver(prompts.length, (b) => prompts[b]!.length)).toBe(50);
    expect(() => Math.max(...Array.from({ length: 2_000_000 }, () => 1))).toThrow(RangeError);
  });

  it("is -Infinity for nothing and handles negatives", () => {
    expect(maxOver(0, () => 1)).toBe(Number.NEGATIVE_INFINITY);
    expect(maxOver(3, (i) => -10 + i)).toBe(-8);
  });
});
