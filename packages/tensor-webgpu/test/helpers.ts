import { afterEach, beforeEach, expect } from "vitest";
import { GpuContext } from "../src/gpu/context.js";
import { attentionTuning } from "../src/kernels/attention/tiles.js";
import { enableMatmulTuning, type MatmulShape, matmulShapeKey } from "../src/kernels/matmul-choices.js";
import { fromHalfBits, packF16Ref, toHalfBits, unpackF16Ref } from "../src/reference/layout.js";

let shared: Promise<GpuContext> | undefined;

/** One context per test file (vitest runs files in separate workers). */
export function testContext(): Promise<GpuContext> {
  shared ??= GpuContext.create();
  return shared;
}

/** The attention kernels a describe block runs: the adapter's own, or the other kind's (GPU or software). */
export const ATTENTION_KERNEL_KINDS = ["this adapter's", "the other adapter kind's"] as const;

/**
 * Run the enclosing describe block's tests on `kind`'s attention kernels: the other kind's forces the GPU
 * code on a software adapter and the software code on a GPU (attentionTuning.profile), reset after each.
 */
export function useAttentionKernels(kind: (typeof ATTENTION_KERNEL_KINDS)[number]): void {
  beforeEach(async () => {
    if (kind === "this adapter's") return;
    const ctx = await testContext();
    attentionTuning.profile = ctx.info.adapter.isSoftware ? "hardware" : "software";
  });
  afterEach(() => {
    attentionTuning.profile = "auto";
  });
}

/** Deterministic pseudo-random floats in [-scale, scale). */
export function randomArray(length: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(length);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

/** Element-wise |a - b| <= atol + rtol * |b|, reporting the worst element on failure. */
export function expectClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  atol = 1e-5,
  rtol = 1e-4,
): void {
  expect(actual.length).toBe(expected.length);
  let worst = -1;
  let worstExcess = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    const excess = Math.abs(a - e) - (atol + rtol * Math.abs(e));
    if (!(excess <= 0) && (worst < 0 || !(excess <= worstExcess))) {
      worst = i;
      worstExcess = excess;
    }
  }
  if (worst >= 0) {
    expect.fail(
      `element ${worst}: got ${actual[worst]}, expected ${expected[worst]} (atol ${atol}, rtol ${rtol})`,
    );
  }
}

/** Central differences of sum(weights * f(x)) with respect to x, in float64. */
export function numericGradient(
  f: (x: Float64Array) => Float64Array,
  x: Float64Array,
  weights: ArrayLike<number>,
  h = 1e-6,
): Float64Array {
  const grad = new Float64Array(x.length);
  const loss = (input: Float64Array) => f(input).reduce((sum, v, i) => sum + v * weights[i]!, 0);
  for (let i = 0; i < x.length; i++) {
    const plus = Float64Array.from(x);
    const minus = Float64Array.from(x);
    plus[i]! += h;
    minus[i]! -= h;
    grad[i] = (loss(plus) - loss(minus)) / (2 * h);
  }
  return grad;
}

/** The values f16 storage holds for `values` (each rounded to the nearest half), as f32. */
export const halves = (values: ArrayLike<number>): Float32Array =>
  Float32Array.from(values, (v) => fromHalfBits(toHalfBits(v)));

/** A buffer of `values` stored as f32, or as halves (each rounded to the nearest). */
export function uploadAs(ctx: GpuContext, values: Float32Array, storage: "f32" | "f16"): GPUBuffer {
  if (storage === "f32") return ctx.upload(values);
  const words = new Uint32Array(Math.ceil(values.length / 2));
  return ctx.upload(packF16Ref({ x: values, out: words, n: values.length }));
}

/** The first `n` values of a buffer of f32, or of halves, as f32. */
export async function readAs(ctx: GpuContext, buffer: GPUBuffer, n: number, storage: "f32" | "f16") {
  if (storage === "f32") return new Float32Array(await ctx.read(buffer, n * 4));
  const words = new Uint32Array(await ctx.read(buffer, Math.ceil(n / 2) * 4));
  return unpackF16Ref({ x: words, out: new Float32Array(n), n });
}

/**
 * Turns matmul tuning on with `variant` as the tuned choice for `shape`, whatever the adapter's fixed
 * rule picks: "matvec" (the default), which a GPU's fixed rule takes for few rows and lavapipe's does
 * not, makes the product and its fused forms run "matvec"; another variant keeps them off it.
 */
export function chooseMatmulKernel(
  ctx: GpuContext,
  shape: MatmulShape,
  variant: "matvec" | "tiled" = "matvec",
): void {
  enableMatmulTuning(ctx).set({
    key: matmulShapeKey(shape),
    shape,
    choice: { variant },
    candidates: [],
    rejected: [],
  });
}
