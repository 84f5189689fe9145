/** Products on the GPU checked against the CPU reference, with the epilogue's terms (matmul tests). */
import type { GpuContext } from "../src/gpu/context.js";
import { type MatmulArgs, type MatmulVariant, matmul } from "../src/kernels/matmul.js";
import { matmulRef } from "../src/reference/matmul.js";
import { expectClose, randomArray } from "./helpers.js";

/** A product's shape and options (MatmulArgs without its buffers), and which epilogue terms to add. */
export type Case = Pick<
  MatmulArgs,
  | "batch"
  | "m"
  | "n"
  | "k"
  | "transA"
  | "transB"
  | "aBatchStride"
  | "bBatchStride"
  | "accumulate"
  | "alpha"
  | "blockedTile"
> & {
  /** Add a bias row (random, n values) in the epilogue. */
  bias?: boolean;
  /** Add a random [batch, m, n] addend (a residual) in the epilogue. */
  addend?: boolean;
};

export const describeCase = (c: Case) =>
  `${c.batch}x${c.m}x${c.n}x${c.k}${c.transA ? " Aᵀ" : ""}${c.transB ? " Bᵀ" : ""}` +
  `${c.aBatchStride !== undefined ? ` aStride=${c.aBatchStride}` : ""}` +
  `${c.bBatchStride !== undefined ? ` bStride=${c.bBatchStride}` : ""}` +
  `${c.accumulate ? " accumulate" : ""}${c.alpha !== undefined ? ` alpha=${c.alpha}` : ""}`;

/** f32 sums of k products of values in [-1, 1]: rounding error grows about linearly with k at worst. */
export const tolerance = (k: number) => ({ atol: 1e-5 + 2e-6 * k, rtol: 1e-4 });

export function lengths(c: Case) {
  return {
    a: Math.max(1, (c.batch - 1) * (c.aBatchStride ?? c.m * c.k) + c.m * c.k),
    b: Math.max(1, (c.batch - 1) * (c.bBatchStride ?? c.k * c.n) + c.k * c.n),
    out: c.batch * c.m * c.n,
  };
}

/** Runs one product on the GPU (out pre-filled with `init`) and returns what it computed and the truth. */
export async function compute(ctx: GpuContext, c: Case, variant: MatmulVariant | undefined, seed: number) {
  const size = lengths(c);
  const a = randomArray(size.a, seed);
  const b = randomArray(size.b, seed + 1);
  const init = randomArray(size.out, seed + 2);
  const bias = randomArray(c.n, seed + 3);
  const addend = randomArray(size.out, seed + 4);
  const [aBuffer, bBuffer, outBuffer] = [ctx.upload(a), ctx.upload(b), ctx.upload(init)];
  const biasBuffer = c.bias ? ctx.upload(bias) : undefined;
  const addendBuffer = c.addend ? ctx.upload(addend) : undefined;
  try {
    const { bias: _, addend: __, ...shape } = c;
    const buffers = { a: aBuffer, b: bBuffer, out: outBuffer, bias: biasBuffer, addend: addendBuffer };
    matmul(ctx, { ...shape, ...buffers, variant });
    const actual = new Float32Array(await ctx.read(outBuffer, size.out * 4));
    // out = alpha·op(A)·op(B) + bias + addend (+ out): the reference's product, then the epilogue's terms.
    const init2 = c.accumulate ? init.slice() : undefined;
    const expected = matmulRef({ ...shape, a, b, accumulateInto: init2 });
    if (c.bias) for (let i = 0; i < expected.length; i++) expected[i]! += bias[i % c.n]!;
    if (c.addend) for (let i = 0; i < expected.length; i++) expected[i]! += addend[i]!;
    return { actual, expected };
  } finally {
    for (const buffer of [aBuffer, bBuffer, outBuffer, biasBuffer, addendBuffer])
      if (buffer) ctx.pool.release(buffer);
  }
}

export async function check(
  ctx: GpuContext,
  c: Case,
  variant: MatmulVariant | undefined,
  seed = 1,
): Promise<void> {
  const { actual, expected } = await compute(ctx, c, variant, seed);
  const { atol, rtol } = tolerance(c.k);
  expectClose(actual, expected, atol, rtol);
}
