import { describe, expect, it } from "vitest";
import { groupTokenPositions } from "../src/core/token-groups.js";
import type { GpuContext } from "../src/gpu/context.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import { embedding, embeddingBackward } from "../src/kernels/embedding.js";
import { embeddingBackwardRef, embeddingRef } from "../src/reference/embedding.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const COUNTS = [1, 3, 17];
const DIMS = [1, 7, 64, 896, 1000];

/** Ids with repeats (a small vocabulary) and, when asked, a few out of range. */
function tokenIds(count: number, vocab: number, seed: number, outOfRange: boolean): Int32Array {
  const ids = Int32Array.from(randomArray(count, seed, 1), (v) => Math.floor(((v + 1) / 2) * vocab));
  if (outOfRange && count >= 3) {
    ids[0] = -100;
    ids[count - 1] = vocab;
  }
  return ids;
}

/** Scatter-add straight from the ids: an independent check of the grouping and the grouped reference. */
function scatterFromIds(
  dOut: Float32Array,
  ids: Int32Array,
  dTable: Float32Array,
  dim: number,
  vocab: number,
) {
  const result = Float64Array.from(dTable);
  ids.forEach((id, t) => {
    if (id < 0 || id >= vocab) return;
    for (let i = 0; i < dim; i++) result[id * dim + i]! += dOut[t * dim + i]!;
  });
  return result;
}

async function read(ctx: GpuContext, buffer: GPUBuffer, length: number): Promise<Float32Array> {
  return new Float32Array(await ctx.read(buffer, length * 4));
}

/** Runs the forward kernel, checks it exactly against the reference and returns its buffers for release. */
async function expectForwardMatchesReference(
  ctx: GpuContext,
  table: Float32Array,
  ids: Int32Array,
  count: number,
  dim: number,
  vocab: number,
): Promise<Record<string, GPUBuffer>> {
  const buffers = {
    table: ctx.upload(table),
    ids: ctx.upload(ids),
    out: ctx.pool.acquire(count * dim * 4),
  };
  embedding(ctx, { ...buffers, count, dim, vocab });
  expectClose(
    await read(ctx, buffers.out, count * dim),
    embeddingRef({ table, ids, count, dim, vocab }),
    0,
    0,
  );
  return buffers;
}

/** Uploads the backward pass's inputs: the output gradient, the table gradient and the id grouping. */
function uploadBackwardInputs(
  ctx: GpuContext,
  dOut: Float32Array,
  dTable: Float32Array,
  grouping: ReturnType<typeof groupTokenPositions>,
) {
  return {
    dOut: ctx.upload(dOut),
    dTable: ctx.upload(dTable),
    uniqueIds: ctx.upload(grouping.uniqueIds),
    offsets: ctx.upload(grouping.offsets),
    positions: ctx.upload(grouping.positions),
  };
}

describe("embedding", () => {
  for (const count of COUNTS) {
    for (const dim of DIMS) {
      it(`forward and backward match the reference for ${count} tokens x ${dim}`, async () => {
        const ctx = await testContext();
        const vocab = 5;
        const table = randomArray(vocab * dim, count + dim, 1);
        const ids = tokenIds(count, vocab, count * 7 + dim, true);
        const dOut = randomArray(count * dim, dim, 1);
        const dTable = randomArray(vocab * dim, dim + 1, 1);

        const buffers = await expectForwardMatchesReference(ctx, table, ids, count, dim, vocab);

        const grouping = groupTokenPositions(ids, vocab);
        const numUnique = grouping.uniqueIds.length;
        const expected = embeddingBackwardRef({ dOut, dTable, ...grouping, numUnique, dim });
        expectClose(expected, scatterFromIds(dOut, ids, dTable, dim, vocab), 1e-6, 1e-6);
        const backward = uploadBackwardInputs(ctx, dOut, dTable, grouping);
        embeddingBackward(ctx, { ...backward, numUnique, dim });
        expectClose(await read(ctx, backward.dTable, vocab * dim), expected, 1e-6, 1e-6);
        for (const b of [...Object.values(buffers), ...Object.values(backward)]) ctx.pool.release(b);
      });
    }
  }

  it("splits tables and outputs larger than one binding into slices", async () => {
    const ctx = await testContext();
    for (const dim of [7, 64]) {
      limitBindingsForTesting(256 + 3 * dim * 4); // 3 table rows or tokens per binding
      try {
        const vocab = 11;
        const count = 17;
        const table = randomArray(vocab * dim, dim, 1);
        const ids = tokenIds(count, vocab, dim + 1, true);
        const dOut = randomArray(count * dim, dim + 2, 1);
        const dTable = randomArray(vocab * dim, dim + 3, 1);
        const buffers = await expectForwardMatchesReference(ctx, table, ids, count, dim, vocab);
        const grouping = groupTokenPositions(ids, vocab);
        const backward = uploadBackwardInputs(ctx, dOut, dTable, grouping);
        limitBindingsForTesting(256 + count * dim * 4); // dOut must fit whole; the table still does not
        embeddingBackward(ctx, { ...backward, numUnique: grouping.uniqueIds.length, dim, vocab });
        expectClose(
          await read(ctx, backward.dTable, vocab * dim),
          scatterFromIds(dOut, ids, dTable, dim, vocab),
          1e-6,
          1e-6,
        );
        for (const b of [...Object.values(buffers), ...Object.values(backward)]) ctx.pool.release(b);
      } finally {
        limitBindingsForTesting(undefined);
      }
    }
  });

  it("groups positions by id in ascending order, dropping out-of-range ids", () => {
    const { uniqueIds, offsets, positions } = groupTokenPositions(
      new Int32Array([7, 2, 7, -100, 2, 9, 7]),
      9,
    );
    expect(Array.from(uniqueIds)).toEqual([2, 7]);
    expect(Array.from(offsets)).toEqual([0, 2, 5]);
    expect(Array.from(positions)).toEqual([1, 4, 0, 2, 6]);
    expect(Array.from(groupTokenPositions(new Int32Array([3, -1, 3])).uniqueIds)).toEqual([3]);
  });

  it("guards the table in the backward pass when given vocab", async () => {
    const ctx = await testContext();
    const vocab = 300;
    const dim = 8;
    const count = 4000;
    const ids = tokenIds(count, vocab + 10, 3, false); // some ids >= vocab, grouped without vocab
    const grouping = groupTokenPositions(ids);
    const dOut = randomArray(count * dim, 4, 1);
    const dTable = new Float32Array(vocab * dim + dim); // one guard row past the table
    const buffers = uploadBackwardInputs(ctx, dOut, dTable, grouping);
    embeddingBackward(ctx, { ...buffers, numUnique: grouping.uniqueIds.length, dim, vocab });
    const got = await read(ctx, buffers.dTable, vocab * dim + dim);
    expectClose(
      got.subarray(0, vocab * dim),
      scatterFromIds(dOut, ids, dTable, dim, vocab).subarray(0, vocab * dim),
      1e-5,
      1e-5,
    );
    expect(Array.from(got.subarray(vocab * dim))).toEqual(new Array(dim).fill(0));
    for (const b of Object.values(buffers)) ctx.pool.release(b);
  });

  it("spreads more than 65535 tokens over a 2D grid", async () => {
    const ctx = await testContext();
    const vocab = 50;
    const dim = 1;
    const count = 70_000;
    const table = randomArray(vocab * dim, 5, 1);
    const ids = tokenIds(count, vocab, 6, true);
    const buffers = await expectForwardMatchesReference(ctx, table, ids, count, dim, vocab);
    for (const b of Object.values(buffers)) ctx.pool.release(b);
  });

  it("reference backward matches finite differences of the reference forward", () => {
    const vocab = 4;
    const dim = 3;
    const ids = new Int32Array([2, 0, 2, 7, 2]);
    const count = ids.length;
    const table = Float64Array.from(randomArray(vocab * dim, 1, 1));
    const dOut = Float64Array.from(randomArray(count * dim, 2, 1));
    const grouping = groupTokenPositions(ids, vocab);
    const analytic = embeddingBackwardRef({
      dOut,
      dTable: new Float64Array(vocab * dim),
      ...grouping,
      numUnique: grouping.uniqueIds.length,
      dim,
    });
    const h = 1e-6;
    const loss = (t: Float64Array) =>
      embeddingRef({ table: t, ids, count, dim, vocab }).reduce((sum, v, i) => sum + v * dOut[i]!, 0);
    const numeric = table.map((_, i) => {
      const plus = Float64Array.from(table);
      const minus = Float64Array.from(table);
      plus[i]! += h;
      minus[i]! -= h;
      return (loss(plus) - loss(minus)) / (2 * h);
    });
    expectClose(analytic, numeric, 1e-8, 1e-6);
  });
});
