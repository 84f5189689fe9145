import { describe, expect, it } from "vitest";
import { backward } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend, type WebGpuBackend } from "../src/backends/webgpu.js";
import type { GpuContext } from "../src/gpu/context.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import { rope } from "../src/kernels/rope.js";
import * as ops from "../src/ops/index.js";
import { type RopeShape, ropeRef } from "../src/reference/rope.js";
import { tensor } from "../src/runtime.js";
import type { Tensor } from "../src/tensor.js";
import { expectClose, numericGradient, randomArray, testContext } from "./helpers.js";

/** Left-padded batches: row b has `b * 2` padding tokens (position 1, as Hugging Face fills them) first. */
function leftPaddedPositions(batch: number, seqLen: number, offset = 0): Int32Array {
  const positions = new Int32Array(batch * seqLen);
  for (let b = 0; b < batch; b++) {
    const padding = Math.min(seqLen - 1, b * 2);
    for (let s = 0; s < seqLen; s++) positions[b * seqLen + s] = s < padding ? 1 : offset + s - padding;
  }
  return positions;
}

async function runRope(
  ctx: GpuContext,
  x: Float32Array,
  positions: Int32Array,
  shape: RopeShape,
  inPlace = false,
): Promise<Float32Array> {
  const xBuffer = ctx.upload(x);
  const positionBuffer = ctx.upload(positions);
  const out = inPlace ? xBuffer : ctx.pool.acquire(x.byteLength);
  rope(ctx, { x: xBuffer, out, positions: positionBuffer, ...shape });
  const result = new Float32Array(await ctx.read(out, x.byteLength));
  ctx.pool.release(xBuffer);
  ctx.pool.release(positionBuffer);
  if (!inPlace) ctx.pool.release(out);
  return result;
}

const SHAPES: RopeShape[] = [
  { batch: 1, seqLen: 1, numHeads: 1, headDim: 2, theta: 10_000 },
  { batch: 3, seqLen: 7, numHeads: 2, headDim: 6, theta: 10_000 },
  { batch: 2, seqLen: 17, numHeads: 14, headDim: 64, theta: 1_000_000 },
  { batch: 3, seqLen: 5, numHeads: 2, headDim: 128, theta: 10_000 },
];

function size(shape: RopeShape): number {
  return shape.batch * shape.seqLen * shape.numHeads * shape.headDim;
}

describe("rope", () => {
  for (const shape of SHAPES) {
    it(`matches the reference for ${JSON.stringify(shape)} with left-padded positions`, async () => {
      const ctx = await testContext();
      const x = randomArray(size(shape), shape.headDim + shape.seqLen, 1);
      const positions = leftPaddedPositions(shape.batch, shape.seqLen);
      expectClose(await runRope(ctx, x, positions, shape), ropeRef({ x, positions, ...shape }), 1e-6, 1e-5);
      const inverse = { ...shape, inverse: true };
      expectClose(
        await runRope(ctx, x, positions, inverse),
        ropeRef({ x, positions, ...inverse }),
        1e-6,
        1e-5,
      );
    });
  }

  it("processes tensors larger than one binding in batches of tokens", async () => {
    const ctx = await testContext();
    for (const shape of [SHAPES[1]!, SHAPES[3]!]) {
      const tokenBytes = shape.numHeads * shape.headDim * 4;
      limitBindingsForTesting(256 + 3 * tokenBytes);
      try {
        const x = randomArray(size(shape), 14, 1);
        const positions = leftPaddedPositions(shape.batch, shape.seqLen);
        const expected = ropeRef({ x, positions, ...shape });
        expectClose(await runRope(ctx, x, positions, shape), expected, 1e-6, 1e-5);
        expectClose(await runRope(ctx, x, positions, shape, true), expected, 1e-6, 1e-5);
      } finally {
        limitBindingsForTesting(undefined);
      }
    }
  });

  it("stays accurate at large and negative positions", async () => {
    const ctx = await testContext();
    const shape = { batch: 2, seqLen: 8, numHeads: 2, headDim: 64, theta: 1_000_000 };
    const x = randomArray(size(shape), 3, 1);
    for (const [offset, atol] of [
      [4000, 1e-5],
      [30_000, 1e-4], // an f32 product pos * freq alone is off by ~1e-3 here
      [-50, 1e-5],
    ] as const) {
      const positions = leftPaddedPositions(shape.batch, shape.seqLen, offset);
      expectClose(await runRope(ctx, x, positions, shape), ropeRef({ x, positions, ...shape }), atol, 0);
    }
  });

  it("inverse(rope(x)) == x, in place", async () => {
    const ctx = await testContext();
    const shape = SHAPES[2]!;
    const x = randomArray(size(shape), 9, 1);
    const positions = leftPaddedPositions(shape.batch, shape.seqLen, 100);
    const xBuffer = ctx.upload(x);
    const positionBuffer = ctx.upload(positions);
    rope(ctx, { x: xBuffer, out: xBuffer, positions: positionBuffer, ...shape });
    const rotated = new Float32Array(await ctx.read(xBuffer, x.byteLength));
    rope(ctx, { x: xBuffer, out: xBuffer, positions: positionBuffer, ...shape, inverse: true });
    const back = new Float32Array(await ctx.read(xBuffer, x.byteLength));
    expectClose(rotated, ropeRef({ x, positions, ...shape }), 1e-5, 1e-5);
    expectClose(back, x, 1e-6, 1e-5);
    expect(Math.max(...rotated.map((v, i) => Math.abs(v - x[i]!)))).toBeGreaterThan(0.1);
    ctx.pool.release(xBuffer);
    ctx.pool.release(positionBuffer);
  });

  it("in place matches out of place for an odd half", async () => {
    const ctx = await testContext();
    const shape = SHAPES[1]!;
    const x = randomArray(size(shape), 10, 1);
    const positions = leftPaddedPositions(shape.batch, shape.seqLen);
    expectClose(await runRope(ctx, x, positions, shape, true), await runRope(ctx, x, positions, shape), 0, 0);
  });

  it("reference backward (the inverse rotation of dOut) matches finite differences", () => {
    const shape = { batch: 2, seqLen: 3, numHeads: 2, headDim: 4, theta: 10_000 };
    const x = Float64Array.from(randomArray(size(shape), 11, 1));
    const dOut = Float64Array.from(randomArray(size(shape), 12, 1));
    const positions = Int32Array.from([1, 0, 1, 5, 6, 7]);
    expectClose(
      ropeRef({ x: dOut, positions, ...shape, inverse: true }),
      numericGradient((input) => ropeRef({ x: input, positions, ...shape }), x, dOut),
      1e-8,
      1e-6,
    );
  });
});

describe("ropeAppend (rotary embedding and KV-cache append in one kernel)", () => {
  const cases = [
    { batch: 3, seqLen: 1, numHeads: 4, numKvHeads: 2, headDim: 32, capacity: 9, at: 5 },
    { batch: 2, seqLen: 3, numHeads: 6, numKvHeads: 3, headDim: 6, capacity: 7, at: 4 },
    { batch: 1, seqLen: 2, numHeads: 2, numKvHeads: 2, headDim: 16, capacity: 2, at: 0 },
  ];
  const theta = 10000;

  /** Each token's q heads, then its k heads, then its v heads: a fused q/k/v projection's output. */
  function packHeads(parts: Float32Array[], headsOf: number[], tokens: number, headDim: number) {
    const rowHeads = headsOf.reduce((a, b) => a + b, 0);
    const packed = new Float32Array(tokens * rowHeads * headDim);
    for (let t = 0; t < tokens; t++) {
      let offset = t * rowHeads * headDim;
      for (const [i, part] of parts.entries()) {
        const width = headsOf[i]! * headDim;
        packed.set(part.subarray(t * width, (t + 1) * width), offset);
        offset += width;
      }
    }
    return packed;
  }

  /** rope(q) and the caches after the step, by the fused op, the packed op and rope + writeSlice. */
  async function bothWays(backend: Backend, c: (typeof cases)[number], seed: number) {
    const { batch, seqLen, numHeads, numKvHeads, headDim, capacity, at } = c;
    const qValues = randomArray(batch * seqLen * numHeads * headDim, seed);
    const kValues = randomArray(batch * seqLen * numKvHeads * headDim, seed + 1);
    const vValues = randomArray(batch * seqLen * numKvHeads * headDim, seed + 2);
    const cacheValues = randomArray(batch * capacity * numKvHeads * headDim, seed + 3);
    const positions = tensor(leftPaddedPositions(batch, seqLen, at), [batch * seqLen], {
      backend,
      dtype: "i32",
    });
    const run = async (way: "fused" | "packed" | "separate") => {
      const q = tensor(qValues, [batch, seqLen, numHeads, headDim], { backend });
      const k = tensor(kValues, [batch, seqLen, numKvHeads, headDim], { backend });
      const v = tensor(vValues, [batch, seqLen, numKvHeads, headDim], { backend });
      const cacheShape = [batch, capacity, numKvHeads, headDim];
      const keys = tensor(cacheValues, cacheShape, { backend });
      const values = tensor(
        cacheValues.map((x) => -x),
        cacheShape,
        { backend },
      );
      let qr: Tensor;
      const dispatched = () => (backend as Partial<WebGpuBackend>).ctx?.stats.dispatches ?? 0;
      const qkvValues = packHeads(
        [qValues, kValues, vValues],
        [numHeads, numKvHeads, numKvHeads],
        batch * seqLen,
        headDim,
      );
      const qkv = tensor(qkvValues, [batch, seqLen, numHeads + 2 * numKvHeads, headDim], { backend });
      const before = dispatched();
      if (way === "fused") qr = ops.ropeAppend(q, k, v, positions, theta, { keys, values, at });
      else if (way === "packed")
        qr = ops.ropeAppendPacked(qkv, positions, theta, { keys, values, at }, { numHeads, numKvHeads });
      else {
        qr = ops.rope(q, positions, theta);
        const kr = ops.rope(k, positions, theta);
        ops.writeSlice(keys, kr, 1, at);
        ops.writeSlice(values, v, 1, at);
      }
      const dispatches = dispatched() - before;
      return { q: await qr.floats(), keys: await keys.floats(), values: await values.floats(), dispatches };
    };
    return { fused: await run("fused"), packed: await run("packed"), separate: await run("separate") };
  }

  for (const [i, c] of cases.entries()) {
    it(`gives the separate ops' bits in one dispatch on WebGPU: ${JSON.stringify(c)}`, async () => {
      const gpu = createWebGpuBackend(await testContext());
      const { fused, packed, separate } = await bothWays(gpu, c, 10 * i + 1);
      expect(fused.dispatches).toBe(1);
      expect(packed).toEqual(fused);
      expect(separate.dispatches).toBeGreaterThanOrEqual(2); // two ropes; the writes are copies or kernels
      expect(Array.from(fused.q)).toEqual(Array.from(separate.q));
      expect(Array.from(fused.keys)).toEqual(Array.from(separate.keys));
      expect(Array.from(fused.values)).toEqual(Array.from(separate.values));
    });
  }

  it("falls back to rope and writeSlice on the CPU backend, and where a cache exceeds one binding", async () => {
    const cpu = createCpuBackend();
    const onCpu = await bothWays(cpu, cases[1]!, 7);
    expect(onCpu.fused).toEqual(onCpu.separate);
    expect(onCpu.packed).toEqual(onCpu.separate);
    const gpu = createWebGpuBackend(await testContext());
    limitBindingsForTesting(1024);
    try {
      const { fused, packed, separate } = await bothWays(gpu, cases[0]!, 8);
      expect(fused.dispatches).toBe(separate.dispatches);
      expect(Array.from(packed.q)).toEqual(Array.from(separate.q));
      expect(Array.from(packed.keys)).toEqual(Array.from(separate.keys));
      expect(Array.from(packed.values)).toEqual(Array.from(separate.values));
      expect(Array.from(fused.keys)).toEqual(Array.from(separate.keys));
      expect(Array.from(fused.q)).toEqual(Array.from(separate.q));
    } finally {
      limitBindingsForTesting(undefined);
    }
  });

  it("is recorded as rope where q needs a gradient", async () => {
    const gpu = createWebGpuBackend(await testContext());
    const q = tensor(randomArray(2 * 1 * 2 * 8, 3), [2, 1, 2, 8], { backend: gpu, requiresGrad: true });
    const k = tensor(randomArray(2 * 8, 4), [2, 1, 1, 8], { backend: gpu });
    const cache = () => tensor(new Float32Array(2 * 3 * 8), [2, 3, 1, 8], { backend: gpu });
    const positions = tensor(Int32Array.from([2, 5]), [2], { backend: gpu, dtype: "i32" });
    const qr = ops.ropeAppend(q, k, k, positions, theta, { keys: cache(), values: cache(), at: 1 });
    backward(ops.sum(qr));
    expect(q.grad?.shape).toEqual([2, 1, 2, 8]);
  });

  it("ropeAppendPacked names the shape it expected", () => {
    const cpu = createCpuBackend();
    const qkv = tensor(new Float32Array(2 * 5 * 8), [2, 1, 5, 8], { backend: cpu });
    const cache = () => tensor(new Float32Array(2 * 3 * 8), [2, 3, 1, 8], { backend: cpu });
    const positions = tensor(Int32Array.from([2, 5]), [2], { backend: cpu, dtype: "i32" });
    expect(() =>
      ops.ropeAppendPacked(
        qkv,
        positions,
        theta,
        { keys: cache(), values: cache(), at: 1 },
        { numHeads: 2, numKvHeads: 1 },
      ),
    ).toThrow(/expected qkv as \[batch, seqLen, 2 \+ 2 x 1 heads, headDim\].*\[2, 1, 5, 8\]/);
  });
});
