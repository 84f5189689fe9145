/**
 * Helpers of every attention kernel (prefill forward, backward and decode): argument checks, the scale,
 * WGSL generation and its cache.
 */
import { EMPTY_ROW_LSE } from "../../core/attention.js";
import { enableFor, type FloatStorage, loadF32, storeAs, vectorOf } from "../elementwise.js";
import { wgslCache } from "../wgsl/code-cache.js";

/**
 * WGSL for buffers of q-like elements (q, k, v, the output and their gradients: AttentionDims.dtype) of
 * `dtype`: the `enable` line, the vec4 element type, and the conversions of a value read (to f32, where
 * every kernel computes) and of a value stored. f32 kernels keep their text: no conversion is written.
 */
export function storageWgsl(dtype: FloatStorage = "f32") {
  return {
    enable: enableFor(dtype),
    vec4: dtype === "f32" ? "vec4f" : vectorOf(dtype, 4),
    widen: (value: string) => loadF32(dtype, 4, value),
    narrow: (value: string) => storeAs(dtype, 4, value),
  };
}

/** The texture format the software kernels stage q-like elements of `dtype` in (texture-staging.ts). */
export const stagingFormat = (dtype: FloatStorage = "f32"): "rgba32float" | "rgba16float" =>
  dtype === "f16" ? "rgba16float" : "rgba32float";

/** Largest supported headDim (the tiles must fit in workgroup memory). */
export const MAX_HEAD_DIM = 256;

export function checkHeadDim(headDim: number): void {
  if (headDim % 4 !== 0 || headDim > MAX_HEAD_DIM) {
    throw new RangeError(
      `attention: headDim must be a multiple of 4 and at most ${MAX_HEAD_DIM}, got ${headDim}`,
    );
  }
}

export function resolveScale(dims: { headDim: number; scale?: number }): number {
  return dims.scale ?? 1 / Math.sqrt(dims.headDim);
}

/** `count` copies of `line(i)` joined by `separator` (unrolled WGSL). */
export function each(count: number, line: (i: number) => string, separator = "\n"): string {
  return Array.from({ length: count }, (_, i) => line(i)).join(separator);
}

export const roundUp = (n: number, multiple: number) => Math.ceil(n / multiple) * multiple;

/**
 * The row stride (in vec4s or floats) of a workgroup tile whose rows neighbouring threads read at the same
 * column: odd, so those rows start in different banks of workgroup memory. With an even stride (headDim 64
 * is 16 vec4s, a 32-key score row is 32 floats) the rows fall in the same banks and a GPU serialises the
 * reads, 8 ways for the 8 rows of a quarter-warp's vec4 loads and up to 32 for float rows.
 */
export const conflictFreeStride = (n: number) => (n % 2 === 0 ? n + 1 : n);

/** The WGSL for `key`, generated once per process. */
export const cachedCode = wgslCache();

/** WGSL float literal for the lse of a row that sees no key. */
export const EMPTY_LSE = EMPTY_ROW_LSE.toExponential();

/** Scores of masked keys before the softmax: below any real score, and exp() of it minus a real max is 0. */
export const MASKED = "-1e30";

/**
 * Half the range of the values tuning fills attention inputs with (tuning-check.ts's pattern): Q and K in
 * [-2, 2) give scores of about unit spread at head size 64, so that the softmax is far from uniform and a
 * wrong scale, mask or row shows in the outputs (in [-0.5, 0.5) each row is nearly a plain mean of V).
 */
export const ATTENTION_PATTERN_AMPLITUDE = 2;
