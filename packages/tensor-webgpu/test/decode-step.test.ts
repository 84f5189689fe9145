import { describe, expect, it } from "vitest";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend, type WebGpuBackend } from "../src/backends/webgpu.js";
import * as ops from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { ATTENTION_KERNEL_KINDS, randomArray, testContext, useAttentionKernels } from "./helpers.js";

interface Case {
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Cached tokens before this step: the new token goes to this slot. */
  at: number;
  capacity: number;
  /** Left padding: sequence b's keys before kvStart[b] are masked. */
  padded?: boolean;
  theta?: number;
}

/**
 * One decoding step's attention from a packed q/k/v two ways, on fresh copies of the same caches: the
 * fused op, and ropeAppendPacked then decodeAttention. Returns each way's output, caches and dispatches.
 */
async function bothWays(backend: Backend, c: Case, seed: number) {
  const { batch, numHeads, numKvHeads, headDim, at, capacity } = c;
  const theta = c.theta ?? 1_000_000;
  const heads = numHeads + 2 * numKvHeads;
  const qkvValues = randomArray(batch * heads * headDim, seed);
  const cacheValues = randomArray(batch * capacity * numKvHeads * headDim, seed + 1);
  // Positions differ per sequence (left padding shifts them), as in a batch of prompts of several lengths.
  const starts = Int32Array.from({ length: batch }, (_, b) => (c.padded ? Math.min(at, 3 * b) : 0));
  const positions = tensor(
    Int32Array.from(starts, (s) => at - s),
    [batch],
    { backend, dtype: "i32" },
  );
  const kvStart = c.padded ? tensor(starts, [batch], { backend, dtype: "i32" }) : undefined;
  const options = { numHeads, numKvHeads, kvLen: at + 1, kvStart };
  const dispatched = () => (backend as Partial<WebGpuBackend>).ctx?.stats.dispatches ?? 0;
  const run = async (way: "fused" | "separate") => {
    const qkv = tensor(qkvValues, [batch, 1, heads, headDim], { backend });
    const cacheShape = [batch, capacity, numKvHeads, headDim];
    const keys = tensor(cacheValues, cacheShape, { backend });
    const values = tensor(
      cacheValues.map((x) => 0.5 - x),
      cacheShape,
      { backend },
    );
    const cache = { keys, values, at };
    const before = dispatched();
    const out =
      way === "fused"
        ? ops.decodeAttentionPacked(qkv, positions, theta, cache, options)
        : ops.decodeAttention(
            ops.ropeAppendPacked(qkv, positions, theta, cache, options),
            keys,
            values,
            options,
          );
    const dispatches = dispatched() - before;
    return { out: await out.floats(), keys: await keys.floats(), values: await values.floats(), dispatches };
  };
  return { fused: await run("fused"), separate: await run("separate") };
}

const cases: Case[] = [
  // Qwen2.5-0.5B's heads: 7 query heads per KV head, headDim 64; one split of keys.
  { batch: 2, numHeads: 14, numKvHeads: 2, headDim: 64, at: 40, capacity: 48 },
  // Several splits of 64 keys (the new key is in the last), left padding, another group size.
  { batch: 1, numHeads: 4, numKvHeads: 2, headDim: 16, at: 300, capacity: 320, padded: true },
  { batch: 3, numHeads: 6, numKvHeads: 3, headDim: 8, at: 129, capacity: 140, padded: true, theta: 10_000 },
  // The first token of an empty cache.
  { batch: 2, numHeads: 2, numKvHeads: 1, headDim: 32, at: 0, capacity: 4 },
];

describe("decodeAttentionPacked", () => {
  // Lavapipe runs the lane form of the decoding kernel, and the workgroup form (GPUs') as the other kind's.
  for (const kind of ATTENTION_KERNEL_KINDS)
    describe(`${kind} decoding kernel`, () => {
      useAttentionKernels(kind);
      for (const [i, c] of cases.entries()) {
        it(`gives ropeAppendPacked + decodeAttention's bits in one kernel on WebGPU: ${JSON.stringify(c)}`, async () => {
          const gpu = createWebGpuBackend(await testContext());
          const { fused, separate } = await bothWays(gpu, c, 10 * i + 1);
          expect(fused.dispatches).toBe(separate.dispatches - 1);
          expect(Array.from(fused.out)).toEqual(Array.from(separate.out));
          expect(Array.from(fused.keys)).toEqual(Array.from(separate.keys));
          expect(Array.from(fused.values)).toEqual(Array.from(separate.values));
        });
      }
    });

  it("runs the two ops where the kernel does not apply: the CPU backend, a head size off multiples of 8", async () => {
    const onCpu = await bothWays(createCpuBackend(), cases[1]!, 5);
    expect(onCpu.fused).toEqual(onCpu.separate);
    const gpu = createWebGpuBackend(await testContext());
    const odd = await bothWays(
      gpu,
      { batch: 2, numHeads: 4, numKvHeads: 2, headDim: 12, at: 9, capacity: 12 },
      6,
    );
    expect(odd.fused).toEqual(odd.separate);
  });

  it("refuses a slot other than kvLen - 1", async () => {
    const backend = createCpuBackend();
    const qkv = tensor(new Float32Array(4 * 8), [1, 1, 4, 8], { backend });
    const keys = tensor(new Float32Array(16 * 8), [1, 16, 1, 8], { backend });
    const values = tensor(new Float32Array(16 * 8), [1, 16, 1, 8], { backend });
    const positions = tensor(new Int32Array([3]), [1], { backend, dtype: "i32" });
    expect(() =>
      ops.decodeAttentionPacked(
        qkv,
        positions,
        10_000,
        { keys, values, at: 3 },
        { numHeads: 2, numKvHeads: 1, kvLen: 3 },
      ),
    ).toThrow(/slot kvLen - 1 \(2\), not 3/);
  });
});
