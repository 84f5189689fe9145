import { describe, expect, it } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import { adamw, clipScale, scaleInPlace, sumOfSquares } from "../src/kernels/optimizer.js";
import { adamwRef, clipScaleRef, scaleInPlaceRef, sumOfSquaresRef } from "../src/reference/optimizer.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

async function readF32(ctx: GpuContext, buffer: GPUBuffer, n: number): Promise<Float32Array> {
  return new Float32Array(await ctx.read(buffer, n * 4));
}

const HYPER = { lr: 0.1, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01 };

interface AdamState {
  param: Float32Array;
  m: Float32Array;
  v: Float32Array;
}

function uploadState(ctx: GpuContext, state: AdamState) {
  return { param: ctx.upload(state.param), m: ctx.upload(state.m), v: ctx.upload(state.v) };
}

async function readState(
  ctx: GpuContext,
  buffers: ReturnType<typeof uploadState>,
  n: number,
): Promise<AdamState> {
  return {
    param: await readF32(ctx, buffers.param, n),
    m: await readF32(ctx, buffers.m, n),
    v: await readF32(ctx, buffers.v, n),
  };
}

describe("adamw", () => {
  it("matches hand-computed values for one step", async () => {
    const ctx = await testContext();
    const n = 3;
    const state = { param: new Float32Array([1, -3, 2]), m: new Float32Array(n), v: new Float32Array(n) };
    const buffers = uploadState(ctx, state);
    const grad = ctx.upload(new Float32Array([0.5, -2, 0]));
    adamw(ctx, { ...buffers, grad, n, ...HYPER, step: 1 });
    const after = await readState(ctx, buffers, n);
    // decay 1 - 0.1*0.01 = 0.999; step 1: m̂ = g, v̂ = g², so the update is lr * g / (|g| + eps) = ±0.1.
    expectClose(after.param, [0.999 - 0.1, -3 * 0.999 + 0.1, 2 * 0.999], 1e-6, 1e-6);
    expectClose(after.m, [0.05, -0.2, 0], 1e-7, 1e-6);
    expectClose(after.v, [0.00025, 0.004, 0], 1e-9, 1e-6);
    for (const b of [...Object.values(buffers), grad]) ctx.pool.release(b);
  });

  for (const withScale of [false, true]) {
    it(`matches the reference over several steps${withScale ? " with a gradient scale" : ""}`, async () => {
      const ctx = await testContext();
      const n = 1003; // vec4 body and scalar tail
      const state = { param: randomArray(n, 1), m: new Float32Array(n), v: new Float32Array(n) };
      const buffers = uploadState(ctx, state);
      const gradScale = withScale ? new Float32Array([0.7]) : undefined;
      const scaleBuffer = gradScale ? ctx.upload(gradScale) : undefined;
      for (let step = 1; step <= 5; step++) {
        const g = randomArray(n, 10 + step, 0.5);
        const grad = ctx.upload(g);
        adamw(ctx, { ...buffers, grad, n, ...HYPER, step, gradScale: scaleBuffer });
        adamwRef({ ...state, grad: g, n, ...HYPER, step, gradScale });
        ctx.pool.release(grad);
      }
      const after = await readState(ctx, buffers, n);
      expectClose(after.param, state.param, 1e-5, 1e-5);
      expectClose(after.m, state.m, 1e-6, 1e-5);
      expectClose(after.v, state.v, 1e-8, 1e-5);
      for (const b of Object.values(buffers)) ctx.pool.release(b);
      if (scaleBuffer) ctx.pool.release(scaleBuffer);
    });
  }

  it("records nothing for n = 0 and rejects step 0", async () => {
    const ctx = await testContext();
    const b = ctx.pool.acquire(16);
    const before = ctx.stats.dispatches;
    adamw(ctx, { param: b, grad: b, m: b, v: b, n: 0, ...HYPER, step: 1 });
    expect(ctx.stats.dispatches).toBe(before);
    expect(() => adamw(ctx, { param: b, grad: b, m: b, v: b, n: 4, ...HYPER, step: 0 })).toThrow(/step/);
    ctx.pool.release(b);
  });
});

describe("gradient clipping", () => {
  it("sumOfSquares accumulates over several tensors", async () => {
    const ctx = await testContext();
    const tensors = [randomArray(1, 1), randomArray(1001, 2), randomArray(70_000, 3), randomArray(4, 4)];
    const out = ctx.upload(new Float32Array([123]));
    const expected = new Float32Array([123]);
    tensors.forEach((x, k) => {
      const xb = ctx.upload(x);
      sumOfSquares(ctx, { x: xb, n: x.length, out, accumulate: k > 0 });
      sumOfSquaresRef({ x, n: x.length, out: expected, accumulate: k > 0 });
      ctx.pool.release(xb);
    });
    expectClose(await readF32(ctx, out, 1), expected, 0, 1e-6);
    ctx.pool.release(out);
  });

  it("sumOfSquares of 5 million elements matches and is bit-identical across runs", async () => {
    const ctx = await testContext();
    const n = 5_000_000;
    const x = randomArray(n, 7);
    const xb = ctx.upload(x);
    const out = ctx.pool.acquire(4);
    const results: number[] = [];
    for (let run = 0; run < 3; run++) {
      sumOfSquares(ctx, { x: xb, n, out, accumulate: false });
      results.push((await readF32(ctx, out, 1))[0]!);
    }
    const expected = new Float32Array(1);
    sumOfSquaresRef({ x, n, out: expected, accumulate: false });
    expectClose([results[0]!], expected, 0, 1e-5);
    expect(results[1]).toBe(results[0]);
    expect(results[2]).toBe(results[0]);
    ctx.pool.release(xb);
    ctx.pool.release(out);
  });

  it("clipScale is 1 below maxNorm, maxNorm / norm above it, and exposes the norm", async () => {
    const ctx = await testContext();
    for (const [sum, maxNorm] of [
      [4, 5],
      [400, 5],
      [0, 1],
    ] as const) {
      const sumSquares = ctx.upload(new Float32Array([sum]));
      const out = ctx.pool.acquire(4);
      const norm = ctx.pool.acquire(4);
      clipScale(ctx, { sumSquares, out, maxNorm, norm });
      const expected = { out: new Float32Array(1), norm: new Float32Array(1) };
      clipScaleRef({ sumSquares: new Float32Array([sum]), maxNorm, ...expected });
      expectClose(await readF32(ctx, out, 1), expected.out, 0, 1e-6);
      expectClose(await readF32(ctx, norm, 1), expected.norm, 0, 1e-6);
      for (const b of [sumSquares, out, norm]) ctx.pool.release(b);
    }
  });

  it("clipScale with a loss scale unscales the norm and the factor, and moves the scale's state as the reference", async () => {
    const ctx = await testContext();
    const rule = { growthFactor: 2, backoffFactor: 0.5, growthInterval: 3 };
    // [sum of squares, scale, finite steps in a row]: a plain step, a growth, a backoff, both bounds.
    for (const [sum, scale, finiteSteps] of [
      [4 * 2 ** 32, 2 ** 16, 0],
      [400, 8, 2],
      [Number.POSITIVE_INFINITY, 2 ** 16, 2],
      [Number.NaN, 2 ** -64, 1],
      [1, 2 ** 64, 2],
    ] as const) {
      const sumSquares = ctx.upload(new Float32Array([sum]));
      const state = ctx.upload(new Float32Array([scale, finiteSteps]));
      const out = ctx.pool.acquire(4);
      const norm = ctx.pool.acquire(4);
      clipScale(ctx, { sumSquares, out, maxNorm: 5, norm, lossScale: { ...rule, state } });
      const expected = {
        out: new Float32Array(1),
        norm: new Float32Array(1),
        state: new Float32Array([scale, finiteSteps]),
      };
      clipScaleRef({
        sumSquares: new Float32Array([sum]),
        maxNorm: 5,
        out: expected.out,
        norm: expected.norm,
        lossScale: { ...rule, state: expected.state },
      });
      expectClose(await readF32(ctx, out, 1), expected.out, 0, 1e-6);
      if (Number.isFinite(sum)) expectClose(await readF32(ctx, norm, 1), expected.norm, 0, 1e-6);
      expect(Array.from(await readF32(ctx, state, 2))).toEqual(Array.from(expected.state));
      for (const b of [sumSquares, state, out, norm]) ctx.pool.release(b);
    }
    // The reference's own rule, spelled out for two of the cases.
    const growth = new Float32Array([8, 2]);
    clipScaleRef({
      sumSquares: new Float32Array([400]),
      maxNorm: 5,
      out: new Float32Array(1),
      lossScale: { ...rule, state: growth },
    });
    expect(Array.from(growth)).toEqual([16, 0]);
    const backoff = new Float32Array([2 ** -64, 1]);
    clipScaleRef({
      sumSquares: new Float32Array([Number.NaN]),
      maxNorm: 5,
      out: new Float32Array(1),
      lossScale: { ...rule, state: backoff },
    });
    expect(Array.from(backoff)).toEqual([2 ** -64, 0]);
  });

  it("a non-finite gradient norm gives scale 0, and adamw then leaves param, m and v unchanged", async () => {
    const ctx = await testContext();
    const n = 1003;
    const state = {
      param: randomArray(n, 1),
      m: randomArray(n, 2, 0.1),
      v: randomArray(n, 3, 0.01).map(Math.abs),
    };
    for (const poison of [Number.POSITIVE_INFINITY, Number.NaN, 1e30]) {
      const g = randomArray(n, 4);
      g[n - 2] = poison; // 1e30 squared overflows f32 to Inf
      const grad = ctx.upload(g);
      const buffers = uploadState(ctx, state);
      const sum = ctx.pool.acquire(4);
      const scale = ctx.pool.acquire(4);
      sumOfSquares(ctx, { x: grad, n, out: sum, accumulate: false });
      clipScale(ctx, { sumSquares: sum, out: scale, maxNorm: 1 });
      adamw(ctx, { ...buffers, grad, n, ...HYPER, step: 3, gradScale: scale });
      expect((await readF32(ctx, scale, 1))[0]).toBe(0);
      const after = await readState(ctx, buffers, n);
      for (const key of ["param", "m", "v"] as const)
        expect(Array.from(after[key])).toEqual(Array.from(state[key]));
      for (const b of [grad, sum, scale, ...Object.values(buffers)]) ctx.pool.release(b);
    }
  });

  it("scaleInPlace multiplies by a scale held on the GPU", async () => {
    const ctx = await testContext();
    for (const n of [1, 7, 1000]) {
      const x = randomArray(n, n);
      const xb = ctx.upload(x);
      const scale = ctx.upload(new Float32Array([0.25]));
      scaleInPlace(ctx, { x: xb, n, scale });
      scaleInPlaceRef({ x, n, scale: new Float32Array([0.25]) });
      expectClose(await readF32(ctx, xb, n), x, 0, 0);
      ctx.pool.release(xb);
      ctx.pool.release(scale);
    }
  });
});
