/** What tuning runs its candidates on and how it compares their results (tuning-check.ts). */
import { describe, expect, it } from "vitest";
import { float16ArrayToFloat32 } from "../src/core/half-float.js";
import { patternBuffer, poison, resultMismatch } from "../src/kernels/tuning-check.js";
import { testContext } from "./helpers.js";

describe("a candidate's result against the reference", () => {
  const reference = Float32Array.from([1, -2, 40, 0.5]);

  it("agrees within the tolerance, relative to the result's largest value", () => {
    expect(resultMismatch(reference, Float32Array.from([1.1, -2.2, 40.3, 0.1]))).toBeUndefined();
    expect(resultMismatch(reference, reference)).toBeUndefined();
  });

  it("names the result and its worst element, and counts an unwritten (NaN) element as wrong", () => {
    expect(resultMismatch(reference, Float32Array.from([1, -2, 39, 0.5]))).toMatch(
      /^wrong product: element 2 is 39, the reference kernel's 40 \(allowed difference 0\.400\)/,
    );
    expect(resultMismatch(reference, Float32Array.from([1, Number.NaN, 40, 0.5]), 1e-2, "dK")).toMatch(
      /^wrong dK: element 1 is NaN/,
    );
  });

  it("finds every result wrong when the reference itself has NaN", () => {
    const broken = Float32Array.from([1, Number.NaN, 40, 0.5]);
    expect(resultMismatch(broken, broken)).toMatch(/^wrong product/);
  });
});

describe("tuning's operands and outputs", () => {
  it("fills f32 operands with varied values in [-amplitude, amplitude), shifted by the phase", async () => {
    const ctx = await testContext();
    const read = async (buffer: GPUBuffer, n: number) => new Float32Array(await ctx.read(buffer, n * 4));
    const a = patternBuffer(ctx, 3000, { amplitude: 2 });
    const b = patternBuffer(ctx, 3000, { amplitude: 2, phase: 257 });
    try {
      const x = await read(a, 3000);
      const y = await read(b, 3000);
      expect(Math.min(...x)).toBeGreaterThanOrEqual(-2);
      expect(Math.max(...x)).toBeLessThan(2);
      expect(Math.max(...x)).toBeGreaterThan(1.9);
      expect(new Set(x).size).toBeGreaterThan(900);
      // The phase starts the same sequence further on: two operands of one problem differ.
      expect(y.subarray(0, 100)).toEqual(x.subarray(257, 357));
      expect(y.subarray(0, 100)).not.toEqual(x.subarray(0, 100));
    } finally {
      a.destroy();
      b.destroy();
    }
  });

  it("fills f16 operands with halves in [0.5, 1)", async () => {
    const ctx = await testContext();
    const buffer = patternBuffer(ctx, 1000, { dtype: "f16" });
    try {
      const halves = float16ArrayToFloat32(new Uint16Array(await ctx.read(buffer, 2000)));
      expect(Math.min(...halves)).toBeGreaterThanOrEqual(0.5);
      expect(Math.max(...halves)).toBeLessThan(1);
      expect(new Set(halves).size).toBeGreaterThan(100);
    } finally {
      buffer.destroy();
    }
  });

  it("sets an output's first bytes to NaN and leaves the rest", async () => {
    const ctx = await testContext();
    const buffer = patternBuffer(ctx, 64);
    try {
      const before = new Float32Array(await ctx.read(buffer, 256));
      poison(ctx, buffer, 40 * 4);
      const after = new Float32Array(await ctx.read(buffer, 256));
      expect(after.subarray(0, 40).every(Number.isNaN)).toBe(true);
      expect(after.subarray(40)).toEqual(before.subarray(40));
    } finally {
      buffer.destroy();
    }
  });
});
