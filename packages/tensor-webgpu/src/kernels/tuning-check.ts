/**
 * What tuning runs its candidates on, and how it checks them before timing: operands filled with a fixed
 * pattern (data changes a GPU's power draw, and zeros would flatter every kernel and hide wrong indexing),
 * outputs set to NaN before each checked run (an element a kernel never writes shows), and each
 * candidate's result compared with that of the kernel that runs without tuning. A kernel that compiles can
 * still compute wrongly on one driver, and a fast wrong kernel must never win.
 */
import { float16ArrayToFloat32, float32ToFloat16Bits } from "../core/half-float.js";
import type { GpuContext } from "../gpu/context.js";

/** STORAGE | COPY_DST | COPY_SRC: filled by writes, read by kernels, results read back. */
export const CHECKED_USAGE = 0x80 | 0x8 | 0x4;

/** Bytes written per call while filling a buffer. */
const FILL_CHUNK = 1 << 22;

/** Write `words` over `bytes` bytes of `buffer` from its start, repeating them. */
function writeRepeated(ctx: GpuContext, buffer: GPUBuffer, words: Uint32Array, bytes: number): void {
  for (let offset = 0; offset < bytes; offset += words.byteLength) {
    const size = Math.min(words.byteLength, bytes - offset);
    ctx.write(buffer, words.subarray(0, size / 4), offset);
  }
}

export interface PatternOptions {
  /**
   * "f32" (default): values in [-amplitude, amplitude); "f16": pairs of halves in [0.5, 1) per word, or
   * with `signed`, the f32 pattern's values rounded to halves.
   */
  dtype?: "f32" | "f16";
  /** Half the f32 values' range (default 0.5). */
  amplitude?: number;
  /** f16: the signed values of the f32 pattern instead of [0.5, 1) (attention's inputs need them). */
  signed?: boolean;
  /** Where in the pattern the buffer starts, so that two operands of one problem differ (default 0). */
  phase?: number;
  label?: string;
}

/** A new buffer of `elements` values of the tuning pattern. */
export function patternBuffer(ctx: GpuContext, elements: number, options: PatternOptions = {}): GPUBuffer {
  const { dtype = "f32", amplitude = 0.5, phase = 0, label = "tuning operand", signed = false } = options;
  const bytes = Math.max(4, Math.ceil((elements * (dtype === "f16" ? 2 : 4)) / 4) * 4);
  const buffer = ctx.device.createBuffer({ size: bytes, usage: CHECKED_USAGE, label });
  const words = new Uint32Array(Math.min(bytes, FILL_CHUNK) / 4);
  const f32 = new Float32Array(words.buffer);
  const value = (i: number) => ((((i + phase) * 7919) % 1000) / 500 - 1) * amplitude;
  const halves = new Uint16Array(words.buffer);
  for (let i = 0; i < words.length; i++) {
    if (dtype === "f32") f32[i] = value(i);
    else if (signed) {
      halves[2 * i] = float32ToFloat16Bits(value(2 * i));
      halves[2 * i + 1] = float32ToFloat16Bits(value(2 * i + 1));
    } else words[i] = 0x3800_3800 ^ ((i + phase) & 0x03ff_03ff); // halves in [0.5, 1), varying mantissas
  }
  writeRepeated(ctx, buffer, words, bytes);
  return buffer;
}

/** All bits set in 32-bit words: NaN in f32 and in f16. */
const ALL_ONES = new Uint32Array(FILL_CHUNK / 4).fill(0xffff_ffff);

/** Set the first `bytes` of `buffer` (a multiple of 4) to NaN, so that what a kernel leaves unwritten shows. */
export function poison(ctx: GpuContext, buffer: GPUBuffer, bytes: number): void {
  writeRepeated(ctx, buffer, ALL_ONES, bytes);
}

/**
 * How far a candidate's result may stray from the reference kernel's: this fraction of the result's
 * largest magnitude. Kernels sum in different orders (f32 rounding over k terms, one f16 rounding of
 * the result); a wrong tile edge, a missed k-step, a lost mask or an unwritten block is off by the values
 * themselves.
 */
export const RESULT_TOLERANCE = 1e-2;

/**
 * What is wrong with `result` against `reference` (same length), or undefined when it agrees; `what`
 * names the result in the message ("product", "dK").
 */
export function resultMismatch(
  reference: Float32Array,
  result: Float32Array,
  tolerance = RESULT_TOLERANCE,
  what = "product",
): string | undefined {
  let scale = 0;
  for (const value of reference) scale = Math.max(scale, Math.abs(value));
  let worst = 0;
  let at = -1;
  for (let i = 0; i < reference.length; i++) {
    // NaN (an element never written: the output starts as NaN) counts as the worst difference.
    const difference = Math.abs(result[i]! - reference[i]!);
    const distance = Number.isNaN(difference) ? Number.POSITIVE_INFINITY : difference;
    if (distance > worst) {
      worst = distance;
      at = i;
    }
  }
  const allowed = tolerance * scale;
  if (worst <= allowed) return undefined;
  return `wrong ${what}: element ${at} is ${result[at]}, the reference kernel's ${reference[at]} (allowed difference ${allowed.toPrecision(3)})`;
}

/** An output a check compares: the first `bytes` of `buffer` (f32, or halves), named `name` in messages. */
export interface CheckedOutput {
  name: string;
  buffer: GPUBuffer;
  bytes: number;
  dtype?: "f32" | "f16";
}

/**
 * Runs `reference` once and returns a check (for timeCandidates) that runs a candidate the same way and
 * says which of `outputs` differs from the reference's, if one does. Outputs are set to NaN before each run.
 */
export async function outputsCheck<T>(
  ctx: GpuContext,
  outputs: readonly CheckedOutput[],
  run: (candidate: T) => void,
  reference: T,
): Promise<(candidate: T) => Promise<string | undefined>> {
  const results = async (candidate: T) => {
    for (const { buffer, bytes } of outputs) poison(ctx, buffer, bytes);
    run(candidate);
    return Promise.all(
      outputs.map(async ({ buffer, bytes, dtype }) => {
        const read = await ctx.read(buffer, bytes);
        return dtype === "f16" ? float16ArrayToFloat32(new Uint16Array(read)) : new Float32Array(read);
      }),
    );
  };
  const expected = await results(reference);
  return async (candidate) => {
    const actual = await results(candidate);
    for (const [i, { name }] of outputs.entries()) {
      const problem = resultMismatch(expected[i]!, actual[i]!, RESULT_TOLERANCE, name);
      if (problem) return problem;
    }
    return undefined;
  };
}
