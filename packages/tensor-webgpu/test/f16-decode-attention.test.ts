/**
 * Decoding attention on f16 storage (an f16 model's KV cache): q (or the packed q/k/v), the caches and the
 * output are halves, widened as the kernel reads them, with the f32 kernel's arithmetic in the same order.
 * So on halves it must give, bit for bit, the f32 kernel's output on the same values rounded once — with
 * one split (the kernel normalises its own output) and with several (the combine writes it), in both
 * kernel forms (the lane form lavapipe runs, the workgroup form GPUs run), and in the fused RoPE form,
 * whose appended keys and values must be the f32 fused form's rounded.
 */
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import { type DecodeRope, decodeAttention } from "../src/kernels/attention/index.js";
import type { FloatStorage } from "../src/kernels/elementwise.js";
import { decodeAttentionRef } from "../src/reference/attention.js";
import { toHalfBits } from "../src/reference/layout.js";
import {
  ATTENTION_KERNEL_KINDS,
  expectClose,
  halves,
  randomArray,
  readAs,
  testContext,
  uploadAs,
  useAttentionKernels,
} from "./helpers.js";

const ctx = await testContext();

interface Case {
  label: string;
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  kvLen: number;
  /** Left padding: sequence b's keys before kvStart[b] are masked (kvLen: none is seen). */
  kvStart?: number[];
  /** Dispatches expected: 1 for a single split (no combine), 2 for several splits and their combine. */
  dispatches: 1 | 2;
}

const qwenHeads = { numHeads: 14, numKvHeads: 2, headDim: 64 };
const smallHeads = { numHeads: 4, numKvHeads: 2, headDim: 16 };

// Lavapipe aims at 16 workgroups, one per (split, KV head, sequence): a cache of more than 64 keys splits
// where batch · numKvHeads < 16.
const CASES: Case[] = [
  { label: "Qwen2.5-0.5B heads, one split", batch: 1, ...qwenHeads, kvLen: 40, dispatches: 1 },
  { label: "Qwen2.5-0.5B heads, several splits", batch: 1, ...qwenHeads, kvLen: 700, dispatches: 2 },
  {
    label: "small heads, one split, left padding (one sequence sees no key)",
    batch: 3,
    ...smallHeads,
    kvLen: 50,
    kvStart: [0, 9, 50],
    dispatches: 1,
  },
  {
    label: "small heads, several splits, left padding",
    batch: 2,
    ...smallHeads,
    kvLen: 300,
    kvStart: [0, 70],
    dispatches: 2,
  },
];

// The rotation and the append do not depend on the group size: small heads compile faster than Qwen's.
const ROPE_CASES: Case[] = [
  { label: "small heads, one split", batch: 2, ...smallHeads, kvLen: 41, dispatches: 1 },
  {
    label: "small heads, several splits, left padding",
    batch: 1,
    ...smallHeads,
    kvLen: 301,
    kvStart: [3],
    dispatches: 2,
  },
];

/** Half bit patterns of f32 values (rounded to the nearest half). */
const halfBits = (values: Float32Array) => Uint16Array.from(values, toHalfBits);

/** The raw halves of an f16 buffer. */
async function readHalfBits(buffer: GPUBuffer, n: number): Promise<Uint16Array> {
  return new Uint16Array(await ctx.read(buffer, Math.ceil(n / 2) * 4), 0, n);
}

/** Fails at the first element whose bits differ (exact: -0 is not 0). */
function expectSameHalves(actual: Uint16Array, expected: Uint16Array, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  const i = actual.findIndex((bits, index) => bits !== expected[index]);
  if (i >= 0)
    expect.fail(
      `${what}, element ${i}: got half 0x${actual[i]!.toString(16)}, expected 0x${expected[i]!.toString(16)}`,
    );
}

/** Some f32 result must need rounding, or the comparison could not tell one rounding from none. */
function expectSomeRounding(f32: Float32Array): void {
  expect(halves(f32).some((v, i) => v !== f32[i])).toBe(true);
}

/** A case's inputs, every value already a half so that the f32 and f16 runs see the same numbers. */
function inputs(c: Case, seed: number, qHeads = c.numHeads) {
  const capacity = c.kvLen + 3;
  const cacheElements = c.batch * capacity * c.numKvHeads * c.headDim;
  return {
    capacity,
    q: halves(randomArray(c.batch * qHeads * c.headDim, seed, 1.5)),
    kCache: halves(randomArray(cacheElements, seed + 1, 1.5)),
    vCache: halves(randomArray(cacheElements, seed + 2)),
    kvStart: c.kvStart && Int32Array.from(c.kvStart),
  };
}

type Inputs = ReturnType<typeof inputs>;

/** Runs decodeAttention on `x` stored as `storage`; returns the output and caches (as f32) and the dispatches. */
async function runDecode(c: Case, x: Inputs, storage: FloatStorage, rope?: DecodeRope) {
  const bytes = storage === "f16" ? 2 : 4;
  const [q, kCache, vCache] = [x.q, x.kCache, x.vCache].map((values) => uploadAs(ctx, values, storage));
  const outElements = c.batch * c.numHeads * c.headDim;
  const out = ctx.pool.acquire(outElements * bytes);
  const kvStart = x.kvStart && ctx.upload(x.kvStart);
  const before = ctx.stats.dispatches;
  decodeAttention(
    ctx,
    {
      ...c,
      capacity: x.capacity,
      q: q!,
      kCache: kCache!,
      vCache: vCache!,
      out,
      kvStart,
      dtype: storage,
    },
    rope,
  );
  const dispatches = ctx.stats.dispatches - before;
  const result = {
    dispatches,
    out: await readAs(ctx, out, outElements, storage),
    outBits: storage === "f16" ? await readHalfBits(out, outElements) : undefined,
    kCache: await readAs(ctx, kCache!, x.kCache.length, storage),
    vCache: await readAs(ctx, vCache!, x.vCache.length, storage),
  };
  for (const buffer of [q!, kCache!, vCache!, out, ...(kvStart ? [kvStart] : [])]) ctx.pool.release(buffer);
  return result;
}

describe.skipIf(!ctx.info.features.shaderF16)("decodeAttention on f16 storage", () => {
  it("the bit comparison catches a one-ulp difference", () => {
    const expected = halfBits(Float32Array.of(0.1, -2.5, 1e-3));
    const off = Uint16Array.from(expected);
    off[2]! += 1;
    expect(() => expectSameHalves(off, expected, "off by one ulp")).toThrow(/element 2/);
    expectSameHalves(Uint16Array.from(expected), expected, "the same");
  });

  it("the CPU backend rounds its output to halves (and keeps f32's unrounded)", () => {
    const c = CASES[3]!;
    const x = inputs(c, 31);
    const cpu = createCpuBackend();
    const kvStart = x.kvStart!;
    const dims = { ...c, capacity: x.capacity };
    const expected = decodeAttentionRef({ ...dims, ...x });
    const run = (dtype: FloatStorage) => {
      const out = cpu.alloc(expected.length * 4);
      cpu.decodeAttention({
        ...dims,
        q: x.q.slice().buffer,
        kCache: x.kCache.slice().buffer,
        vCache: x.vCache.slice().buffer,
        kvStart: kvStart.slice().buffer,
        out,
        dtype,
      });
      return new Float32Array(out);
    };
    const f32 = run("f32");
    expect(Array.from(f32)).toEqual(Array.from(expected));
    expectSomeRounding(f32);
    expectSameHalves(halfBits(run("f16")), halfBits(expected), "CPU f16 output");
    expect(Array.from(run("f16"))).toEqual(Array.from(halves(expected)));
  });

  for (const kind of ATTENTION_KERNEL_KINDS)
    describe(`${kind} decoding kernel: the f32 kernel's output on the same halves, rounded once`, () => {
      useAttentionKernels(kind);

      for (const [i, c] of CASES.entries())
        it(c.label, async () => {
          const pipelines = vi.spyOn(ctx, "pipeline");
          onTestFinished(() => pipelines.mockRestore());
          const x = inputs(c, 10 * i + 1);
          const f32 = await runDecode(c, x, "f32");
          const f16 = await runDecode(c, x, "f16");
          expect([f32.dispatches, f16.dispatches]).toEqual([c.dispatches, c.dispatches]);
          expectSomeRounding(f32.out);
          expectSameHalves(f16.outBits!, halfBits(f32.out), "f16 output");
          // Both runs being wrong the same way would pass the above: the reference bounds them.
          const expected = decodeAttentionRef({ ...c, ...x });
          expectClose(f16.out, expected, 2e-3, 2e-3);
          // The kernels are told apart by their dtype; lavapipe runs the lane form as its own kind.
          const labels = pipelines.mock.calls
            .map(([label]) => label)
            .filter((l) => l.startsWith("attention decode"));
          expect(labels.filter((l) => l.includes("(f16")).length).toBe(c.dispatches);
          expect(labels.filter((l) => l.includes("(f32")).length).toBe(c.dispatches);
          if (ctx.info.adapter.isSoftware)
            expect(
              labels.every(
                (l) => l.includes("combine") || l.includes("lanes") === (kind === "this adapter's"),
              ),
            ).toBe(true);
          // The masked sequence's output is zeros; the others are not.
          const rowElements = c.numHeads * c.headDim;
          for (const [b, start] of (c.kvStart ?? []).entries())
            expect(f16.out.slice(b * rowElements, (b + 1) * rowElements).some((v) => v !== 0)).toBe(
              start < c.kvLen,
            );
        });

      for (const [i, c] of ROPE_CASES.entries())
        it(`with RoPE: ${c.label}`, async () => {
          const { batch, numHeads, numKvHeads, headDim, kvLen } = c;
          const x = inputs(c, 10 * i + 5, numHeads + 2 * numKvHeads);
          const theta = 1_000_000;
          const starts = c.kvStart ?? Array.from({ length: batch }, () => 0);
          const positions = ctx.upload(Int32Array.from(starts, (s) => kvLen - 1 - s));
          const rope = { positions, theta };
          const f32 = await runDecode(c, x, "f32", rope);
          const f16 = await runDecode(c, x, "f16", rope);
          expect([f32.dispatches, f16.dispatches]).toEqual([c.dispatches, c.dispatches]);
          // The new key (rotated) and value in slot kvLen - 1: the f32 fused form's, rounded.
          expectSomeRounding(f32.kCache);
          expectSameHalves(halfBits(f16.kCache), halfBits(f32.kCache), "f16 keys");
          expectSameHalves(halfBits(f16.vCache), halfBits(f32.vCache), "f16 values");
          expect(f16.kCache).not.toEqual(x.kCache);

          // The output is ropeAppend's then decodeAttention's on halves: the rotated queries are rounded
          // as ropeAppend would store them, and the new key is read back from the cache as stored. So it is
          // the plain f32 kernel's on the f32-rotated queries and the f32 fused form's cache, rounded.
          const backend = createWebGpuBackend(ctx);
          const qkv = ctx.upload(x.q);
          const qOut = ctx.pool.acquire(batch * numHeads * headDim * 4);
          const [keys, values] = [x.kCache, x.vCache].map((v) => ctx.upload(v));
          expect(
            backend.ropeAppend!({
              q: qkv,
              qOut,
              k: qkv,
              v: qkv,
              keys: keys!,
              values: values!,
              positions,
              batch,
              seqLen: 1,
              numHeads,
              numKvHeads,
              headDim,
              theta,
              capacity: x.capacity,
              at: kvLen - 1,
              packed: true,
            }),
          ).toBe(true);
          const rotated = await readAs(ctx, qOut, batch * numHeads * headDim, "f32");
          // ropeAppend's cache append is the fused form's (the f32 decode-step tests): the same bits.
          expect(Array.from(await readAs(ctx, keys!, x.kCache.length, "f32"))).toEqual(
            Array.from(f32.kCache),
          );
          const unfused = await runDecode(
            c,
            { ...x, q: halves(rotated), kCache: f16.kCache, vCache: f16.vCache },
            "f32",
          );
          expectSameHalves(f16.outBits!, halfBits(unfused.out), "f16 output");
          // That rounding of the queries shows in the output: the comparison would catch its absence.
          expectSomeRounding(rotated);
          const unroundedQueries = await runDecode(
            c,
            { ...x, q: rotated, kCache: f16.kCache, vCache: f16.vCache },
            "f32",
          );
          expect(halfBits(unroundedQueries.out)).not.toEqual(f16.outBits);
          for (const buffer of [qkv, qOut, keys!, values!, positions]) ctx.pool.release(buffer);
        });
    });
});
