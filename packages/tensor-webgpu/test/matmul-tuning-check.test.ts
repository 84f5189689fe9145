/**
 * Tuning must never pick a kernel that computes wrongly, however fast. No kernel here is wrong on this
 * adapter, so two are made wrong: "tiled" writes a bad first element after its product, and "texture"
 * writes nothing at all.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { disableMatmulTuning, type MatmulShape } from "../src/kernels/matmul-choices.js";
import { CHECK_MAX_ELEMENTS, checkShapeFor, tuneMatmuls } from "../src/kernels/matmul-tuning.js";
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

  it("checks a product too large to read back whole on a smaller problem of its kind", async () => {
    const ctx = await testContext();
    // 2,100 x 2,100 outputs: over the limit, so the check runs 308 x 308 (one 256 tile and the remainder).
    const shape: MatmulShape = {
      batch: 1,
      m: 2100,
      n: 2100,
      k: 8,
      transA: true,
      transB: false,
      dtype: "f32",
    };
    expect(shape.m * shape.n).toBeGreaterThan(CHECK_MAX_ELEMENTS);
    const [entry] = await tuneMatmuls(ctx, [shape], {
      repeats: 1,
      rounds: 1,
      candidates: () => [{ variant: "tiled" }, { variant: "buffer" }],
    });
    expect(entry!.choice).toEqual({ variant: "buffer" });
    expect(entry!.rejected).toEqual([
      { kernel: "tiled", reason: expect.stringMatching(/element 0 is 12345.*\(checked on 308x308x8\)$/) },
    ]);
  });
});

describe("the problem a product is checked on", () => {
  const shape = (m: number, n: number, k: number, batch = 1): MatmulShape => ({
    batch,
    m,
    n,
    k,
    transA: false,
    transB: true,
    dtype: "f16",
  });

  it("is the problem itself while its output is small enough", () => {
    const small = shape(2048, 2048, 4096);
    expect(checkShapeFor(small)).toBe(small);
  });

  it("keeps the kind of a large one: element type, transposes, k, remainders of the tiles", () => {
    // A language-model head: 2,048 rows of 151,936 logits.
    expect(checkShapeFor(shape(2048, 151936, 896))).toEqual(shape(256, 384, 896));
    expect(checkShapeFor(shape(4, 151936, 896, 8))).toEqual(shape(4, 384, 896, 2));
    const checked = checkShapeFor(shape(1000, 70000, 64, 3));
    expect([checked.m % 16, checked.n % 16]).toEqual([1000 % 16, 70000 % 16]);
    expect(checked.batch * checked.m * checked.n).toBeLessThanOrEqual(CHECK_MAX_ELEMENTS);
  });
});
