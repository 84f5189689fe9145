import { afterEach, describe, expect, it, vi } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import { limitMatmulForTesting, matmul } from "../src/kernels/matmul.js";
import { blockedWideBytes, wideFits } from "../src/kernels/matmul-blocked-wide.js";
import type { BlockedTile } from "../src/kernels/matmul-gpu.js";
import { testContext } from "./helpers.js";
import { type Case, check, describeCase } from "./matmul-check.js";

afterEach(() => {
  limitMatmulForTesting();
  vi.restoreAllMocks();
});

/** Labels of the matmul pipelines `run` asks the context for. */
async function pipelinesOf(ctx: GpuContext, run: () => Promise<void>): Promise<string[]> {
  const spy = vi.spyOn(ctx, "pipeline");
  await run();
  const labels = spy.mock.calls.map(([label]) => label).filter((l) => l.startsWith("matmul "));
  spy.mockRestore();
  return labels;
}

const fits = (ctx: GpuContext, tile: BlockedTile) =>
  blockedWideBytes(tile) <= ctx.device.limits.maxComputeWorkgroupStorageSize;

// Contiguous extents (k of A, n of B as stored; m of Aᵀ, k of Bᵀ) on multiples of 4; the other edges
// ragged, k past the last whole k-step, and every epilogue term.
const layouts: Case[] = [
  { batch: 1, m: 130, n: 68, k: 44 },
  { batch: 1, m: 100, n: 257, k: 132, transB: true, bias: true },
  { batch: 1, m: 132, n: 36, k: 37, transA: true, accumulate: true, alpha: 0.5 },
  { batch: 1, m: 68, n: 130, k: 72, transA: true, transB: true, addend: true },
];
const batched: Case[] = [
  { batch: 3, m: 20, n: 36, k: 40, transB: true, bBatchStride: 0 }, // one weight for every batch
  { batch: 2, m: 9, n: 12, k: 16, aBatchStride: 160, bBatchStride: 200 }, // padded batches
];

const tiles: BlockedTile[] = [
  { rows: 128, cols: 64, depth: 16 }, // two wide loads of A's slice per invocation, one of B's
  { rows: 64, cols: 128, depth: 16 }, // one of A's, two of B's
  { rows: 128, cols: 128, depth: 8 }, // one of each, 8 x 8 outputs per invocation
];

describe('matmul, "blocked-wide" variant', () => {
  for (const [index, tile] of tiles.entries()) {
    const name = `${tile.rows}x${tile.cols}/${tile.depth}`;
    // Lavapipe compiles each layout of these kernels for 4-12 s: there the first tile runs every case
    // and the second NN and TT (between them every way of loading and staging both operands); a real
    // GPU runs everything.
    it.each(
      [...layouts, ...batched].map((c, i) => [describeCase(c), c, i === 0 || i === 3 ? 1 : 0] as const),
    )(`${name} %s`, async (_, c, rank) => {
      const ctx = await testContext();
      if (!fits(ctx, tile) || (ctx.info.adapter.isSoftware && index > rank)) return;
      const labels = await pipelinesOf(ctx, () =>
        check(ctx, { ...c, blockedTile: tile }, "blocked-wide", c.m + c.k),
      );
      expect(labels.every((l) => l.startsWith(`matmul blocked-wide${name} `))).toBe(true);
    });
  }

  it('runs "blocked" on the same tile where operand rows are off multiples of 4, whole or per chunk', async () => {
    const ctx = await testContext();
    const tile: BlockedTile = { rows: 128, cols: 128, depth: 8 };
    const unaligned: Case = { batch: 1, m: 40, n: 36, k: 65, blockedTile: tile };
    const whole = await pipelinesOf(ctx, () => check(ctx, unaligned, "blocked-wide", 3));
    expect(whole).toEqual([expect.stringMatching(/^matmul blocked128x128\/8 /)]);
    // Bindings of 1 KiB split this one along k in odd widths: chunks starting on the vec4 grid run wide,
    // the others "blocked", and the k-chunks after the first accumulate either way.
    limitMatmulForTesting({ bindingBytes: 1024 });
    const chunked = await pipelinesOf(ctx, () =>
      check(ctx, { batch: 1, m: 8, n: 8, k: 72, bias: true, blockedTile: tile }, "blocked-wide", 5),
    );
    expect(new Set(chunked)).toEqual(
      new Set(["matmul blocked-wide128x128/8 A·B f32", "matmul blocked128x128/8 A·B f32"]),
    );
  });

  it("refuses a tile whose two stages do not fit the device's workgroup memory", async () => {
    const ctx = await testContext();
    const tile: BlockedTile = { rows: 128, cols: 128, depth: 32 };
    if (fits(ctx, tile)) return;
    const [a, b, out] = [ctx.pool.acquire(64), ctx.pool.acquire(64), ctx.pool.acquire(64)];
    expect(() =>
      matmul(ctx, { a, b, out, batch: 1, m: 4, n: 4, k: 4, variant: "blocked-wide", blockedTile: tile }),
    ).toThrow(/a 128x128 "blocked-wide" tile with k-step 32 needs 67584 bytes of workgroup memory/);
    for (const buffer of [a, b, out]) ctx.pool.release(buffer);
  });
});

describe("wideFits", () => {
  const shape = { batch: 1, m: 6, n: 8, k: 12, transA: false, transB: false, dtype: "f32" };
  const dense = { aBatchStride: 72, bBatchStride: 96, lda: 12, ldb: 8 };
  it("takes f32 operands whose stored rows, strides and starts are whole vec4s", () => {
    expect(wideFits({ ...shape, ...dense })).toBe(true);
    expect(wideFits({ ...shape, ...dense, dtype: "f16" })).toBe(false);
    expect(wideFits({ ...shape, ...dense, k: 13, lda: 13 })).toBe(false);
    expect(wideFits({ ...shape, ...dense, transA: true, lda: 6 })).toBe(false); // m = 6 is contiguous
    expect(wideFits({ ...shape, ...dense, aStart: 2 })).toBe(false);
    expect(wideFits({ ...shape, ...dense, batch: 2, bBatchStride: 98 })).toBe(false);
    expect(wideFits({ ...shape, ...dense, bBatchStride: 98 })).toBe(true); // one batch: stride unused
  });
});
