/**
 * The cases of the attention tests: inputs of a problem, the GPU forward and backward run on them, and
 * their check against the CPU reference.
 */
import { expect } from "vitest";
import type { AttentionDims } from "../src/core/attention.js";
import type { GpuContext } from "../src/gpu/context.js";
import { attentionBackward, attentionForward } from "../src/kernels/attention/index.js";
import { attentionBackwardRef, attentionForwardRef } from "../src/reference/attention.js";
import { expectClose, randomArray, readAs, testContext, uploadAs } from "./helpers.js";

export interface Case extends AttentionDims {
  kvStart?: number[];
}

export function inputs(c: Case, seed: number) {
  const capacity = c.kvCapacity ?? c.kvLen;
  return {
    q: randomArray(c.batch * c.seqLen * c.numHeads * c.headDim, seed, 1.5),
    k: randomArray(c.batch * capacity * c.numKvHeads * c.headDim, seed + 1, 1.5),
    v: randomArray(c.batch * capacity * c.numKvHeads * c.headDim, seed + 2),
    dOut: randomArray(c.batch * c.seqLen * c.numHeads * c.headDim, seed + 3),
    kvStart: c.kvStart ? Int32Array.from(c.kvStart) : undefined,
  };
}

export async function readF32(ctx: GpuContext, buffer: GPUBuffer, length: number): Promise<Float32Array> {
  return new Float32Array(await ctx.read(buffer, length * 4));
}

export type Results = Record<"out" | "lse" | "dQ" | "dK" | "dV", Float32Array>;

/**
 * Run the GPU forward and backward on `c` and read everything back; `dtype` f16 puts q, k, v, dOut, the
 * output and the gradients in halves (lse stays f32).
 */
export async function runGpu(
  ctx: GpuContext,
  c: Case,
  x: ReturnType<typeof inputs>,
  dtype: "f32" | "f16" = "f32",
): Promise<Results> {
  const [qb, kb, vb, dOut] = [x.q, x.k, x.v, x.dOut].map((values) => uploadAs(ctx, values, dtype));
  const kvStart = x.kvStart ? ctx.upload(x.kvStart) : undefined;
  const kvSize = c.batch * c.kvLen * c.numKvHeads * c.headDim;
  const rows = c.batch * c.numHeads * c.seqLen;
  const bytes = (n: number) => Math.ceil((n * (dtype === "f16" ? 2 : 4)) / 4) * 4;
  const out = ctx.pool.acquire(bytes(x.q.length));
  const lse = ctx.pool.acquire(rows * 4);
  const dQ = ctx.pool.acquire(bytes(x.q.length));
  const dK = ctx.pool.acquire(bytes(kvSize));
  const dV = ctx.pool.acquire(bytes(kvSize));
  const dims = { ...c, dtype };
  attentionForward(ctx, { ...dims, q: qb!, k: kb!, v: vb!, out, lse, kvStart });
  attentionBackward(ctx, { ...dims, q: qb!, k: kb!, v: vb!, out, dOut: dOut!, lse, dQ, dK, dV, kvStart });
  const results: Results = {
    out: await readAs(ctx, out, x.q.length, dtype),
    lse: await readF32(ctx, lse, rows),
    dQ: await readAs(ctx, dQ, x.q.length, dtype),
    dK: await readAs(ctx, dK, kvSize, dtype),
    dV: await readAs(ctx, dV, kvSize, dtype),
  };
  for (const buffer of [qb!, kb!, vb!, dOut!, out, lse, dQ, dK, dV, ...(kvStart ? [kvStart] : [])]) {
    ctx.pool.release(buffer);
  }
  return results;
}

export async function checkAgainstReference(c: Case, seed: number): Promise<Results> {
  const ctx = await testContext();
  const x = inputs(c, seed);
  const gpu = await runGpu(ctx, c, x);
  for (const values of Object.values(gpu)) expect(values.every(Number.isFinite)).toBe(true);
  const ref = attentionForwardRef({ ...c, ...x });
  expectClose(gpu.out, ref.out, 2e-5, 1e-4);
  expectClose(gpu.lse, ref.lse, 2e-5, 1e-5);
  const grads = attentionBackwardRef({ ...c, ...x });
  expectClose(gpu.dQ, grads.dQ, 5e-5, 2e-4);
  expectClose(gpu.dK, grads.dK, 5e-5, 2e-4);
  expectClose(gpu.dV, grads.dV, 5e-5, 2e-4);
  return gpu;
}

export const small = { batch: 1, numHeads: 4, numKvHeads: 2, headDim: 16 };
export const qwen = { numHeads: 14, numKvHeads: 2, headDim: 64 };
