/**
 * The cases of the attention tests: inputs of a problem, the GPU forward and backward run on them, and
 * their check against the CPU reference.
 */
import { expect } from "vitest";
import type { AttentionDims } from "../src/core/attention.js";
import type { GpuContext } from "../src/gpu/context.js";
import { attentionBackward, attentionForward } from "../src/kernels/attention/index.js";
import { attentionBackwardRef, attentionForwardRef } from "../src/reference/attention.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

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

/** Run the GPU forward and backward on `c` and read everything back. */
export async function runGpu(ctx: GpuContext, c: Case, x: ReturnType<typeof inputs>): Promise<Results> {
  const qb = ctx.upload(x.q);
  const kb = ctx.upload(x.k);
  const vb = ctx.upload(x.v);
  const dOut = ctx.upload(x.dOut);
  const kvStart = x.kvStart ? ctx.upload(x.kvStart) : undefined;
  const kvSize = c.batch * c.kvLen * c.numKvHeads * c.headDim;
  const rows = c.batch * c.numHeads * c.seqLen;
  const out = ctx.pool.acquire(x.q.byteLength);
  const lse = ctx.pool.acquire(rows * 4);
  const dQ = ctx.pool.acquire(x.q.byteLength);
  const dK = ctx.pool.acquire(kvSize * 4);
  const dV = ctx.pool.acquire(kvSize * 4);
  attentionForward(ctx, { ...c, q: qb, k: kb, v: vb, out, lse, kvStart });
  attentionBackward(ctx, { ...c, q: qb, k: kb, v: vb, out, dOut, lse, dQ, dK, dV, kvStart });
  const results: Results = {
    out: await readF32(ctx, out, x.q.length),
    lse: await readF32(ctx, lse, rows),
    dQ: await readF32(ctx, dQ, x.q.length),
    dK: await readF32(ctx, dK, kvSize),
    dV: await readF32(ctx, dV, kvSize),
  };
  for (const buffer of [qb, kb, vb, dOut, out, lse, dQ, dK, dV, ...(kvStart ? [kvStart] : [])]) {
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
