import { afterEach, describe, expect, it, vi } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import {
  limitMatmulForTesting,
  type MatmulArgs,
  type MatmulVariant,
  matmul,
  matmulVariant,
  textureVariantAvailable,
} from "../src/kernels/matmul.js";
import { BLOCKED_TILES, blockedTileBytes } from "../src/kernels/matmul-gpu.js";
import { matmulRef } from "../src/reference/matmul.js";
import { expectClose, randomArray, testContext } from "./helpers.js";
import { type Case, check, compute, describeCase, lengths, tolerance } from "./matmul-check.js";

const shapes: Case[] = [
  { batch: 1, m: 1, n: 1, k: 1 },
  { batch: 1, m: 3, n: 5, k: 7 },
  { batch: 1, m: 17, n: 33, k: 65 },
  { batch: 1, m: 17, n: 33, k: 65, transA: true },
  { batch: 1, m: 17, n: 33, k: 65, transB: true },
  { batch: 1, m: 17, n: 33, k: 65, transA: true, transB: true },
  { batch: 1, m: 64, n: 64, k: 64 },
  { batch: 1, m: 100, n: 257, k: 129, transB: true },
  { batch: 1, m: 100, n: 257, k: 129, transA: true },
  { batch: 3, m: 20, n: 30, k: 40, bBatchStride: 0 }, // one weight for every batch
  { batch: 3, m: 20, n: 30, k: 40, bBatchStride: 0, transB: true },
  { batch: 2, m: 24, n: 18, k: 36, aBatchStride: 0, transA: true },
  { batch: 2, m: 9, n: 10, k: 11, aBatchStride: 120, bBatchStride: 130 }, // padded batches
  { batch: 2, m: 33, n: 31, k: 29, accumulate: true, alpha: 0.5 },
  { batch: 1, m: 40, n: 24, k: 72, transA: true, transB: true, accumulate: true, alpha: -1.5 },
  { batch: 1, m: 8, n: 8, k: 4096 }, // long k (the texture variant splits it into accumulating chunks)
  { batch: 1, m: 256, n: 896, k: 128, transB: true }, // transformer-shaped: x · Wᵀ
  { batch: 1, m: 128, n: 192, k: 256, transA: true }, // dW = dYᵀ · X
  // More than 8 rows of 64- and 128-row tiles: the GPU kernels' grouped tile order, with a partial group.
  { batch: 2, m: 1100, n: 300, k: 24, transB: true },
];

const variants: MatmulVariant[] = ["buffer", "tiled", "texture", "blocked"];

afterEach(() => limitMatmulForTesting());

for (const variant of variants) {
  describe(`matmul, "${variant}" variant`, () => {
    const skip = async (ctx: GpuContext) => variant === "texture" && !textureVariantAvailable(ctx);

    it.each(shapes.map((c) => [describeCase(c), c] as const))("%s", async (_, c) => {
      const ctx = await testContext();
      if (await skip(ctx)) return;
      await check(ctx, c, variant, c.m + c.k);
    });

    it("k = 0 writes zeros, or leaves out unchanged when accumulating", async () => {
      const ctx = await testContext();
      if (await skip(ctx)) return;
      await check(ctx, { batch: 2, m: 5, n: 6, k: 0 }, variant);
      await check(ctx, { batch: 2, m: 5, n: 6, k: 0, accumulate: true }, variant);
    });

    it("adds a bias row and an addend in the epilogue, once per element however the problem is chunked", async () => {
      const ctx = await testContext();
      if (await skip(ctx)) return;
      await check(ctx, { batch: 1, m: 17, n: 33, k: 65, transB: true, bias: true }, variant);
      await check(ctx, { batch: 2, m: 33, n: 31, k: 29, accumulate: true, alpha: 0.5, bias: true }, variant);
      await check(ctx, { batch: 1, m: 5, n: 6, k: 0, bias: true }, variant);
      await check(ctx, { batch: 2, m: 20, n: 30, k: 40, transB: true, bias: true, addend: true }, variant);
      await check(ctx, { batch: 1, m: 9, n: 10, k: 11, alpha: -2, accumulate: true, addend: true }, variant);
      limitMatmulForTesting({
        bindingBytes: 12 * 1024,
        textureDimension: 64,
        textureBytes: 24 * 1024,
        workgroupsPerDimension: 3,
      });
      // Chunks along n shift the bias; chunks along k (accumulating) must add it only once; chunks along m
      // and batches move the addend's window with out's.
      await check(ctx, { batch: 2, m: 70, n: 130, k: 150, transB: true, bias: true }, variant);
      await check(ctx, { batch: 3, m: 70, n: 90, k: 150, transA: true, bias: true, addend: true }, variant);
    });

    it("splits problems that exceed bindings, textures or dispatch limits into chunks", async () => {
      const ctx = await testContext();
      if (await skip(ctx)) return;
      limitMatmulForTesting({
        bindingBytes: 12 * 1024,
        textureDimension: 64,
        textureBytes: 24 * 1024,
        workgroupsPerDimension: 3,
      });
      const before = ctx.stats.dispatches;
      await check(ctx, { batch: 3, m: 70, n: 90, k: 150 }, variant);
      // Every variant records through ctx.dispatch, at least one dispatch per chunk.
      expect(ctx.stats.dispatches - before).toBeGreaterThan(8);
      await check(
        ctx,
        { batch: 2, m: 70, n: 90, k: 150, transA: true, transB: true, bBatchStride: 0 },
        variant,
      );
      await check(ctx, { batch: 2, m: 33, n: 130, k: 96, transB: true, accumulate: true, alpha: 2 }, variant);
    });
  });
}

// Every tile shape of the "blocked" kernel (the default 128 x 128 / 8 runs every case above).
const blockedTiles = BLOCKED_TILES.slice(1);
const blockedCases: Case[] = [
  { batch: 1, m: 3, n: 5, k: 7 },
  { batch: 1, m: 17, n: 33, k: 65, transA: true },
  { batch: 1, m: 100, n: 257, k: 129, transB: true },
  { batch: 1, m: 130, n: 70, k: 40, transA: true, transB: true, accumulate: true, alpha: -1.5 },
  { batch: 3, m: 20, n: 30, k: 40, bBatchStride: 0, transB: true },
  { batch: 2, m: 200, n: 150, k: 33 },
];

for (const tile of blockedTiles) {
  describe(`matmul, "blocked" variant with a ${tile.rows}x${tile.cols} tile, k-step ${tile.depth}`, () => {
    it.each(blockedCases.map((c) => [describeCase(c), c] as const))("%s", async (_, c) => {
      const ctx = await testContext();
      if (blockedTileBytes(tile) > ctx.device.limits.maxComputeWorkgroupStorageSize) return;
      await check(ctx, { ...c, blockedTile: tile }, "blocked", c.m + c.k);
    });
  });
}

it("refuses a blocked tile whose slices cannot be staged in whole vec4s", async () => {
  const ctx = await testContext();
  const [a, b, out] = [ctx.pool.acquire(64), ctx.pool.acquire(64), ctx.pool.acquire(64)];
  const args = { a, b, out, batch: 1, m: 2, n: 2, k: 2, variant: "blocked" as const };
  expect(() => matmul(ctx, { ...args, blockedTile: { rows: 64, cols: 64, depth: 8 } })).toThrow(
    /a 64x64 tile needs a k-step of at least 16/,
  );
  expect(() => matmul(ctx, { ...args, blockedTile: { rows: 96, cols: 64, depth: 16 } as never })).toThrow(
    /64 or 128 rows by 64 or 128 columns/,
  );
  for (const buffer of [a, b, out]) ctx.pool.release(buffer);
});

describe('matmul, "matvec" variant (x · Wᵀ, up to 256 rows in blocks of 16)', () => {
  const cases: Case[] = [
    { batch: 1, m: 1, n: 1, k: 1, transB: true },
    { batch: 1, m: 1, n: 257, k: 896, transB: true },
    { batch: 1, m: 3, n: 100, k: 31, transB: true },
    { batch: 1, m: 5, n: 7, k: 1000, transB: true },
    { batch: 1, m: 16, n: 130, k: 96, transB: true },
    { batch: 1, m: 8, n: 64, k: 33, transB: true, accumulate: true, alpha: -0.5 },
    { batch: 3, m: 2, n: 40, k: 50, transB: true, bBatchStride: 0 }, // one weight for every batch
    { batch: 2, m: 4, n: 9, k: 12, transB: true, aBatchStride: 60, bBatchStride: 130 },
    { batch: 1, m: 16, n: 130, k: 96, transB: true, bias: true },
    { batch: 2, m: 3, n: 40, k: 50, transB: true, bBatchStride: 0, accumulate: true, bias: true },
    { batch: 2, m: 5, n: 40, k: 50, transB: true, bBatchStride: 0, bias: true, addend: true },
    // Blocks of 16 rows: a whole block and a ragged last one, with every epilogue term.
    { batch: 1, m: 17, n: 33, k: 70, transB: true },
    { batch: 1, m: 128, n: 24, k: 64, transB: true, bias: true },
    {
      batch: 2,
      m: 41,
      n: 20,
      k: 45,
      transB: true,
      bBatchStride: 0,
      accumulate: true,
      alpha: 0.5,
      addend: true,
    },
  ];
  it.each(cases.map((c) => [describeCase(c), c] as const))("%s", async (_, c) => {
    await check(await testContext(), c, "matvec", c.m + c.n);
  });

  it("splits problems that exceed bindings or dispatch limits into chunks", async () => {
    const ctx = await testContext();
    limitMatmulForTesting({ bindingBytes: 8 * 1024, workgroupsPerDimension: 3 });
    await check(ctx, { batch: 2, m: 6, n: 90, k: 150, transB: true, bBatchStride: 0 }, "matvec");
    await check(ctx, { batch: 1, m: 16, n: 70, k: 200, transB: true, accumulate: true, alpha: 2 }, "matvec");
    await check(ctx, { batch: 1, m: 5, n: 90, k: 150, transB: true, bias: true }, "matvec");
    await check(ctx, { batch: 2, m: 5, n: 90, k: 150, transB: true, addend: true }, "matvec");
    await check(ctx, { batch: 1, m: 40, n: 30, k: 100, transB: true, bias: true }, "matvec");
  });

  it("refuses products it does not take", async () => {
    const ctx = await testContext();
    const buffer = ctx.pool.acquire(4 * 257 * 4);
    const base = { a: buffer, b: buffer, out: buffer, batch: 1, n: 4, k: 4, variant: "matvec" as const };
    expect(() => matmul(ctx, { ...base, m: 257, transB: true })).toThrow(/at most 256 rows/);
    expect(() => matmul(ctx, { ...base, m: 2 })).toThrow(/B transposed/);
    ctx.pool.release(buffer);
  });
});

describe('matmul, "texture" variant specifics', () => {
  it("never lets stale scratch texels (NaN here) reach stored outputs, via copies or repacks", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    // Aligned shapes take copyBufferToTexture (which leaves padding stale), odd ones the repack kernel.
    const cases: Case[] = [
      { batch: 1, m: 100, n: 72, k: 128 },
      { batch: 1, m: 100, n: 72, k: 128, transB: true },
      { batch: 3, m: 64, n: 200, k: 192, transA: true, bBatchStride: 0 },
      { batch: 2, m: 128, n: 64, k: 64, transA: true, transB: true, accumulate: true, alpha: -2 },
      { batch: 1, m: 64, n: 64, k: 65, transA: true },
      { batch: 1, m: 64, n: 64, k: 67 },
    ];
    for (const c of cases) {
      // The same textures, filled with NaN everywhere a padded problem can reach (m, n and k padding).
      const padded = {
        ...c,
        m: Math.ceil(c.m / 16) * 16,
        n: Math.ceil(c.n / 32) * 32,
        k: Math.ceil(c.k / 4) * 4,
      };
      if (c.bBatchStride === 0) padded.bBatchStride = 0;
      const size = lengths(padded);
      const [a, b, out] = [
        ctx.upload(new Float32Array(size.a).fill(Number.NaN)),
        ctx.upload(new Float32Array(size.b).fill(Number.NaN)),
        ctx.pool.acquire(size.out * 4),
      ];
      matmul(ctx, {
        ...padded,
        a,
        b,
        out,
        accumulate: false,
        variant: "texture",
        bias: undefined,
        addend: undefined,
      });
      for (const buffer of [a, b, out]) ctx.pool.release(buffer);
      await check(ctx, c, "texture");
    }
  });

  it("keeps this call's textures alive when the texture pool must evict", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    limitMatmulForTesting({ textureDimension: 32 });
    const budget = ctx.textures.maxPooledBytes;
    ctx.textures.maxPooledBytes = 1; // every released texture is over budget
    const pooledBefore = ctx.textures.stats.pooledBytes;
    // Several calls recorded back to back (no waiting), each needing textures of new sizes and chunks.
    const cases: Case[] = [
      { batch: 1, m: 40, n: 100, k: 90 },
      { batch: 2, m: 70, n: 50, k: 30, transB: true },
      { batch: 1, m: 20, n: 200, k: 140, transA: true },
    ];
    try {
      const runs = cases.map((c, i) => compute(ctx, c, "texture", 10 + i));
      for (const [i, run] of runs.entries()) {
        const { actual, expected } = await run;
        const { atol, rtol } = tolerance(cases[i]!.k);
        expectClose(actual, expected, atol, rtol);
      }
      expect(ctx.textures.stats.pooledBytes).toBeLessThanOrEqual(pooledBefore);
    } finally {
      ctx.textures.maxPooledBytes = budget;
    }
  });

  it("records into the context's encoder: counted, batched with other work, no submission of its own", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    const [m, n, k] = [64, 96, 80]; // k not a multiple of 64: A goes through the repack kernel
    const a = randomArray(m * k, 21);
    const b = randomArray(k * n, 22);
    const [aBuffer, bBuffer, out] = [ctx.upload(a), ctx.upload(b), ctx.pool.acquire(m * n * 4)];
    ctx.flush();
    const before = ctx.stats;
    for (let i = 0; i < 3; i++)
      matmul(ctx, { a: aBuffer, b: bBuffer, out, batch: 1, m, n, k, variant: "texture" });
    const recorded = ctx.stats;
    // Per call: a repack of A and B (row strides are not 256-byte aligned) and the multiply.
    expect(recorded.dispatches - before.dispatches).toBe(9);
    expect(recorded.submits).toBe(before.submits);
    const actual = new Float32Array(await ctx.read(out, m * n * 4));
    expect(ctx.stats.submits).toBe(before.submits + 1);
    expectClose(actual, matmulRef({ a, b, batch: 1, m, n, k }), 1e-4, 1e-4);
    for (const buffer of [aBuffer, bBuffer, out]) ctx.pool.release(buffer);
  });

  it("repacks rows of whole vectors with vec4 loads, other rows element by element", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    const labels: string[] = [];
    const pipeline = ctx.pipeline.bind(ctx);
    const spy = vi.spyOn(ctx, "pipeline").mockImplementation((label, code) => {
      labels.push(label);
      return pipeline(label, code);
    });
    try {
      // Row strides of 80, 96 and 344 floats (whole vectors, not 256-byte rows); 67 and 130 are not.
      const repacks: [Case, string[]][] = [
        [{ batch: 1, m: 64, n: 96, k: 80 }, ["matmul repack f32 vec4"]],
        [{ batch: 2, m: 40, n: 344, k: 96, transB: true, bBatchStride: 0 }, ["matmul repack f32 vec4"]],
        [{ batch: 1, m: 33, n: 130, k: 67 }, ["matmul repack f32"]],
        // A (stored 67 x 50) element by element, B (67 x 64) in vectors.
        [{ batch: 1, m: 50, n: 64, k: 67, transA: true }, ["matmul repack f32", "matmul repack f32 vec4"]],
      ];
      for (const [c, expected] of repacks) {
        labels.length = 0;
        await check(ctx, c, "texture");
        const used = new Set(labels.filter((l) => l.startsWith("matmul repack")));
        expect([...used].sort(), describeCase(c)).toEqual(expected);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it("copies aligned operands into textures on the same encoder (counted as texture copies)", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    const [m, n, k] = [32, 64, 128]; // row strides of 128 and 64 floats: copyBufferToTexture
    const a = randomArray(m * k, 23);
    const b = randomArray(k * n, 24);
    const [aBuffer, bBuffer, out] = [ctx.upload(a), ctx.upload(b), ctx.pool.acquire(m * n * 4)];
    const before = ctx.stats;
    matmul(ctx, { a: aBuffer, b: bBuffer, out, batch: 1, m, n, k, variant: "texture" });
    expect(ctx.stats.textureCopies - before.textureCopies).toBe(2);
    expect(ctx.stats.dispatches - before.dispatches).toBe(1);
    expectClose(
      new Float32Array(await ctx.read(out, m * n * 4)),
      matmulRef({ a, b, batch: 1, m, n, k }),
      1e-4,
      1e-4,
    );
    for (const buffer of [aBuffer, bBuffer, out]) ctx.pool.release(buffer);
  });

  it("reuses pooled textures: memory stays flat over many calls of varying shapes", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    const k = 72;
    const maxRows = 80;
    const b = ctx.upload(randomArray(k * 64, 25));
    const a = ctx.upload(randomArray(maxRows * k, 26));
    const out = ctx.pool.acquire(maxRows * 64 * 4);
    const run = (iteration: number) => {
      const m = 16 + (iteration % 9) * 8; // sequence lengths 16..80
      matmul(ctx, { a, b, out, batch: 1, m, n: 64, k, transB: false, variant: "texture" });
      if (iteration % 50 === 49) ctx.flush();
    };
    for (let i = 0; i < 50; i++) run(i);
    await ctx.sync();
    const warm = ctx.textures.stats;
    for (let i = 50; i < 1050; i++) run(i);
    await ctx.sync();
    const after = ctx.textures.stats;
    expect(after.created).toBe(warm.created);
    expect(after.reused - warm.reused).toBe(2000);
    expect(after.pooledBytes).toBe(warm.pooledBytes);
    expect(after.inUseBytes).toBe(0);
    expect(after.pooledBytes).toBeLessThanOrEqual(ctx.textures.maxPooledBytes);
    for (const buffer of [a, b, out]) ctx.pool.release(buffer);
  });
});

describe("matmul, all variants", () => {
  it("stays in order with work recorded on the context before and after it", async () => {
    const ctx = await testContext();
    const [m, n, k] = [48, 64, 80];
    const a = randomArray(m * k, 5);
    const b = randomArray(k * n, 6);
    const expected = matmulRef({ a, b, batch: 1, m, n, k });
    for (const variant of variants) {
      if (variant === "texture" && !textureVariantAvailable(ctx)) continue;
      const [aSource, bBuffer] = [ctx.upload(a), ctx.upload(b)];
      const [aBuffer, out, copied] = [
        ctx.pool.acquire(m * k * 4),
        ctx.pool.acquire(m * n * 4),
        ctx.pool.acquire(m * n * 4),
      ];
      ctx.copy(aSource, 0, aBuffer, 0, m * k * 4); // recorded, not yet submitted
      matmul(ctx, { a: aBuffer, b: bBuffer, out, batch: 1, m, n, k, variant });
      ctx.copy(out, 0, copied, 0, m * n * 4);
      expectClose(new Float32Array(await ctx.read(copied, m * n * 4)), expected, 1e-4, 1e-4);
      for (const buffer of [aSource, bBuffer, aBuffer, out, copied]) ctx.pool.release(buffer);
    }
  });

  it("rejects buffers too small for the problem and invalid sizes", async () => {
    const ctx = await testContext();
    const small = ctx.pool.acquire(16);
    const big = ctx.pool.acquire(4096);
    const args = (over: Partial<MatmulArgs>): MatmulArgs => ({
      a: big,
      b: big,
      out: big,
      batch: 1,
      m: 16,
      n: 16,
      k: 16,
      ...over,
    });
    expect(() => matmul(ctx, args({ a: small }))).toThrow(/buffer a/);
    expect(() => matmul(ctx, args({ out: small }))).toThrow(/buffer out/);
    expect(() => matmul(ctx, args({ m: -1 }))).toThrow(RangeError);
    expect(() => matmul(ctx, args({ k: 1.5 }))).toThrow(RangeError);
    ctx.pool.release(small);
    ctx.pool.release(big);
  });

  it("chooses the texture variant on software adapters for large products, tiled on GPUs", async () => {
    const ctx = await testContext();
    const buffer = ctx.pool.acquire(4);
    const args = (m: number, n: number, k: number): MatmulArgs => ({
      a: buffer,
      b: buffer,
      out: buffer,
      batch: 1,
      m,
      n,
      k,
    });
    expect(matmulVariant(ctx, { ...args(512, 512, 512), variant: "buffer" })).toBe("buffer");
    if (!ctx.info.adapter.isSoftware) {
      expect(matmulVariant(ctx, args(512, 512, 512))).toBe("tiled");
      expect(matmulVariant(ctx, { ...args(4, 896, 896), transB: true })).toBe("matvec"); // decoding
      expect(matmulVariant(ctx, args(4, 896, 896))).toBe("tiled"); // W not transposed: no matvec
    } else {
      expect(matmulVariant(ctx, args(512, 512, 512))).toBe(
        textureVariantAvailable(ctx) ? "texture" : "buffer",
      );
      expect(matmulVariant(ctx, args(8, 8, 8))).toBe("buffer");
      expect(matmulVariant(ctx, args(1, 896, 896))).toBe("buffer"); // one token: the 16-row tile would idle
      // Decoding x · Wᵀ, a batch of sequences: texture from 16 rows (8 with 256 columns) when rows are
      // whole 256 bytes, from 32 rows otherwise.
      const decode = (m: number, n: number, k: number) =>
        matmulVariant(ctx, { ...args(m, n, k), transB: true });
      const texture = textureVariantAvailable(ctx) ? "texture" : "buffer";
      expect([decode(16, 128, 128), decode(8, 873, 128), decode(32, 128, 344)]).toEqual([
        texture,
        texture,
        texture,
      ]);
      expect([decode(8, 128, 128), decode(16, 128, 344), decode(4, 873, 128)]).toEqual([
        "buffer",
        "buffer",
        "buffer",
      ]);
      expect(decode(16, 128, 1344)).toBe(texture); // the size rule
      expect(decode(16, 64, 1344)).toBe("buffer"); // k beyond one chunk: not the same sums
    }
    ctx.pool.release(buffer);
  });

  it("decoding's products come out the same bits from the texture and buffer variants (k in one chunk)", async () => {
    const ctx = await testContext();
    if (!textureVariantAvailable(ctx)) return;
    for (const [m, n, k] of [
      [16, 344, 128],
      [32, 128, 344],
      [8, 873, 128],
    ] as const) {
      const a = ctx.upload(randomArray(m * k, m));
      const b = ctx.upload(randomArray(n * k, n));
      const bias = ctx.upload(randomArray(n, k));
      const results: Float32Array[] = [];
      for (const variant of ["buffer", "texture"] as const) {
        const out = ctx.pool.acquire(m * n * 4);
        matmul(ctx, { a, b, out, bias, batch: 1, m, n, k, transB: true, variant });
        results.push(new Float32Array(await ctx.read(out, m * n * 4)));
        ctx.pool.release(out);
      }
      expect(Buffer.from(results[1]!.buffer).equals(Buffer.from(results[0]!.buffer)), `${m}x${n}x${k}`).toBe(
        true,
      );
      for (const buffer of [a, b, bias]) ctx.pool.release(buffer);
    }
  });
});
