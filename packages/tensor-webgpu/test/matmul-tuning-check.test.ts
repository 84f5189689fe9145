/**
 * Tuning must never pick a kernel that computes wrongly, however fast. No kernel here is wrong on this
 * adapter, so two are made wrong: "tiled" writes a bad first element after its product, and "texture"
 * writes nothing at all.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { disableMatmulTuning, type MatmulShape } from "../src/kernels/matmul-choices.js";
import { tuneMatmuls } from "../src/kernels/matmul-tuning.js";
import { testContext } from "./helpers.js";

vi.mock("../src/kernels/matmul.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../src/kernels/matmul.js")>();
  const matmul: typeof actual.matmul = (ctx, args) => {
    if (args.variant === "texture") return;
    actual.matmul(ctx, args);
    if (args.variant === "tiled") ctx.write(args.out, Float32Array.of(12345));
  };
  return { ...actual, matmul };
});

afterEach(async () => disableMatmulTuning(await testContext()));

describe("tuning checks each kernel's product", () => {
  it("leaves out a kernel whose product is wrong and one that writes nothing, with the reason", async () => {
    const ctx = await testContext();
    const shape: MatmulShape = { batch: 1, m: 40, n: 24, k: 32, transA: false, transB: true, dtype: "f32" };
    const [entry] = await tuneMatmuls(ctx, [shape], {
      repeats: 1,
      rounds: 1,
      candidates: () => [{ variant: "tiled" }, { variant: "texture" }, { variant: "buffer" }],
    });
    expect(entry!.choice).toEqual({ variant: "buffer" });
    expect(entry!.candidates.map((c) => c.kernel)).toEqual(["buffer"]);
    expect(entry!.rejected).toEqual([
      { kernel: "tiled", reason: expect.stringMatching(/^wrong product: element 0 is 12345, the reference/) },
      { kernel: "texture", reason: expect.stringMatching(/^wrong product: element 0 is NaN/) },
    ]);
  });

  it("fails a problem no kernel computes right, naming each kernel's fault", async () => {
    const ctx = await testContext();
    const shape: MatmulShape = { batch: 1, m: 8, n: 8, k: 8, transA: false, transB: true, dtype: "f32" };
    await expect(
      tuneMatmuls(ctx, [shape], { repeats: 1, rounds: 1, candidates: () => [{ variant: "tiled" }] }),
    ).rejects.toThrow(/no kernel could run f32 NT 1x8x8x8 on this adapter \(tiled: wrong product/);
  });
});
