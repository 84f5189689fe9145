import { describe, expect, it } from "vitest";
import { checkAttentionDims, EMPTY_ROW_LSE } from "../src/core/attention.js";
import {
  attentionBackwardRef,
  attentionForwardRef,
  attentionForwardRefF64,
} from "../src/reference/attention.js";
import { randomArray } from "./helpers.js";

describe("attention reference", () => {
  // Causal prefill continuation (seqLen < kvLen) with GQA and kvStart masking query row 0 completely.
  const dims = {
    batch: 2,
    seqLen: 4,
    kvLen: 6,
    kvCapacity: 7,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 4,
    scale: 0.7,
  };
  const kvStart = Int32Array.from([0, 3]);
  const q = Float64Array.from(randomArray(2 * 4 * 4 * 4, 1));
  const k = Float64Array.from(randomArray(2 * 7 * 2 * 4, 2));
  const v = Float64Array.from(randomArray(2 * 7 * 2 * 4, 3));
  const dOut = Float64Array.from(randomArray(2 * 4 * 4 * 4, 4));

  /** L = Σ out ∘ dOut, so dL/dx is what the backward computes from dOut. */
  function loss(qx: Float64Array, kx: Float64Array, vx: Float64Array): number {
    const { out } = attentionForwardRefF64({ ...dims, q: qx, k: kx, v: vx, kvStart });
    let sum = 0;
    for (let i = 0; i < out.length; i++) sum += out[i]! * dOut[i]!;
    return sum;
  }

  function finiteDifference(which: "q" | "k" | "v", index: number): number {
    const eps = 1e-6;
    const arrays = { q: q.slice(), k: k.slice(), v: v.slice() };
    arrays[which][index]! += eps;
    const plus = loss(arrays.q, arrays.k, arrays.v);
    arrays[which][index]! -= 2 * eps;
    const minus = loss(arrays.q, arrays.k, arrays.v);
    return (plus - minus) / (2 * eps);
  }

  it("backward matches finite differences of the forward (float64)", () => {
    const grads = attentionBackwardRef({ ...dims, q, k, v, dOut, kvStart });
    for (const [which, grad, length] of [
      ["q", grads.dQ, q.length],
      ["k", grads.dK, dims.batch * dims.kvLen * dims.numKvHeads * dims.headDim],
      ["v", grads.dV, dims.batch * dims.kvLen * dims.numKvHeads * dims.headDim],
    ] as const) {
      expect(grad.length).toBe(length);
      for (let i = 0; i < length; i++) {
        // dK/dV have kvLen rows while k/v have kvCapacity: the element index maps the same way per sequence.
        const b = Math.floor(i / (length / dims.batch));
        const source =
          which === "q" ? i : i + b * (dims.kvCapacity - dims.kvLen) * dims.numKvHeads * dims.headDim;
        const expected = finiteDifference(which, source);
        expect(Math.abs(grad[i]! - expected)).toBeLessThan(1e-5 + 1e-4 * Math.abs(expected));
      }
    }
  });

  it("masks as documented: a row with no visible key outputs zeros and EMPTY_ROW_LSE", () => {
    const { out, lse } = attentionForwardRef({ ...dims, q, k, v, kvStart });
    // Sequence 1, query row 0 sits at position 2 < kvStart 3: no visible key, for every head.
    for (let h = 0; h < dims.numHeads; h++) {
      expect(lse[(1 * dims.numHeads + h) * dims.seqLen]).toBe(Math.fround(EMPTY_ROW_LSE));
      const base = ((1 * dims.seqLen + 0) * dims.numHeads + h) * dims.headDim;
      expect(Array.from(out.subarray(base, base + dims.headDim))).toEqual([0, 0, 0, 0]);
    }
    // Changing a key that row 1 of sequence 0 (position 3) must not see leaves its output unchanged.
    const changed = k.slice();
    changed[(0 * 7 + 4) * 2 * 4] = 100;
    const again = attentionForwardRef({ ...dims, q, k: changed, v, kvStart });
    const row = ((0 * dims.seqLen + 1) * dims.numHeads + 0) * dims.headDim;
    expect(again.out.subarray(row, row + 4)).toEqual(out.subarray(row, row + 4));
    // ...but a key it sees does change it.
    changed[(0 * 7 + 3) * 2 * 4] = 100;
    const third = attentionForwardRef({ ...dims, q, k: changed, v, kvStart });
    expect(third.out.subarray(row, row + 4)).not.toEqual(out.subarray(row, row + 4));
  });

  it("rejects inconsistent dimensions", () => {
    const ok = { batch: 1, seqLen: 2, kvLen: 2, numHeads: 4, numKvHeads: 2, headDim: 8 };
    expect(() => checkAttentionDims(ok)).not.toThrow();
    expect(() => checkAttentionDims({ ...ok, numKvHeads: 3 })).toThrow(/multiple of numKvHeads/);
    expect(() => checkAttentionDims({ ...ok, kvCapacity: 1 })).toThrow(/kvCapacity/);
    expect(() => checkAttentionDims({ ...ok, seqLen: 3 })).toThrow(/seqLen/);
    expect(() => checkAttentionDims({ ...ok, seqLen: 3, causal: false })).not.toThrow();
    expect(() => checkAttentionDims({ ...ok, headDim: 0 })).toThrow(/headDim/);
  });
});
