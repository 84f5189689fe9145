import { describe, expect, it } from "vitest";
import { inputOf, packTrajectories, sampledTokenLogProbs } from "../src/batching.js";
import { trajectory } from "./fixtures.js";

describe("packTrajectories", () => {
  it("shifts targets and every per-token array one left of the inputs, right-padding short rows", () => {
    const packed = packTrajectories([
      trajectory({
        tokens: Int32Array.from([10, 11, 12, 13, 14]),
        lossMask: Uint8Array.from([0, 0, 1, 1, 0]),
        oldLogProbs: Float32Array.from([0, 0, -0.5, -0.25, 0]),
        tokenRewards: Float32Array.from([0, 0, 0, 2, 0]),
      }),
      trajectory({
        tokens: Int32Array.from([20, 21, 22]),
        lossMask: Uint8Array.from([0, 1, 1]),
        oldLogProbs: Float32Array.from([0, -1, -2]),
        tokenRewards: Float32Array.from([0, 0, 3]),
      }),
    ]);
    expect([packed.batch, packed.seqLen]).toEqual([2, 4]);
    expect(Array.from(packed.lengths)).toEqual([4, 2]);
    expect(Array.from(packed.inputIds)).toEqual([10, 11, 12, 13, 20, 21, 0, 0]);
    expect(Array.from(packed.targets)).toEqual([11, 12, 13, 14, 21, 22, 0, 0]);
    // Position t predicts token t + 1: row 0's sampled tokens 12 and 13 are predicted at positions 1, 2.
    expect(Array.from(packed.mask)).toEqual([0, 1, 1, 0, 1, 1, 0, 0]);
    expect(Array.from(packed.oldLogProbs)).toEqual([0, -0.5, -0.25, 0, -1, -2, 0, 0]);
    expect(Array.from(packed.tokenRewards)).toEqual([0, 0, 2, 0, 0, 3, 0, 0]);

    const input = inputOf(packed);
    expect([input.batch, input.seqLen]).toEqual([2, 4]);
    expect(input.ids).toBe(packed.inputIds);
    // No row has importance weights: the batch has none either.
    expect(packed.importanceWeights).toBeUndefined();
  });

  it("packs importance weights aligned to the targets, 1 for a row without them", () => {
    const packed = packTrajectories([
      trajectory({ tokens: Int32Array.from([20, 21, 22]), lossMask: Uint8Array.from([0, 1, 1]) }),
      trajectory({
        tokens: Int32Array.from([10, 11, 12, 13]),
        lossMask: Uint8Array.from([0, 0, 1, 1]),
        importanceWeights: Float32Array.from([1, 1, 0.5, 2]),
      }),
    ]);
    expect(Array.from(packed.importanceWeights!)).toEqual([1, 1, 1, 1, 0.5, 2]);
  });

  it("refuses an empty batch, a trajectory of under 2 tokens and a sampled first token", () => {
    expect(() => packTrajectories([])).toThrow(/no trajectories/);
    expect(() =>
      packTrajectories([trajectory({ tokens: Int32Array.from([1]), lossMask: Uint8Array.from([0]) })]),
    ).toThrow(/under 2 tokens/);
    expect(() =>
      packTrajectories([trajectory({ tokens: Int32Array.from([1, 2]), lossMask: Uint8Array.from([1, 1]) })]),
    ).toThrow(/token 0/);
  });
});

describe("sampledTokenLogProbs", () => {
  const row = trajectory({
    tokens: Int32Array.from([10, 11, 12, 13, 14]),
    lossMask: Uint8Array.from([0, 0, 1, 1, 0]),
  });

  it("puts target t − 1's log-prob on each sampled token t and 0 elsewhere (packing's inverse)", () => {
    const onTokens = sampledTokenLogProbs(row, Float32Array.from([-0.1, -0.2, -0.3, -0.4]));
    expect([...onTokens]).toEqual([0, 0, Math.fround(-0.2), Math.fround(-0.3), 0]);
    const packed = packTrajectories([{ ...row, oldLogProbs: onTokens }]);
    expect([...packed.oldLogProbs]).toEqual([0, Math.fround(-0.2), Math.fround(-0.3), 0]);
  });

  it("ignores the padding past a row's targets and names a row with too few", () => {
    expect([...sampledTokenLogProbs(row, Float32Array.from([-1, -2, -3, -4, -9, -9]))]).toEqual([
      0, 0, -2, -3, 0,
    ]);
    expect(() => sampledTokenLogProbs(row, Float32Array.from([-1, -2, -3]))).toThrow(
      /3 log-probs for a row of 5 tokens \(needs 4\)/,
    );
  });
});
