import { describe, expect, it } from "vitest";
import type { BinaryOp, UnaryOp } from "../src/core/ops.js";
import type { GpuContext } from "../src/gpu/context.js";
import {
  affine,
  binary,
  clamp,
  contiguousStrides,
  planBinary,
  unary,
  where,
} from "../src/kernels/elementwise.js";
import { affineRef, binaryRef, clampRef, unaryRef, whereRef } from "../src/reference/elementwise.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

async function readF32(ctx: GpuContext, buffer: GPUBuffer, n: number): Promise<Float32Array> {
  return new Float32Array(await ctx.read(buffer, n * 4));
}

/** expectClose, where non-finite expected values (inf, NaN) must be matched exactly. */
function expectMatch(actual: Float32Array, expected: Float32Array, atol: number, rtol: number): void {
  const finite = (v: number) => Number.isFinite(v);
  for (let i = 0; i < expected.length; i++) {
    if (!finite(expected[i]!) || !finite(actual[i]!)) {
      expect(`${i}: ${actual[i]}`).toBe(`${i}: ${expected[i]}`);
    }
  }
  expectClose(
    actual.map((v) => (finite(v) ? v : 0)),
    expected.map((v) => (finite(v) ? v : 0)),
    atol,
    rtol,
  );
}

/** Quantised to quarters, so comparisons meet ties. */
function quantised(n: number, seed: number, scale: number): Float32Array {
  return randomArray(n, seed, scale).map((v) => Math.round(v * 4) / 4);
}

/** Strides of an operand of shape `operandShape` (1 = broadcast dimension) read along `outShape`. */
function broadcastStrides(operandShape: number[]): number[] {
  const strides = contiguousStrides(operandShape);
  return operandShape.map((size, d) => (size === 1 ? 0 : strides[d]!));
}

const count = (shape: number[]) => shape.reduce((p, s) => p * s, 1);

interface BroadcastCase {
  name: string;
  shape: number[];
  aShape: number[];
  bShape: number[];
}

const BROADCASTS: BroadcastCase[] = [
  { name: "same shape, n % 4 != 0", shape: [3, 5, 7], aShape: [3, 5, 7], bShape: [3, 5, 7] },
  { name: "scalar b", shape: [4, 33], aShape: [4, 33], bShape: [1, 1] },
  { name: "scalar a", shape: [37], aShape: [1], bShape: [37] },
  { name: "row b (row % 4 == 0)", shape: [6, 20], aShape: [6, 20], bShape: [1, 20] },
  { name: "row b (odd row)", shape: [5, 7], aShape: [5, 7], bShape: [1, 7] },
  { name: "column b", shape: [8, 12], aShape: [8, 12], bShape: [8, 1] },
  { name: "column a (odd)", shape: [9, 5], aShape: [9, 1], bShape: [9, 5] },
  { name: "middle axis", shape: [3, 4, 5], aShape: [3, 4, 5], bShape: [3, 1, 5] },
  { name: "middle axis (vec4 rows)", shape: [3, 4, 8], aShape: [3, 4, 8], bShape: [3, 1, 8] },
  { name: "outer product", shape: [7, 6], aShape: [7, 1], bShape: [1, 6] },
  { name: "6-d", shape: [2, 3, 2, 4, 3, 5], aShape: [2, 1, 2, 4, 1, 5], bShape: [1, 3, 2, 1, 3, 1] },
  { name: "size 1", shape: [1, 1], aShape: [1, 1], bShape: [1, 1] },
  { name: "rank 0", shape: [], aShape: [], bShape: [] },
];

async function runBinary(
  ctx: GpuContext,
  op: BinaryOp,
  c: { shape: number[]; aStrides: number[]; bStrides: number[] },
  a: Float32Array,
  b: Float32Array,
): Promise<{ actual: Float32Array; expected: Float32Array }> {
  const n = count(c.shape);
  const ab = ctx.upload(a);
  const bb = ctx.upload(b);
  const out = ctx.pool.acquire(n * 4);
  binary(ctx, { op, a: ab, b: bb, out, ...c });
  const actual = await readF32(ctx, out, n);
  const expected = binaryRef({ op, a, b, out: new Float32Array(n), ...c });
  for (const buffer of [ab, bb, out]) ctx.pool.release(buffer);
  return { actual, expected };
}

const ALL_BINARY: BinaryOp[] = [
  "add",
  "sub",
  "mul",
  "div",
  "max",
  "min",
  "pow",
  "gt",
  "ge",
  "lt",
  "le",
  "eq",
];

/** Inputs in each op's domain: divisors away from 0, pow with positive bases or integer exponents. */
function binaryInputs(
  op: BinaryOp,
  aSize: number,
  bSize: number,
  seed: number,
): [Float32Array, Float32Array] {
  const a = quantised(aSize, seed, 3);
  const b = quantised(bSize, seed + 1, 3);
  if (op === "div") return [a, b.map((v, i) => (v >= 0 ? v + 0.5 : v - 0.5) * (i % 2 ? 1 : -1))];
  if (op === "pow") return [a.map((v, i) => (i % 3 === 0 ? v : Math.abs(v) + 0.25)), b.map(Math.round)];
  return [a, b];
}

describe("binary", () => {
  for (const c of BROADCASTS) {
    it(`matches the reference: ${c.name}`, async () => {
      const ctx = await testContext();
      const aStrides = broadcastStrides(c.aShape);
      const bStrides = broadcastStrides(c.bShape);
      for (const op of ALL_BINARY) {
        const [a, b] = binaryInputs(op, count(c.aShape), count(c.bShape), 11);
        const { actual, expected } = await runBinary(ctx, op, { shape: c.shape, aStrides, bStrides }, a, b);
        expectMatch(actual, expected, 1e-5, op === "pow" ? 1e-5 : 1e-6);
      }
    });
  }

  it("reads permuted and sliced operands through the strided kernel", async () => {
    const ctx = await testContext();
    // a is a [5, 6] matrix read transposed; b is every other column of a [6, 10] matrix from column 0.
    const shape = [6, 5];
    const aStrides = [1, 6];
    const bStrides = [10, 2];
    expect(planBinary(shape, aStrides, bStrides).kernel).toBe("strided");
    const [a, b] = [randomArray(30, 3), randomArray(60, 4)];
    const { actual, expected } = await runBinary(ctx, "sub", { shape, aStrides, bStrides }, a, b);
    expectClose(actual, expected, 0, 0);
  });

  it("reads a permuted operand with a broadcast one through the vec4 strided kernel", async () => {
    const ctx = await testContext();
    // a: [6, 4, 8] stored, read as [4, 6, 8]; b: [4, 6, 1] broadcast along the last axis.
    const shape = [4, 6, 8];
    const aStrides = [8, 32, 1];
    const bStrides = [6, 1, 0];
    expect(planBinary(shape, aStrides, bStrides)).toMatchObject({
      kernel: "strided",
      width: 4,
      kinds: ["vector", "splat"],
    });
    for (const op of ALL_BINARY) {
      const [a, b] = binaryInputs(op, 192, 24, 5);
      const { actual, expected } = await runBinary(ctx, op, { shape, aStrides, bStrides }, a, b);
      expectMatch(actual, expected, 1e-5, op === "pow" ? 1e-5 : 1e-6);
    }
  });

  it("pow follows Math.pow for negative bases, zero and non-integer exponents", async () => {
    const ctx = await testContext();
    const a = new Float32Array([-2, -2, -2, 0, 0, 2, -8, 1.5, 0, -0, -0, -0, Number.NaN, 1]);
    const b = new Float32Array([2, 3, 0.5, 2, -1, 0.5, 0, -2, 0, -1, -2, 0.5, 0, Number.NaN]);
    const shape = [a.length];
    const { actual, expected } = await runBinary(ctx, "pow", { shape, aStrides: [1], bStrides: [1] }, a, b);
    expectMatch(actual, expected, 1e-6, 1e-6);
  });

  it("max and min propagate NaN", async () => {
    const ctx = await testContext();
    const a = new Float32Array([Number.NaN, 1, 2, 3]);
    const b = new Float32Array([0, Number.NaN, 1, 4]);
    const strides = { shape: [4], aStrides: [1], bStrides: [1] };
    for (const op of ["max", "min"] as const) {
      const { actual } = await runBinary(ctx, op, strides, a, b);
      expect(Number.isNaN(actual[0]) && Number.isNaN(actual[1])).toBe(true);
      expect([actual[2], actual[3]]).toEqual(op === "max" ? [2, 4] : [1, 3]);
    }
  });

  it("chooses the fast contiguous kernel for no, scalar, row and column broadcasting", () => {
    expect(planBinary([64, 32], [32, 1], [32, 1])).toMatchObject({ kernel: "fast", vectorized: true });
    expect(planBinary([64, 32], [32, 1], [0, 0])).toMatchObject({ kernel: "fast", b: { kind: "scalar" } });
    expect(planBinary([2, 64, 32], [2048, 32, 1], [0, 0, 1])).toMatchObject({
      kernel: "fast",
      b: { kind: "row", length: 32 },
      vectorized: true,
    });
    expect(planBinary([2, 64, 32], [2048, 32, 1], [64, 1, 0])).toMatchObject({
      kernel: "fast",
      b: { kind: "column", length: 32 },
    });
    expect(planBinary([4, 3, 8], [24, 8, 1], [8, 0, 1])).toMatchObject({ kernel: "strided", width: 4 });
    expect(planBinary([4, 3, 5], [15, 5, 1], [5, 0, 1])).toMatchObject({ kernel: "strided", width: 1 });
  });

  it("records nothing for an empty output", async () => {
    const ctx = await testContext();
    const buffer = ctx.pool.acquire(16);
    const before = ctx.stats.dispatches;
    binary(ctx, {
      op: "add",
      a: buffer,
      b: buffer,
      out: buffer,
      shape: [4, 0],
      aStrides: [1, 1],
      bStrides: [1, 1],
    });
    expect(ctx.stats.dispatches).toBe(before);
    ctx.pool.release(buffer);
  });
});

type Domain = "any" | "positive" | "angle";
const UNARY_CASES: { op: UnaryOp; domain: Domain; atol: number; rtol: number }[] = [
  { op: "neg", domain: "any", atol: 0, rtol: 0 },
  { op: "exp", domain: "any", atol: 1e-6, rtol: 2e-6 },
  { op: "log", domain: "positive", atol: 1e-6, rtol: 2e-6 },
  { op: "sqrt", domain: "positive", atol: 1e-6, rtol: 2e-6 },
  { op: "rsqrt", domain: "positive", atol: 1e-6, rtol: 2e-6 },
  { op: "abs", domain: "any", atol: 0, rtol: 0 },
  { op: "tanh", domain: "any", atol: 1e-6, rtol: 2e-6 },
  { op: "sigmoid", domain: "any", atol: 1e-6, rtol: 2e-6 },
  { op: "silu", domain: "any", atol: 1e-6, rtol: 2e-6 },
  { op: "relu", domain: "any", atol: 0, rtol: 0 },
  { op: "square", domain: "any", atol: 0, rtol: 1e-7 },
  { op: "reciprocal", domain: "positive", atol: 0, rtol: 1e-6 },
  { op: "sin", domain: "angle", atol: 2e-6, rtol: 0 },
  { op: "cos", domain: "angle", atol: 2e-6, rtol: 0 },
  { op: "sign", domain: "any", atol: 0, rtol: 0 },
];

function unaryInput(domain: Domain, n: number, seed: number): Float32Array {
  const x = randomArray(n, seed, 6);
  if (domain === "positive") return x.map((v) => Math.abs(v) * 10 + 1e-3);
  if (domain === "angle") return x.map((v) => v * 20); // several turns: exercises the range reduction
  x[0] = 0;
  if (n > 2) x[1] = -100; // exp(100) overflows inside sigmoid and silu
  if (n > 3) x[2] = 1e-4; // tanh near 0
  return x;
}

describe("unary", () => {
  for (const { op, domain, atol, rtol } of UNARY_CASES) {
    it(`${op} matches the reference (vec4 body and scalar tail)`, async () => {
      const ctx = await testContext();
      for (const n of [1, 3, 1027]) {
        const x = unaryInput(domain, n, 5 + n);
        const xb = ctx.upload(x);
        const out = ctx.pool.acquire(n * 4);
        unary(ctx, { op, x: xb, out, n });
        expectClose(await readF32(ctx, out, n), unaryRef({ op, x, out: new Float32Array(n), n }), atol, rtol);
        ctx.pool.release(xb);
        ctx.pool.release(out);
      }
    });
  }

  it("handles 5 million elements", async () => {
    const ctx = await testContext();
    const n = 5_000_003;
    const x = randomArray(n, 9, 4);
    const xb = ctx.upload(x);
    const out = ctx.pool.acquire(n * 4);
    unary(ctx, { op: "exp", x: xb, out, n });
    expectClose(
      await readF32(ctx, out, n),
      unaryRef({ op: "exp", x, out: new Float32Array(n), n }),
      1e-6,
      2e-6,
    );
    ctx.pool.release(xb);
    ctx.pool.release(out);
  });

  it("records nothing for n = 0", async () => {
    const ctx = await testContext();
    const buffer = ctx.pool.acquire(16);
    const before = ctx.stats.dispatches;
    unary(ctx, { op: "exp", x: buffer, out: buffer, n: 0 });
    expect(ctx.stats.dispatches).toBe(before);
    ctx.pool.release(buffer);
  });
});

describe("affine, clamp, where", () => {
  it("affine computes x * scale + shift", async () => {
    const ctx = await testContext();
    for (const n of [1, 6, 1001]) {
      const x = randomArray(n, n, 2);
      const xb = ctx.upload(x);
      const out = ctx.pool.acquire(n * 4);
      affine(ctx, { x: xb, out, n, scale: -1.5, shift: 0.25 });
      const expected = affineRef({ x, out: new Float32Array(n), n, scale: -1.5, shift: 0.25 });
      expectClose(await readF32(ctx, out, n), expected, 1e-6, 1e-6);
      ctx.pool.release(xb);
      ctx.pool.release(out);
    }
  });

  it("clamp bounds values, gives max when min > max and keeps NaN", async () => {
    const ctx = await testContext();
    const n = 103;
    const x = randomArray(n, 2, 3);
    x[0] = Number.NaN;
    const xb = ctx.upload(x);
    const out = ctx.pool.acquire(n * 4);
    for (const [min, max] of [
      [-1, 0.5],
      [1, -1],
    ] as const) {
      clamp(ctx, { x: xb, out, n, min, max });
      const actual = await readF32(ctx, out, n);
      expect(Number.isNaN(actual[0])).toBe(true);
      const expected = clampRef({ x, out: new Float32Array(n), n, min, max });
      expectClose(actual.subarray(1), expected.subarray(1), 0, 0);
    }
    ctx.pool.release(xb);
    ctx.pool.release(out);
  });

  it("record nothing for n = 0", async () => {
    const ctx = await testContext();
    const b = ctx.pool.acquire(16);
    const before = ctx.stats.dispatches;
    affine(ctx, { x: b, out: b, n: 0, scale: 2, shift: 1 });
    clamp(ctx, { x: b, out: b, n: 0, min: 0, max: 1 });
    where(ctx, { cond: b, a: b, b, out: b, n: 0 });
    expect(ctx.stats.dispatches).toBe(before);
    ctx.pool.release(b);
  });

  it("where selects a where cond != 0, else b", async () => {
    const ctx = await testContext();
    for (const n of [1, 7, 1024]) {
      const cond = quantised(n, 1, 1);
      const [a, b] = [randomArray(n, 2), randomArray(n, 3)];
      const buffers = [cond, a, b].map((v) => ctx.upload(v));
      const out = ctx.pool.acquire(n * 4);
      where(ctx, { cond: buffers[0]!, a: buffers[1]!, b: buffers[2]!, out, n });
      expectClose(await readF32(ctx, out, n), whereRef({ cond, a, b, out: new Float32Array(n), n }), 0, 0);
      for (const buffer of [...buffers, out]) ctx.pool.release(buffer);
    }
  });
});
