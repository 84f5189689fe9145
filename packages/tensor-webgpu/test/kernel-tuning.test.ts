import { afterEach, describe, expect, it } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import { attentionForward, attentionTuning } from "../src/kernels/attention/index.js";
import { attentionTiles } from "../src/kernels/attention/tile-choices.js";
import {
  disableKernelTuning,
  enableKernelTuning,
  pendingKernelProblems,
  tuneKernels,
} from "../src/kernels/kernel-tuning.js";
import { matmul } from "../src/kernels/matmul.js";
import { matmulChoices } from "../src/kernels/matmul-choices.js";
import { testContext } from "./helpers.js";

afterEach(async () => {
  attentionTuning.textures = true;
  disableKernelTuning(await testContext());
});

/**
 * Notes three matmul problems of different sizes, one tiled attention forward and that forward's form
 * (tiled kernels or matmul form).
 */
function meetProblems(ctx: GpuContext): void {
  const buffer = ctx.pool.acquire(4 * 96 * 96);
  for (const [m, n, k] of [
    [8, 16, 16],
    [96, 96, 96],
    [32, 64, 32],
  ] as const)
    matmul(ctx, { a: buffer, b: buffer, out: ctx.pool.acquire(4 * m * n), batch: 1, m, n, k, transB: true });
  // The texture kernels (lavapipe's) are not tuned: the tiled kernel is.
  attentionTuning.textures = false;
  const dims = { batch: 1, numHeads: 2, numKvHeads: 1, headDim: 16, seqLen: 24, kvLen: 24 };
  attentionForward(ctx, { ...dims, q: buffer, k: buffer, v: buffer, out: ctx.pool.acquire(4 * 24 * 2 * 16) });
}

describe("a kernel tuning pass", () => {
  it("measures the problems met, largest first", async () => {
    const ctx = await testContext();
    enableKernelTuning(ctx);
    meetProblems(ctx);
    expect(pendingKernelProblems(ctx)).toBe(5);
    const seen: string[] = [];
    const pass = await tuneKernels(ctx, {
      repeats: 1,
      rounds: 1,
      onProblem: (done, total, key) => seen.push(`${done}/${total} ${key}`),
    });
    // 2·96³ = 1.8M operations, attention 4·2·24·24·16 = 74k (its tile, then its form: met in that
    // order), 2·32·64·32 = 131k, 2·8·16·16 = 4k.
    expect(seen).toEqual([
      "0/5 f32 NT 1x128x128x128",
      "1/5 f32 NT 1x32x64x32",
      "2/5 forward 2/1x16 causal 1x32x32",
      "3/5 forward-form 2/1x16 causal 1x32x32",
      "4/5 f32 NT 1x8x16x16",
      "5/5 ",
    ]);
    // The three matmuls met, and the matmul form's two products (the scores, then P·V) measured with it.
    expect(pass.matmul).toHaveLength(5);
    expect(pass.attention).toHaveLength(1);
    expect(pass.attentionForms).toHaveLength(1);
    expect(pass.pending).toBe(0);
    expect(pendingKernelProblems(ctx)).toBe(0);
  });

  it("starts no problem after its budget (but always one) and leaves the rest to the next pass", async () => {
    const ctx = await testContext();
    enableKernelTuning(ctx);
    meetProblems(ctx);
    const seen: string[] = [];
    const spent = await tuneKernels(ctx, {
      repeats: 1,
      rounds: 1,
      budgetSeconds: 0,
      onProblem: (done, total) => seen.push(`${done}/${total}`),
    });
    expect(spent.matmul.map((t) => t.key)).toEqual(["f32 NT 1x128x128x128"]);
    expect(spent.attention).toEqual([]);
    expect(spent.pending).toBe(4);
    expect(seen).toEqual(["0/5", "1/5"]);
    expect(pendingKernelProblems(ctx)).toBe(4);
    expect(matmulChoices(ctx)!.size + attentionTiles(ctx)!.size).toBe(1);

    const next = await tuneKernels(ctx, { repeats: 1, rounds: 1, budgetSeconds: 600 });
    expect(next.attention.length + next.attentionForms.length).toBe(2);
    expect(next.matmul.length).toBe(4); // two met, two of the matmul form
    expect(next.pending).toBe(0);
  });
});
