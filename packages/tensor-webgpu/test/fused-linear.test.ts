import { afterEach, describe, expect, it } from "vitest";
import { noGrad } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import { disableMatmulTuning } from "../src/kernels/matmul-choices.js";
import { matvecWithInput } from "../src/kernels/matmul-fused-input.js";
import { addLinear, linear, normLinear, rmsNorm, swigluLinear, swigluPacked } from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { chooseMatmulKernel, expectClose, randomArray, testContext } from "./helpers.js";

const ctx = await testContext();
const gpu = createWebGpuBackend(ctx);
const cpu = createCpuBackend();
afterEach(() => disableMatmulTuning(ctx));

/** The unfused pair on the CPU backend: what the fused kernel must compute. */
async function reference(
  kind: "rmsNorm" | "swiglu",
  x: Float32Array,
  xShape: number[],
  w: Float32Array,
  wShape: number[],
  extra: { norm?: Float32Array; bias?: Float32Array; addend?: Float32Array },
): Promise<Float32Array> {
  const t = (values: Float32Array, shape: number[]) => tensor(values, shape, { backend: cpu });
  const weight = t(w, wShape);
  const n = wShape[0]!;
  const rows = xShape[0]!;
  if (kind === "rmsNorm") {
    const h = rmsNorm(t(x, xShape), t(extra.norm!, [xShape[1]!]), 1e-6);
    return linear(h, weight, extra.bias ? t(extra.bias, [n]) : undefined).floats();
  }
  const gated = swigluPacked(t(x, xShape));
  return (
    extra.addend ? addLinear(t(extra.addend, [rows, n]), gated, weight) : linear(gated, weight)
  ).floats();
}

describe('"matvec" with its input transformed (decoding\'s RMSNorm and SwiGLU folded into the product)', () => {
  const n = 70;
  const k = 150; // not a multiple of the 32 lanes that share a column
  // 3 rows: one block of 4; 37: three blocks of 16 (the last one partly past m).
  for (const rows of [3, 37]) {
    it(`rmsNorm then x · Wᵀ + bias, ${rows} rows`, async () => {
      const x = randomArray(rows * k, rows, 2);
      const norm = randomArray(k, 2);
      const w = randomArray(n * k, 3);
      const bias = randomArray(n, 4);
      const buffers = [x, norm, w, bias].map((v) => ctx.upload(v));
      const out = ctx.pool.acquire(rows * n * 4);
      const [a, g, b, biasBuffer] = buffers as [GPUBuffer, GPUBuffer, GPUBuffer, GPUBuffer];
      const args = { x: a, weight: b, out, rows, n, k, bias: biasBuffer, variant: "matvec" as const };
      expect(matvecWithInput(ctx, { ...args, input: { kind: "rmsNorm", weight: g, eps: 1e-6 } })).toBe(true);
      const actual = new Float32Array(await ctx.read(out, rows * n * 4));
      expectClose(actual, await reference("rmsNorm", x, [rows, k], w, [n, k], { norm, bias }), 1e-5, 1e-4);
      for (const buffer of [...buffers, out]) ctx.pool.release(buffer);
    });

    it(`silu(gate) · up then x · Wᵀ + residual, ${rows} rows`, async () => {
      const gateUp = randomArray(rows * 2 * k, rows + 10, 3);
      const w = randomArray(n * k, 5);
      const addend = randomArray(rows * n, 6);
      const buffers = [gateUp, w, addend].map((v) => ctx.upload(v));
      const out = ctx.pool.acquire(rows * n * 4);
      const [a, b, addendBuffer] = buffers as [GPUBuffer, GPUBuffer, GPUBuffer];
      const args = { x: a, weight: b, out, rows, n, k, addend: addendBuffer, variant: "matvec" as const };
      expect(matvecWithInput(ctx, { ...args, input: { kind: "swiglu" } })).toBe(true);
      const actual = new Float32Array(await ctx.read(out, rows * n * 4));
      expectClose(
        actual,
        await reference("swiglu", gateUp, [rows, 2 * k], w, [n, k], { addend }),
        1e-5,
        1e-4,
      );
      for (const buffer of [...buffers, out]) ctx.pool.release(buffer);
    });
  }

  it("records nothing where another kernel runs the product", () => {
    const x = ctx.pool.acquire(4 * 64 * 4);
    const weight = ctx.pool.acquire(32 * 64 * 4);
    const out = ctx.pool.acquire(4 * 32 * 4);
    const before = ctx.stats.dispatches;
    // Another kernel than "matvec" chosen for the product, whatever this adapter's fixed rule takes.
    chooseMatmulKernel(
      ctx,
      { batch: 1, m: 4, n: 32, k: 32, transA: false, transB: true, dtype: "f32" },
      "tiled",
    );
    const args = { x, weight, out, rows: 4, n: 32, k: 32, input: { kind: "swiglu" } } as const;
    expect(matvecWithInput(ctx, args)).toBe(false);
    expect(matvecWithInput(ctx, { ...args, variant: "tiled" })).toBe(false);
    expect(ctx.stats.dispatches).toBe(before);
    for (const buffer of [x, weight, out]) ctx.pool.release(buffer);
  });
});

describe("normLinear and swigluLinear", () => {
  const rows = 3;
  const k = 40;
  const n = 24;
  const values = {
    x: randomArray(rows * k, 11, 2),
    gateUp: randomArray(rows * 2 * k, 12, 2),
    norm: randomArray(k, 13),
    w: randomArray(n * k, 14),
    bias: randomArray(n, 15),
    residual: randomArray(rows * n, 16),
  };
  const run = (backend: Backend) =>
    noGrad(() => {
      const t = (v: Float32Array, shape: number[]) => tensor(v, shape, { backend });
      const w = t(values.w, [n, k]);
      return [
        normLinear(t(values.x, [1, rows, k]), t(values.norm, [k]), 1e-6, w, t(values.bias, [n])),
        swigluLinear(t(values.gateUp, [1, rows, 2 * k]), w, t(values.residual, [1, rows, n])),
        swigluLinear(t(values.gateUp, [1, rows, 2 * k]), w),
      ];
    });

  it("equal the two ops on every backend, and run as one dispatch each where matvec is the product's kernel", async () => {
    const expected = await Promise.all(run(cpu).map((t) => t.floats()));
    const composed = run(gpu);
    for (const [i, t] of composed.entries()) {
      expect(t.shape).toEqual([1, rows, n]);
      expectClose(await t.floats(), expected[i]!, 1e-5, 1e-4);
    }
    // A tuned choice of "matvec" for this product (as a GPU's fixed rule makes for few rows).
    chooseMatmulKernel(ctx, { batch: 1, m: rows, n, k, transA: false, transB: true, dtype: "f32" });
    const before = ctx.stats.dispatches;
    const fused = run(gpu);
    expect(ctx.stats.dispatches - before).toBe(3);
    for (const [i, t] of fused.entries()) expectClose(await t.floats(), expected[i]!, 1e-5, 1e-4);
  });

  it("name a weight of the wrong shape", () => {
    const t = (shape: number[]) =>
      tensor(new Float32Array(shape.reduce((a, b) => a * b, 1)), shape, { backend: cpu });
    expect(() => normLinear(t([2, 8]), t([8]), 1e-6, t([4, 6]))).toThrow(
      /normLinear: weight must be \[out, 8\]/,
    );
    expect(() => normLinear(t([2, 8]), t([6]), 1e-6, t([4, 8]))).toThrow(/normWeight must be \[8\]/);
    expect(() => swigluLinear(t([2, 7]), t([4, 3]))).toThrow(/2 x width/);
    expect(() => swigluLinear(t([2, 8]), t([4, 8]))).toThrow(/swigluLinear: weight must be \[out, 4\]/);
  });
});
