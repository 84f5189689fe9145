import { describe, expect, it } from "vitest";
import type { ReduceOp } from "../src/core/ops.js";
import type { GpuContext } from "../src/gpu/context.js";
import { argmax, reduce, reduceTuning } from "../src/kernels/reduce.js";
import { argmaxRef, reduceRef } from "../src/reference/reduce.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const OPS: ReduceOp[] = ["sum", "mean", "max", "min"];

interface Dims {
  outer: number;
  size: number;
  inner: number;
}

async function runReduce(ctx: GpuContext, op: ReduceOp, x: Float32Array, dims: Dims): Promise<Float32Array> {
  const xb = ctx.upload(x);
  const out = ctx.pool.acquire(dims.outer * dims.inner * 4);
  reduce(ctx, { op, x: xb, out, ...dims });
  const result = new Float32Array(await ctx.read(out, dims.outer * dims.inner * 4));
  ctx.pool.release(xb);
  ctx.pool.release(out);
  return result;
}

/** f32 summation error bound: a few ulps of the sum of magnitudes (max/min/mean of a few terms are exact-ish). */
function checkAgainstReference(actual: Float32Array, x: Float32Array, op: ReduceOp, dims: Dims): void {
  const expected = reduceRef({ op, x, out: new Float32Array(dims.outer * dims.inner), ...dims });
  if (op === "max" || op === "min") {
    expectClose(actual, expected, 0, 0);
    return;
  }
  const magnitudes = reduceRef({ op, x: x.map(Math.abs), out: new Float32Array(expected.length), ...dims });
  for (let i = 0; i < expected.length; i++) {
    const bound = 1e-6 * magnitudes[i]! * Math.log2(dims.size + 2) + 1e-7;
    if (!(Math.abs(actual[i]! - expected[i]!) <= bound)) {
      expect.fail(`${op} element ${i}: got ${actual[i]}, expected ${expected[i]} (bound ${bound})`);
    }
  }
}

/** [outer, size, inner] for reducing axis `axis` of a contiguous tensor of `shape`. */
function axisDims(shape: number[], axis: number): Dims {
  const product = (values: number[]) => values.reduce((p, s) => p * s, 1);
  return { outer: product(shape.slice(0, axis)), size: shape[axis]!, inner: product(shape.slice(axis + 1)) };
}

describe("reduce", () => {
  for (const shape of [
    [7, 13, 5],
    [6, 68, 12],
    [5, 3, 131],
    [3, 2, 132],
    [1, 1, 1],
  ]) {
    it(`reduces each axis of a ${shape.join("x")} tensor`, async () => {
      const ctx = await testContext();
      const x = randomArray(shape[0]! * shape[1]! * shape[2]!, shape[1]!, 2);
      for (let axis = 0; axis < 3; axis++) {
        const dims = axisDims(shape, axis);
        for (const op of OPS) checkAgainstReference(await runReduce(ctx, op, x, dims), x, op, dims);
      }
    });
  }

  it("reduces long rows (1 x 1,000,000 and 3 x 100,001) in two stages", async () => {
    const ctx = await testContext();
    for (const dims of [
      { outer: 1, size: 1_000_000, inner: 1 },
      { outer: 3, size: 100_001, inner: 1 },
    ]) {
      const x = randomArray(dims.outer * dims.size, 17);
      x[dims.size - 1] = 5; // the extremes sit at the ends of the row
      x[0] = -5;
      for (const op of OPS) checkAgainstReference(await runReduce(ctx, op, x, dims), x, op, dims);
    }
  });

  it("reduces tall columns ([100000, 3] and [3000, 64] over axis 0)", async () => {
    const ctx = await testContext();
    for (const dims of [
      { outer: 1, size: 100_000, inner: 3 },
      { outer: 1, size: 3000, inner: 64 },
      { outer: 2, size: 700, inner: 8 },
    ]) {
      const x = randomArray(dims.outer * dims.size * dims.inner, 23, 3);
      for (const op of OPS) checkAgainstReference(await runReduce(ctx, op, x, dims), x, op, dims);
    }
  });

  it("reduces more rows than one grid dimension holds (70000 x 64)", async () => {
    const ctx = await testContext();
    const dims = { outer: 70_000, size: 64, inner: 1 };
    const x = randomArray(dims.outer * dims.size, 41);
    for (const op of ["sum", "max"] as const)
      checkAgainstReference(await runReduce(ctx, op, x, dims), x, op, dims);
  });

  for (const lanes of [64, 256]) {
    it(`runs rows with ${lanes} lanes per workgroup (the GPU setting)`, async () => {
      const ctx = await testContext();
      reduceTuning.rowLanes = lanes;
      try {
        for (const dims of [
          { outer: 5, size: 4099, inner: 1 },
          { outer: 2, size: 100_000, inner: 1 },
        ]) {
          const x = randomArray(dims.outer * dims.size, 43);
          for (const op of OPS) checkAgainstReference(await runReduce(ctx, op, x, dims), x, op, dims);
        }
      } finally {
        reduceTuning.rowLanes = undefined;
      }
    });
  }

  it("is deterministic: bit-identical results across runs", async () => {
    const ctx = await testContext();
    for (const dims of [
      { outer: 1, size: 1_000_000, inner: 1 },
      { outer: 1, size: 50_000, inner: 12 },
      { outer: 300, size: 1000, inner: 1 },
    ]) {
      const x = randomArray(dims.outer * dims.size * dims.inner, 31, 100);
      const first = await runReduce(ctx, "sum", x, dims);
      for (let run = 0; run < 3; run++) {
        expect(Array.from(await runReduce(ctx, "sum", x, dims))).toEqual(Array.from(first));
      }
    }
  });

  it("handles empty axes and empty outputs", async () => {
    const ctx = await testContext();
    const empty = { outer: 2, size: 0, inner: 3 };
    expect(Array.from(await runReduce(ctx, "sum", new Float32Array(0), empty))).toEqual([0, 0, 0, 0, 0, 0]);
    expect((await runReduce(ctx, "mean", new Float32Array(0), empty)).every(Number.isNaN)).toBe(true);
    const b = ctx.pool.acquire(16);
    expect(() => reduce(ctx, { op: "max", x: b, out: b, ...empty })).toThrow(/empty/);
    const before = ctx.stats.dispatches;
    reduce(ctx, { op: "sum", x: b, out: b, outer: 0, size: 5, inner: 3 });
    expect(ctx.stats.dispatches).toBe(before);
    ctx.pool.release(b);
  });

  it("max and min propagate NaN", async () => {
    const ctx = await testContext();
    const x = randomArray(200, 3);
    x[150] = Number.NaN;
    for (const op of ["max", "min"] as const) {
      const [rowResult] = await runReduce(ctx, op, x, { outer: 1, size: 200, inner: 1 });
      expect(rowResult).toBeNaN();
    }
  });
});

describe("argmax", () => {
  async function runArgmax(ctx: GpuContext, x: Float32Array, outer: number, size: number): Promise<number[]> {
    const xb = ctx.upload(x);
    const out = ctx.pool.acquire(outer * 4);
    argmax(ctx, { x: xb, out, outer, size });
    const result = Array.from(new Int32Array(await ctx.read(out, outer * 4)));
    ctx.pool.release(xb);
    ctx.pool.release(out);
    return result;
  }

  it("matches the reference for short, long, odd and vec4 rows", async () => {
    const ctx = await testContext();
    for (const [outer, size] of [
      [5, 1],
      [33, 7],
      [9, 63],
      [7, 64],
      [4, 1001],
      [3, 4096],
      [2, 151_936],
    ] as const) {
      const x = randomArray(outer * size, size, 10);
      const expected = argmaxRef({ x, out: new Int32Array(outer), outer, size });
      expect(await runArgmax(ctx, x, outer, size)).toEqual(Array.from(expected));
    }
  });

  it("handles more rows than one grid dimension holds", async () => {
    const ctx = await testContext();
    const [outer, size] = [70_000, 64];
    const x = randomArray(outer * size, 3);
    const expected = argmaxRef({ x, out: new Int32Array(outer), outer, size });
    expect(await runArgmax(ctx, x, outer, size)).toEqual(Array.from(expected));
  });

  it("gives the first of tied maxima, also across lanes and vec4 components", async () => {
    const ctx = await testContext();
    for (const [size, lanes] of [
      [10, undefined],
      [300, undefined],
      [1024, undefined],
      [1024, 256],
      [301, 64],
    ] as const) {
      reduceTuning.rowLanes = lanes;
      const outer = 5;
      const x = new Float32Array(outer * size).fill(-1);
      // row 0: all equal; row 1: max at 3 places; row 2: all -inf; row 3: ties inside one vec4; row 4: NaN
      x.fill(2, 0, size);
      for (const k of [size - 1, 7, Math.floor(size * 0.8)]) x[size + k] = 4;
      x.fill(Number.NEGATIVE_INFINITY, 2 * size, 3 * size);
      x[3 * size + 5] = 3;
      x[3 * size + 6] = 3;
      x[4 * size + 8] = Number.NaN;
      x[4 * size + 1] = 100;
      const expected = argmaxRef({ x, out: new Int32Array(outer), outer, size });
      expect(Array.from(expected)).toEqual([0, 7, 0, 5, 8]);
      try {
        expect(await runArgmax(ctx, x, outer, size)).toEqual(Array.from(expected));
      } finally {
        reduceTuning.rowLanes = undefined;
      }
    }
  });
});
