/**
 * x · Wᵀ of a transformed input in one "matvec" dispatch: decoding's RMSNorm before a projection, and its
 * SwiGLU before the down projection, read A's rows as the kernel goes (MatvecInput), so a decoding step
 * records one dispatch fewer for each. Only where "matvec" is the kernel the plain product would run (a
 * GPU's few-row products, or a tuned choice): elsewhere the caller runs the two ops, whose kernels win
 * there.
 */
import { bufferBytes } from "../gpu/buffer-bytes.js";
import type { GpuContext } from "../gpu/context.js";
import type { FloatStorage } from "./elementwise.js";
import { matmulChoice, problemOf } from "./matmul.js";
import { MATVEC_COLUMNS, matvecKernel, matvecRows } from "./matmul-gpu.js";
import {
  type Chunk,
  epilogueOf,
  gemmParams,
  gemmPreamble,
  limits,
  type MatmulArgs,
  source,
} from "./matmul-problem.js";

/** What A's rows are: RMS-normalised with `weight` and `eps`, or silu(gate) · up of packed [gate | up] rows. */
export type ProductInput = { kind: "rmsNorm"; weight: GPUBuffer; eps: number } | { kind: "swiglu" };

/** A product of a transformed input: Backend.linearOfInput's arguments, and a variant to force (tests). */
export interface ProductOfInput {
  /** [rows, k], or with "swiglu" [rows, 2k]: each row's gate, then its up. */
  x: GPUBuffer;
  /** [n, k]. */
  weight: GPUBuffer;
  out: GPUBuffer;
  rows: number;
  n: number;
  k: number;
  bias?: GPUBuffer;
  addend?: GPUBuffer;
  input: ProductInput;
  /** Element type of every buffer, the norm's weight included (default f32). */
  dtype?: FloatStorage;
  variant?: MatmulArgs["variant"];
}

/**
 * out [rows, n] = input(x) · Wᵀ (+ bias, + addend), every buffer stored as `dtype` (default f32): halves
 * are widened as they are read, the sums are f32 and the result is rounded once on store. Records it and
 * returns true when "matvec" runs this product (of that dtype) here and every operand fits one binding;
 * returns false, recording nothing, otherwise. It runs once per decoded token and layer, so its arguments
 * are copied field by field (an object spread cost more than the rest of the call).
 */
export function matvecWithInput(ctx: GpuContext, args: ProductOfInput): boolean {
  const { input, rows: m, n, k } = args;
  if (m === 0 || n === 0) return false;
  const storage = args.dtype ?? "f32";
  const plain: MatmulArgs = { a: args.x, b: args.weight, out: args.out, batch: 1, m, n, k, transB: true };
  // The choice and the size checks are those of the plain product of the same element type.
  if (storage !== "f32") plain.dtype = storage;
  if (args.bias) plain.bias = args.bias;
  if (args.addend) plain.addend = args.addend;
  if (args.variant) plain.variant = args.variant;
  if (matmulChoice(ctx, plain).variant !== "matvec") return false;
  const p = problemOf(plain);
  const rowElements = input.kind === "swiglu" ? 2 * p.k : p.k;
  const bindingBytes = limits(ctx).bindingBytes;
  if ([p.m * rowElements, p.n * p.k, p.m * p.n].some((elements) => elements * p.bytes > bindingBytes))
    return false;
  const xBytes = bufferBytes(args.x);
  if (input.kind === "swiglu" && xBytes < p.m * rowElements * p.bytes)
    throw new RangeError(
      `matmul: buffer x holds ${xBytes} bytes, packed gate|up rows need ${p.m * rowElements * p.bytes}`,
    );

  const rows = matvecRows(p.m);
  const transform = input.kind === "rmsNorm" ? `rmsNorm ${input.eps}` : "swiglu";
  const key = `matvec${rows} ${transform} ${storage}`;
  const inputs = input.kind === "rmsNorm" ? [`var<storage, read> normWeight: array<${storage}>`] : [];
  const kernelInput = input.kind === "rmsNorm" ? { kind: "rmsNorm" as const, eps: input.eps } : input;
  const pipeline = ctx.pipeline(
    `matmul ${key}`,
    source(key, () => matvecKernel(rows, storage, gemmPreamble(storage, storage, inputs), kernelInput)),
  );
  const whole: Chunk = { batch0: 0, batches: 1, m0: 0, m: p.m, n0: 0, n: p.n, k0: 0, k: p.k };
  const epilogue = epilogueOf(ctx, plain, p, whole);
  ctx.dispatch(
    pipeline,
    input.kind === "rmsNorm"
      ? [args.x, args.weight, args.out, ...epilogue.bindings, input.weight]
      : [args.x, args.weight, args.out, ...epilogue.bindings],
    gemmParams(p, whole, false, 0, 0, 0, epilogue),
    [Math.ceil(p.n / MATVEC_COLUMNS), Math.ceil(p.m / rows), 1],
  );
  return true;
}
