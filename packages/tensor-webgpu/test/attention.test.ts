import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { EMPTY_ROW_LSE } from "../src/core/attention.js";
import type { GpuContext } from "../src/gpu/context.js";
import { KV_GRAD_PER_HEAD_KERNEL, kvGradKernel, Q_GRAD_KERNEL } from "../src/kernels/attention/backward.js";
import { FORWARD_KERNEL } from "../src/kernels/attention/forward.js";
import { attentionForward, attentionTuning, decodeAttention } from "../src/kernels/attention/index.js";
import {
  limitTextureRowsForTesting,
  textureAttentionLanes,
} from "../src/kernels/attention/texture-staging.js";
import {
  attentionTileKey,
  attentionTiles,
  disableAttentionTuning,
  enableAttentionTuning,
  tileCandidates,
  tileName,
} from "../src/kernels/attention/tile-choices.js";
import { tuneAttentionTiles } from "../src/kernels/attention/tile-tuning.js";
import { listTile, tileProfile } from "../src/kernels/attention/tiles.js";
import { disableKernelTuning, loadKernelTuning, saveKernelTuning } from "../src/kernels/kernel-tuning.js";
import { REPLACE_MARGIN } from "../src/kernels/tuning-timer.js";
import { attentionForwardRef, decodeAttentionRef } from "../src/reference/attention.js";
import {
  type Case,
  checkAgainstReference,
  inputs,
  qwen,
  type Results,
  readF32,
  runGpu,
  small,
} from "./attention-cases.js";
import {
  ATTENTION_KERNEL_KINDS,
  expectClose,
  randomArray,
  testContext,
  useAttentionKernels,
} from "./helpers.js";

// Each distinct headDim (and tile choice) is a new shader: on lavapipe its first use costs a second or
// more of JIT, so most cases share headDim 16 and the Qwen2.5-0.5B shape (14/2 heads, headDim 64).

/** Run the enclosing describe block's `pass` in the matmul form (matmul-form.ts), reset after each. */
function useMatmulForm(pass: "forward" | "backward"): void {
  beforeEach(() => {
    attentionTuning[pass] = "matmul";
  });
  afterEach(() => {
    attentionTuning[pass] = "auto";
  });
}

/**
 * The adapter's own kernels, then the other kind's code (hardware on lavapipe, software on a GPU), then
 * the matmul forms of the forward and of the backward: their tiles, the forward's softmax and the
 * backward's sums differ, and each must match the reference.
 */
for (const kind of [...ATTENTION_KERNEL_KINDS, "matmul-form forward", "matmul-form backward"] as const)
  describe(`attention forward and backward match the reference (${kind} kernels)`, () => {
    if (kind === "matmul-form forward") useMatmulForm("forward");
    else if (kind === "matmul-form backward") useMatmulForm("backward");
    else useAttentionKernels(kind);
    const cases: [string, Case][] = [
      ["causal, GQA 4/2, seqLen 33", { ...small, seqLen: 33, kvLen: 33 }],
      ["causal, one row", { ...small, seqLen: 1, kvLen: 1 }],
      ["causal, MHA 4/4, batch 3, seqLen 7", { ...small, batch: 3, numKvHeads: 4, seqLen: 7, kvLen: 7 }],
      ["non-causal, seqLen 20 over kvLen 45", { ...small, seqLen: 20, kvLen: 45, causal: false }],
      [
        "prefill continuation: 7 new rows after 40 cached, kvCapacity 64",
        { ...small, seqLen: 7, kvLen: 47, kvCapacity: 64 },
      ],
      ["custom scale, seqLen 100", { ...small, seqLen: 100, kvLen: 100, scale: 0.3 }],
      [
        "Qwen heads 14/2 x 64, batch 3, kvStart",
        { ...qwen, batch: 3, seqLen: 37, kvLen: 37, kvStart: [0, 5, 30] },
      ],
      ["Qwen heads, non-causal, seqLen 100", { ...qwen, batch: 1, seqLen: 100, kvLen: 100, causal: false }],
    ];
    for (const [name, c] of cases) it(name, () => checkAgainstReference(c, name.length));

    it("gives rows that see no key zeros and EMPTY_ROW_LSE, with zero gradients and no NaN", async () => {
      // Sequence 0: rows before position 10 see nothing; sequence 1: kvStart = kvLen masks every key.
      const c: Case = { ...small, batch: 2, seqLen: 24, kvLen: 24, kvStart: [10, 24] };
      const gpu = await checkAgainstReference(c, 5);
      for (let b = 0; b < 2; b++) {
        for (let h = 0; h < c.numHeads; h++) {
          for (let i = 0; i < c.seqLen; i++) {
            if (b === 0 && i >= 10) continue;
            expect(gpu.lse[(b * c.numHeads + h) * c.seqLen + i]).toBe(Math.fround(EMPTY_ROW_LSE));
            const base = ((b * c.seqLen + i) * c.numHeads + h) * c.headDim;
            for (const values of [gpu.out, gpu.dQ]) {
              expect(values.subarray(base, base + c.headDim).every((value) => value === 0)).toBe(true);
            }
          }
        }
      }
      const perSequence = c.kvLen * c.numKvHeads * c.headDim;
      expect(gpu.dK.subarray(perSequence).every((value) => value === 0)).toBe(true);
      expect(gpu.dV.subarray(0, 10 * c.numKvHeads * c.headDim).every((value) => value === 0)).toBe(true);
    });

    it("is deterministic: two runs are bit-identical", async () => {
      const ctx = await testContext();
      const c: Case = { ...qwen, batch: 2, seqLen: 45, kvLen: 45, kvStart: [0, 3] };
      const x = inputs(c, 9);
      const first = await runGpu(ctx, c, x);
      const second = await runGpu(ctx, c, x);
      for (const key of Object.keys(first) as (keyof Results)[]) {
        expect(Buffer.from(second[key].buffer).equals(Buffer.from(first[key].buffer))).toBe(true);
      }
    });
  });

describe("attention with other head sizes and tiles", () => {
  afterEach(() => {
    attentionTuning.profile = "auto";
  });

  // Forward only: every headDim is new shaders, and the backward shares the tiling code.
  for (const headDim of [8, 128, 256]) {
    it(`forward, headDim ${headDim}, with each adapter kind's kernels`, async () => {
      for (const profile of ["auto", "hardware", "software"] as const) {
        attentionTuning.profile = profile;
        await forwardMatches(headDim);
      }
    });
  }

  async function forwardMatches(headDim: number): Promise<void> {
    const ctx = await testContext();
    const c = { ...small, numHeads: 2, numKvHeads: 1, headDim, seqLen: 37, kvLen: 40, kvCapacity: 41 };
    const x = inputs(c, headDim);
    const qb = ctx.upload(x.q);
    const kb = ctx.upload(x.k);
    const vb = ctx.upload(x.v);
    const out = ctx.pool.acquire(x.q.byteLength);
    attentionForward(ctx, { ...c, q: qb, k: kb, v: vb, out });
    const actual = await readF32(ctx, out, x.q.length);
    expectClose(actual, attentionForwardRef({ ...c, ...x }).out, 2e-5, 1e-4);
    for (const buffer of [qb, kb, vb, out]) ctx.pool.release(buffer);
  }

  it("on GPUs, grouped-query dK/dV runs one workgroup per query head and sums each group's shares", async () => {
    const ctx = await testContext();
    attentionTuning.profile = "hardware";
    const table = enableAttentionTuning(ctx);
    const c: Case = { ...qwen, batch: 2, seqLen: 45, kvLen: 45, kvStart: [0, 6] };
    await checkAgainstReference(c, 21);
    expect(table.pendingDispatches().map((d) => d.kernel.name)).toEqual([
      FORWARD_KERNEL.name,
      KV_GRAD_PER_HEAD_KERNEL.name,
      Q_GRAD_KERNEL.name,
    ]);
    // Its tuned tile (a tuning-only one) runs and computes the same.
    const tile = KV_GRAD_PER_HEAD_KERNEL.tiles.tuning[0]!;
    table.set({ key: attentionTileKey(KV_GRAD_PER_HEAD_KERNEL, c), tile, candidates: [], rejected: [] });
    await checkAgainstReference(c, 22);
    disableAttentionTuning(ctx);
  });

  it("rejects a headDim that is not a multiple of 4", async () => {
    const ctx = await testContext();
    const b = ctx.pool.acquire(1024);
    expect(() =>
      attentionForward(ctx, { ...small, headDim: 6, seqLen: 2, kvLen: 2, q: b, k: b, v: b, out: b }),
    ).toThrow(/multiple of 4/);
    ctx.pool.release(b);
  });
});

describe("texture attention kernels (software adapters)", () => {
  afterEach(() => {
    attentionTuning.textures = true;
    limitTextureRowsForTesting();
  });

  /**
   * Runs `c` with the tiled kernels and with the texture kernels and expects every output bit for bit
   * the same: the texture kernels do the same arithmetic in the same order. GPUs (subgroups of 32 lanes)
   * run only the tiled kernels, so there the case checks just that.
   */
  async function expectSameAsTiled(
    c: Case,
    seed: number,
    counts?: { dispatches: number; textureCopies: number },
  ): Promise<void> {
    const ctx = await testContext();
    const lanes = textureAttentionLanes(ctx, c);
    if (lanes === undefined) {
      expect(ctx.info.adapter.isSoftware).toBe(false);
      return;
    }
    const x = inputs(c, seed);
    attentionTuning.textures = false;
    const tiled = await runGpu(ctx, c, x);
    attentionTuning.textures = true;
    const before = { ...ctx.stats };
    const texture = await runGpu(ctx, c, x);
    if (counts) {
      expect(ctx.stats.dispatches - before.dispatches).toBe(counts.dispatches);
      expect(ctx.stats.textureCopies - before.textureCopies).toBe(counts.textureCopies);
    }
    for (const key of Object.keys(tiled) as (keyof Results)[]) {
      const same = Buffer.from(texture[key].buffer).equals(Buffer.from(tiled[key].buffer));
      expect(same, `${key} differs from the tiled kernel's`).toBe(true);
    }
  }

  it("compute what the tiled kernels compute, bit for bit (GQA, kvStart, rows that see no key)", () =>
    expectSameAsTiled({ ...small, headDim: 32, batch: 3, seqLen: 70, kvLen: 70, kvStart: [0, 9, 70] }, 1));
  it("bit for bit on rows whose buffers a copy cannot take (headDim 16: K rows of 128 bytes, repacked)", () =>
    expectSameAsTiled({ ...small, batch: 2, seqLen: 33, kvLen: 33 }, 2));
  it("bit for bit on a prefill continuation (7 rows after 40 cached, kvCapacity 64) and non-causal", async () => {
    await expectSameAsTiled({ ...small, headDim: 32, seqLen: 7, kvLen: 47, kvCapacity: 64 }, 3);
    await expectSameAsTiled({ ...small, headDim: 32, seqLen: 20, kvLen: 45, causal: false }, 4);
  });
  it("bit for bit on Qwen2.5-0.5B's heads (14/2 x 64)", () =>
    expectSameAsTiled({ ...qwen, batch: 2, seqLen: 45, kvLen: 45, kvStart: [0, 3] }, 5));
  it("split a batch taller than a texture into chunks of whole sequences", async () => {
    // 33-row sequences in textures of 70 rows: chunks of 2 + 1 sequences, one dispatch each per kernel
    // (forward; stats, dK/dV and dQ), and each chunk's operands copied once (Q, K, V; Q, K, V, dOut).
    limitTextureRowsForTesting(70);
    await expectSameAsTiled(
      { ...small, headDim: 32, batch: 3, seqLen: 33, kvLen: 33, kvStart: [0, 4, 8] },
      6,
      { dispatches: 2 + 1 + 2 + 2, textureCopies: 2 * 3 + 2 * 4 },
    );
  });
  it("leave to the tiled kernels what they cannot take", async () => {
    const ctx = await testContext();
    if (textureAttentionLanes(ctx, { ...qwen, batch: 1, seqLen: 8, kvLen: 8 }) === undefined) {
      expect(ctx.info.adapter.isSoftware).toBe(false);
      return;
    }
    // headDim 128: accumulators per lane beyond what lavapipe's JIT handles quickly.
    expect(
      textureAttentionLanes(ctx, { ...qwen, headDim: 128, batch: 1, seqLen: 8, kvLen: 8 }),
    ).toBeUndefined();
    // A sequence taller than a texture.
    limitTextureRowsForTesting(16);
    expect(textureAttentionLanes(ctx, { ...qwen, batch: 1, seqLen: 17, kvLen: 17 })).toBeUndefined();
    attentionTuning.textures = false;
    expect(textureAttentionLanes(ctx, { ...qwen, batch: 1, seqLen: 8, kvLen: 8 })).toBeUndefined();
  });
});

/**
 * Each adapter kind's tiles and kernels, whatever the adapter: a GPU runs grouped-query dK/dV per query head
 * (KV_GRAD_PER_HEAD_KERNEL), a software adapter the grouped kernel.
 */
for (const profile of ["software", "hardware"] as const)
  describe(`attention tiles measured per adapter (${profile} tiles)`, () => {
    // Tiles belong to the tiled kernels: on software adapters the texture kernels would run instead.
    beforeEach(() => {
      attentionTuning.textures = false;
      attentionTuning.profile = profile;
    });
    afterEach(async () => {
      attentionTuning.textures = true;
      attentionTuning.profile = "auto";
      disableAttentionTuning(await testContext());
    });
    // headDim 16: every tile fits in 32 KiB of workgroup memory (lavapipe's), so every one runs here.
    const c: Case = { ...small, batch: 2, seqLen: 70, kvLen: 70, kvStart: [0, 9] };
    const tiledKernels = (ctx: GpuContext) => [FORWARD_KERNEL, kvGradKernel(ctx, c), Q_GRAD_KERNEL];

    // The tiles only tuning tries run nowhere else: each kernel runs its i-th one in round i.
    for (const round of [0, 1, 2]) {
      it(`a tuned tile is the one that runs, and computes the same (tuning-only tiles, round ${round})`, async () => {
        const ctx = await testContext();
        const table = enableAttentionTuning(ctx);
        const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
        for (const kernel of tiledKernels(ctx)) {
          const tile = kernel.tiles.tuning[round]!;
          expect(kernel.bytes(tile, c.headDim / 4, tileProfile(ctx))).toBeLessThanOrEqual(limit);
          table.set({ key: attentionTileKey(kernel, c), tile, candidates: [], rejected: [] });
        }
        const before = ctx.stats.pipelines;
        await checkAgainstReference(c, 11 + round);
        expect(table.pendingDispatches()).toEqual([]); // every dispatch found its tuned tile
        expect(ctx.stats.pipelines).toBeGreaterThan(before); // new tiles, new shaders
      });
    }

    it("times every candidate of the dispatches met, keeps the fastest, and saves and loads them", async () => {
      const ctx = await testContext();
      const table = enableAttentionTuning(ctx);
      const dims: Case = { ...small, seqLen: 24, kvLen: 24 };
      await runGpu(ctx, dims, inputs(dims, 5));
      const kernels = tiledKernels(ctx);
      expect(table.pendingDispatches().map((d) => d.kernel.name)).toEqual(kernels.map((k) => k.name));
      const tuned = await tuneAttentionTiles(ctx, undefined, { repeats: 1, rounds: 1 });
      expect(tuned).toHaveLength(3);
      const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
      for (const [i, entry] of tuned.entries()) {
        const software = ctx.info.adapter.isSoftware;
        const profile = tileProfile(ctx);
        const candidates = tileCandidates(kernels[i]!, dims.headDim / 4, limit, profile, software).map(
          tileName,
        );
        expect(candidates.length).toBeGreaterThan(1);
        expect(entry.candidates.map((t) => t.tile).sort()).toEqual([...candidates].sort());
        // Fastest first; the winner is the fastest, or the list's tile within the margin of it.
        expect(entry.candidates[0]!.ms).toBeLessThanOrEqual(entry.candidates.at(-1)!.ms);
        const chosen = entry.candidates.find((t) => t.tile === tileName(entry.tile))!;
        expect(chosen.ms).toBeLessThanOrEqual(entry.candidates[0]!.ms * (1 + REPLACE_MARGIN));
        if (chosen !== entry.candidates[0])
          expect(entry.tile).toEqual(listTile(ctx, kernels[i]!, dims.headDim / 4));
        expect(entry.rejected).toEqual([]); // every tile computes what the list's tile computes
      }
      expect(table.pendingDispatches()).toEqual([]);

      const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
      expect(saved.attention).toHaveLength(3);
      disableKernelTuning(ctx);
      expect(loadKernelTuning(ctx, saved, "tuning.json")).toBe(true);
      expect(attentionTiles(ctx)!.entries()).toEqual(tuned);
      expect(loadKernelTuning(ctx, { ...saved, adapter: "another GPU" })).toBe(false);
      const damaged = {
        ...saved,
        attention: [{ ...saved.attention[0], tile: { bq: 0, bk: 8, rm: 1, rn: 1 } }],
      };
      expect(() => loadKernelTuning(ctx, damaged, "tuning.json")).toThrow(
        /tuning\.json, attention entry 0: tile\.bq is not a positive integer/,
      );
      expect(() => loadKernelTuning(ctx, { ...saved, format: "x" })).toThrow(/format is "x"/);
    });

    it("runs a saved tile only if it is one of the kernel's own", async () => {
      const ctx = await testContext();
      const table = enableAttentionTuning(ctx);
      const dims: Case = { ...small, seqLen: 9, kvLen: 9 };
      table.set({
        key: attentionTileKey(FORWARD_KERNEL, dims),
        tile: { bq: 24, bk: 8, rm: 3, rn: 1 },
        candidates: [],
        rejected: [],
      });
      await checkAgainstReference(dims, 2); // falls back to the list's tile
    });
  });

/**
 * The adapter's own decoding kernel, then the other kind's: on lavapipe the lane form (decode-lanes.ts)
 * and the workgroup form; a GPU runs the workgroup form both times (its subgroups are too wide for lanes).
 */
for (const kind of ATTENTION_KERNEL_KINDS)
  describe(`decodeAttention (${kind} kernel)`, () => {
    useAttentionKernels(kind);
    it("matches the forward reference at the last position (short, long and split-straddling caches), deterministically", async () => {
      const ctx = await testContext();
      type Heads = { numHeads: number; numKvHeads: number; headDim: number };
      const configs: [kvLen: number, batch: number, heads: Heads, kvStart?: number[]][] = [
        [1, 1, small],
        [100, 1, small],
        [300, 3, small, [0, 70, 200]],
        [1000, 1, qwen],
        [129, 2, qwen, [5, 129]],
        // The embedded model's heads (one vec4 column per lane of 8), and a head of 12 vec4 columns.
        [77, 2, { numHeads: 4, numKvHeads: 2, headDim: 32 }, [0, 9]],
        [70, 1, { numHeads: 6, numKvHeads: 2, headDim: 48 }],
      ];
      const dispatches: number[] = [];
      const pipelines = vi.spyOn(ctx, "pipeline");
      onTestFinished(() => pipelines.mockRestore());
      for (const [kvLen, batch, heads, kvStart] of configs) {
        const { numHeads, numKvHeads, headDim } = heads;
        const capacity = kvLen + 5;
        const q = randomArray(batch * numHeads * headDim, kvLen, 1.5);
        const kCache = randomArray(batch * capacity * numKvHeads * headDim, kvLen + 1, 1.5);
        const vCache = randomArray(batch * capacity * numKvHeads * headDim, kvLen + 2);
        const kvStartData = kvStart ? Int32Array.from(kvStart) : undefined;
        const buffers = [q, kCache, vCache].map((a) => ctx.upload(a));
        const kvStartBuffer = kvStartData ? ctx.upload(kvStartData) : undefined;
        const out = ctx.pool.acquire(q.byteLength);
        const dims = { batch, numHeads, numKvHeads, headDim, kvLen, capacity };
        const before = ctx.stats.dispatches;
        const args = {
          ...dims,
          q: buffers[0]!,
          kCache: buffers[1]!,
          vCache: buffers[2]!,
          out,
          kvStart: kvStartBuffer,
        };
        decodeAttention(ctx, args);
        dispatches.push(ctx.stats.dispatches - before);
        const actual = await readF32(ctx, out, q.length);
        expect(actual.every(Number.isFinite)).toBe(true);
        decodeAttention(ctx, args); // again: the same bits
        expect(
          Buffer.from((await readF32(ctx, out, q.length)).buffer).equals(Buffer.from(actual.buffer)),
        ).toBe(true);
        const expected = decodeAttentionRef({ ...dims, q, kCache, vCache, kvStart: kvStartData });
        expectClose(actual, expected, 2e-5, 1e-4);
        // The same token through the prefill kernel (seqLen 1) agrees as well.
        const prefill = ctx.pool.acquire(q.byteLength);
        attentionForward(ctx, {
          ...dims,
          seqLen: 1,
          kvCapacity: capacity,
          q: buffers[0]!,
          k: buffers[1]!,
          v: buffers[2]!,
          out: prefill,
          kvStart: kvStartBuffer,
        });
        expectClose(await readF32(ctx, prefill, q.length), actual, 2e-6, 1e-5);
        for (const buffer of [...buffers, out, prefill, ...(kvStartBuffer ? [kvStartBuffer] : [])]) {
          ctx.pool.release(buffer);
        }
      }
      // A one-chunk cache is one split, normalised in place (no combine); a long one splits and combines.
      expect(dispatches[0]).toBe(1);
      expect(dispatches[3]).toBe(2);
      // Lavapipe runs the lane form as its own kernel and the workgroup form as the other kind's.
      if (ctx.info.adapter.isSoftware) {
        const lanes = pipelines.mock.calls.some(([label]) => label.startsWith("attention decode lanes"));
        expect(lanes).toBe(kind === "this adapter's");
      }
    });
  });
