import { afterEach, describe, expect, it } from "vitest";
import { GpuContext } from "../src/gpu/context.js";
import { KERNEL_TUNING_FORMAT, loadKernelTuning, saveKernelTuning } from "../src/kernels/kernel-tuning.js";
import {
  fixedRuleChoice,
  fixedRuleVariant,
  matmul,
  matmulChoice,
  matmulVariant,
} from "../src/kernels/matmul.js";
import {
  adapterKey,
  choiceName,
  disableMatmulTuning,
  enableMatmulTuning,
  KernelTuningFileError,
  type MatmulShape,
  matmulChoices,
  matmulShapeKey,
  pipelinedStoresOf,
} from "../src/kernels/matmul-choices.js";
import { matmulCandidates, timeMatmulCandidates, tuneMatmuls } from "../src/kernels/matmul-tuning.js";
import {
  chooseWinner,
  LONG_RUN_MS,
  OUT_OF_RACE,
  REPLACE_MARGIN,
  timeCandidates,
} from "../src/kernels/tuning-timer.js";
import { matmulRef } from "../src/reference/matmul.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const shape = (m: number, n: number, k: number, extra: Partial<MatmulShape> = {}): MatmulShape => ({
  batch: 1,
  m,
  n,
  k,
  transA: false,
  transB: true,
  dtype: "f32",
  ...extra,
});

afterEach(async () => disableMatmulTuning(await testContext()));

describe("matmul shape groups", () => {
  it("round each dimension up to a power of two and keep layout and element type apart", () => {
    expect(matmulShapeKey(shape(1900, 896, 896))).toBe("f32 NT 1x2048x1024x1024");
    expect(matmulShapeKey(shape(2048, 1024, 1024))).toBe(matmulShapeKey(shape(1900, 896, 896)));
    expect(matmulShapeKey(shape(2049, 896, 896))).toBe("f32 NT 1x4096x1024x1024");
    expect(matmulShapeKey(shape(64, 64, 64, { transA: true, transB: false }))).toBe("f32 TN 1x64x64x64");
    expect(matmulShapeKey(shape(64, 64, 64, { dtype: "f16" }))).not.toBe(matmulShapeKey(shape(64, 64, 64)));
  });
});

describe("the choice table", () => {
  it("notes each unmeasured group once, and a measured choice replaces the fixed rule", async () => {
    const ctx = await testContext();
    const args = {
      a: undefined!,
      b: undefined!,
      out: undefined!,
      batch: 1,
      m: 100,
      n: 96,
      k: 80,
      transB: true,
    };
    const fixed = matmulVariant(ctx, args);
    const table = enableMatmulTuning(ctx);
    expect(matmulVariant(ctx, args)).toBe(fixed);
    matmulVariant(ctx, { ...args, m: 120 }); // the same group
    matmulVariant(ctx, { ...args, transB: false }); // another layout
    expect(table.pendingShapes().map(matmulShapeKey)).toEqual([
      "f32 NT 1x128x128x128",
      "f32 NN 1x128x128x128",
    ]);

    const other = fixed === "tiled" ? "buffer" : "tiled";
    table.set({
      key: matmulShapeKey(shape(100, 96, 80)),
      shape: shape(100, 96, 80),
      choice: { variant: other },
      candidates: [],
      rejected: [],
    });
    expect(matmulVariant(ctx, args)).toBe(other);
    expect(table.pendingShapes().map(matmulShapeKey)).toEqual(["f32 NN 1x128x128x128"]);
    // A forced variant still wins, and turning tuning off restores the fixed rule.
    expect(matmulVariant(ctx, { ...args, variant: "buffer" })).toBe("buffer");
    disableMatmulTuning(ctx);
    expect(matmulVariant(ctx, args)).toBe(fixed);
  });

  it("runs a measured blocked tile and computes the same product", async () => {
    const ctx = await testContext();
    const s = shape(70, 130, 48);
    const tile = { rows: 64, cols: 128, depth: 16 } as const;
    enableMatmulTuning(ctx).set({
      key: matmulShapeKey(s),
      shape: s,
      choice: { variant: "blocked", blockedTile: tile },
      candidates: [],
      rejected: [],
    });
    const a = randomArray(s.m * s.k, 1);
    const b = randomArray(s.n * s.k, 2);
    const [aBuffer, bBuffer, out] = [ctx.upload(a), ctx.upload(b), ctx.pool.acquire(s.m * s.n * 4)];
    const args = { a: aBuffer, b: bBuffer, out, batch: 1, m: s.m, n: s.n, k: s.k, transB: true };
    expect(matmulChoice(ctx, args)).toEqual({ variant: "blocked", blockedTile: tile });
    matmul(ctx, args);
    const actual = new Float32Array(await ctx.read(out, s.m * s.n * 4));
    expectClose(actual, matmulRef({ batch: 1, m: s.m, n: s.n, k: s.k, transB: true, a, b }), 1e-4, 1e-4);
    for (const buffer of [aBuffer, bBuffer, out]) ctx.pool.release(buffer);
  });

  it("saves and loads as checked JSON, and leaves another adapter's table alone", async () => {
    const ctx = await testContext();
    const table = enableMatmulTuning(ctx);
    const s = shape(64, 256, 128);
    table.set({
      key: matmulShapeKey(s),
      shape: s,
      choice: { variant: "blocked", blockedTile: { rows: 128, cols: 64, depth: 16 } },
      candidates: [
        { kernel: "blocked 128x64/16", ms: 0.5 },
        { kernel: "tiled", ms: 0.7 },
      ],
      rejected: [{ kernel: "blocked 128x128/32", reason: "wrong product: element 3 is 0" }],
    });
    const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
    expect(saved.format).toBe(KERNEL_TUNING_FORMAT);
    expect(saved.adapter).toBe(adapterKey(ctx));

    disableMatmulTuning(ctx);
    expect(loadKernelTuning(ctx, { ...saved, adapter: "Some Other GPU" })).toBe(false);
    expect(matmulChoices(ctx)).toBeUndefined();
    expect(loadKernelTuning(ctx, saved)).toBe(true);
    const fresh = matmulChoices(ctx)!;
    expect(fresh).not.toBe(table);
    expect(fresh.size).toBe(1);
    expect(fresh.get(s)).toEqual(table.get(s));
  });

  it("keeps a tensor-core tile and its options (prefetch, wide or rotated stores) through a save and a load", async () => {
    const ctx = await testContext();
    const table = enableMatmulTuning(ctx);
    const s = shape(512, 4864, 896, { dtype: "f16" });
    const s2 = shape(2048, 4864, 896, { dtype: "f16" });
    const s3 = shape(4096, 4096, 4096, { dtype: "f16" });
    const choice = { variant: "subgroup-matrix-direct", matrixTile: 64 } as const;
    const prefetching = { variant: "subgroup-matrix-direct", matrixTile: 128, directPrefetch: true } as const;
    expect(choiceName(choice)).toBe("subgroup-matrix-direct 64x64");
    expect(choiceName(prefetching)).toBe("subgroup-matrix-direct 128x128 prefetch");
    table.set({ key: matmulShapeKey(s), shape: s, choice, candidates: [], rejected: [] });
    table.set({ key: matmulShapeKey(s2), shape: s2, choice: prefetching, candidates: [], rejected: [] });
    const wide = { variant: "subgroup-matrix-pipelined", matrixTile: 128, wideStores: true } as const;
    expect(choiceName(wide)).toBe("subgroup-matrix-pipelined 128x128 wide-stores");
    table.set({ key: matmulShapeKey(s3), shape: s3, choice: wide, candidates: [], rejected: [] });
    const s4 = shape(2048, 2048, 2048, { dtype: "f16" });
    const rotated = { variant: "subgroup-matrix-pipelined", matrixTile: 64, rotatedStores: true } as const;
    expect(choiceName(rotated)).toBe("subgroup-matrix-pipelined 64x64 rotated-stores");
    expect(pipelinedStoresOf(rotated)).toBe("rotated");
    expect(pipelinedStoresOf(wide)).toBe("wide");
    expect(() => pipelinedStoresOf({ ...wide, rotatedStores: true })).toThrow(/choose one/);
    table.set({ key: matmulShapeKey(s4), shape: s4, choice: rotated, candidates: [], rejected: [] });
    const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
    disableMatmulTuning(ctx);
    expect(loadKernelTuning(ctx, saved)).toBe(true);
    expect(matmulChoices(ctx)!.get(s)!.choice).toEqual(choice);
    expect(matmulChoices(ctx)!.get(s2)!.choice).toEqual(prefetching);
    expect(matmulChoices(ctx)!.get(s3)!.choice).toEqual(wide);
    expect(matmulChoices(ctx)!.get(s4)!.choice).toEqual(rotated);
    // Files written before the pipelined kernel name the tile `directTile`.
    const legacy = structuredClone(saved);
    for (const entry of legacy.matmul) {
      entry.choice.directTile = entry.choice.matrixTile;
      delete entry.choice.matrixTile;
    }
    disableMatmulTuning(ctx);
    expect(loadKernelTuning(ctx, legacy)).toBe(true);
    expect(matmulChoices(ctx)!.get(s)!.choice).toEqual(choice);
    disableMatmulTuning(ctx);
    expect(choiceName({ variant: "subgroup-matrix-pipelined", matrixTile: 128 })).toBe(
      "subgroup-matrix-pipelined 128x128",
    );
  });

  it("names what is wrong in a damaged file", async () => {
    const ctx = await testContext();
    const s = shape(64, 64, 64);
    const good = {
      format: KERNEL_TUNING_FORMAT,
      adapter: "another GPU",
      matmul: [{ key: matmulShapeKey(s), shape: s, choice: { variant: "tiled" }, candidates: [] }],
      attention: [],
    };
    expect(loadKernelTuning(ctx, good)).toBe(false); // checked, then not taken: another adapter's
    const damaged = (change: (file: typeof good) => unknown) => () =>
      loadKernelTuning(ctx, change(structuredClone(good)), "kernels.json");
    expect(damaged(() => [])).toThrow(/kernels\.json: not a JSON object/);
    expect(damaged((f) => ({ ...f, format: "v0" }))).toThrow(/format is "v0"/);
    expect(damaged((f) => ({ ...f, matmul: {} }))).toThrow(/matmul is not an array/);
    const entry = (patch: object) => (f: typeof good) => ({ ...f, matmul: [{ ...f.matmul[0], ...patch }] });
    expect(damaged(entry({ choice: { variant: "fastest" } }))).toThrow(
      /kernels\.json, matmul entry 0: choice\.variant is "fastest"/,
    );
    expect(
      damaged(entry({ choice: { variant: "blocked", blockedTile: { rows: 32, cols: 64, depth: 8 } } })),
    ).toThrow(/64 or 128 rows/);
    expect(damaged(entry({ choice: { variant: "subgroup-matrix-direct", matrixTile: 32 } }))).toThrow(
      /choice\.matrixTile is 32, not one of 128, 64/,
    );
    expect(
      damaged(
        entry({ choice: { variant: "subgroup-matrix-direct", matrixTile: 64, directPrefetch: "yes" } }),
      ),
    ).toThrow(/choice\.directPrefetch must be true or false/);
    expect(
      damaged(entry({ choice: { variant: "subgroup-matrix-pipelined", matrixTile: 64, wideStores: 1 } })),
    ).toThrow(/choice\.wideStores must be true or false/);
    expect(
      damaged(
        entry({ choice: { variant: "subgroup-matrix-pipelined", matrixTile: 64, rotatedStores: "on" } }),
      ),
    ).toThrow(/choice\.rotatedStores must be true or false/);
    expect(
      damaged(
        entry({
          choice: {
            variant: "subgroup-matrix-pipelined",
            matrixTile: 64,
            wideStores: true,
            rotatedStores: true,
          },
        }),
      ),
    ).toThrow(/sets both wideStores and rotatedStores/);
    expect(damaged(entry({ key: "f32 NN 1x64x64x64" }))).toThrow(
      /does not match its shape \(f32 NT 1x64x64x64\)/,
    );
    expect(damaged(entry({ shape: { ...s, m: 0 } }))).toThrow(/shape\.m is not a positive integer/);
    expect(damaged(entry({ shape: { ...s, dtype: "bf16" } }))).toThrow(/shape\.dtype is "bf16"/);
    expect(damaged(entry({ candidates: [{ kernel: "tiled" }] }))).toThrow(/not \{kernel, ms\}/);
    expect(damaged(entry({ rejected: {} }))).toThrow(/rejected is not an array/);
    expect(damaged(entry({ rejected: [{ kernel: "tiled" }] }))).toThrow(/not \{kernel, reason\}/);
    expect(damaged(entry({}))).not.toThrow(KernelTuningFileError);
  });
});

describe("choosing a winner", () => {
  it("keeps the fixed rule's choice on a near tie, and takes a clearly faster one", () => {
    const timed = (fixedMs: number) =>
      [
        { candidate: "blocked", ms: 1.0 },
        { candidate: "tiled", ms: fixedMs },
      ].sort((a, b) => a.ms - b.ms);
    const isFixed = (c: string) => c === "tiled";
    expect(chooseWinner(timed(1.04), isFixed)).toBe("tiled");
    expect(chooseWinner(timed(1.2), isFixed)).toBe("blocked");
    expect(chooseWinner(timed(0.9), isFixed)).toBe("tiled");
    expect(chooseWinner([{ candidate: "blocked", ms: 1 }], isFixed)).toBe("blocked");
    expect(chooseWinner([], isFixed)).toBeUndefined();
  });
});

describe("timeCandidates", () => {
  /** A candidate whose run takes `ms` of wall clock (timed with clock "wall": a GPU's timestamps would not see it). */
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {}
  };

  it("times a candidate far behind after the first round no more, and keeps its first round's time", async () => {
    const ctx = await testContext();
    const calls = { fast: 0, slow: 0 };
    const slowMs = 60; // far more than OUT_OF_RACE times an empty run's sync
    const { timed } = await timeCandidates(
      ctx,
      ["fast", "slow"] as const,
      (c) => {
        calls[c]++;
        if (c === "slow") busy(slowMs);
      },
      { repeats: 3, rounds: 3, clock: "wall" },
    );
    expect(OUT_OF_RACE).toBeGreaterThan(1);
    // One run to see that it works, then 3 rounds of 3 runs; the slow one leaves after round 1.
    expect(calls).toEqual({ fast: 10, slow: 4 });
    expect(timed.map((t) => t.candidate)).toEqual(["fast", "slow"]);
    expect(timed[1]!.ms).toBeGreaterThanOrEqual(slowMs);
  });

  it("times long runs once per round after the first", async () => {
    const ctx = await testContext();
    const calls = { a: 0, b: 0 };
    const { timed } = await timeCandidates(
      ctx,
      ["a", "b"] as const,
      (c) => {
        calls[c]++;
        // b is much slower, so the order holds even when another process takes the CPU for a while.
        busy(LONG_RUN_MS + (c === "a" ? 5 : 45));
      },
      { repeats: 3, rounds: 3, clock: "wall" },
    );
    expect(calls).toEqual({ a: 6, b: 6 });
    expect(timed.map((t) => t.candidate)).toEqual(["a", "b"]);
  });
});

describe("tuneMatmuls", () => {
  it("measures the candidates of every group matmul saw, and keeps the fastest", async () => {
    const ctx = await testContext();
    const table = enableMatmulTuning(ctx);
    const s = shape(48, 40, 32);
    const [a, b, out] = [
      ctx.pool.acquire(48 * 32 * 4),
      ctx.pool.acquire(40 * 32 * 4),
      ctx.pool.acquire(48 * 40 * 4),
    ];
    matmul(ctx, { a, b, out, batch: 1, m: 48, n: 40, k: 32, transB: true });
    for (const buffer of [a, b, out]) ctx.pool.release(buffer);
    expect(table.pendingShapes()).toEqual([s]);

    const seen: string[] = [];
    const tuned = await tuneMatmuls(ctx, undefined, {
      repeats: 2,
      rounds: 3,
      candidates: () => [{ variant: "buffer" }, { variant: "tiled" }],
      onProblem: (done, total, key) => seen.push(`${done}/${total} ${key}`),
    });
    expect(seen).toEqual(["0/1 f32 NT 1x64x64x32", "1/1 "]);
    expect(tuned).toHaveLength(1);
    const entry = tuned[0]!;
    expect(entry.candidates.map((c) => c.kernel).sort()).toEqual(["buffer", "tiled"]);
    for (const c of entry.candidates) expect(c.ms).toBeGreaterThan(0);
    // Fastest first; the winner is the fastest, or the fixed rule's kernel within the margin of it.
    expect(entry.candidates[0]!.ms).toBeLessThanOrEqual(entry.candidates[1]!.ms);
    const fixed = entry.candidates.find((c) => c.kernel === fixedRuleVariant(ctx, s))!;
    const keepsFixed = fixed.ms <= entry.candidates[0]!.ms * (1 + REPLACE_MARGIN);
    expect(entry.choice.variant).toBe(keepsFixed ? fixed.kernel : entry.candidates[0]!.kernel);
    expect(table.pendingShapes()).toEqual([]);
    expect(matmulVariant(ctx, { a, b, out, batch: 1, m: 48, n: 40, k: 32, transB: true })).toBe(
      entry.choice.variant,
    );
    expect(matmulChoices(ctx)).toBe(table);
  });

  it("offers every variant that can run the problem on this adapter", async () => {
    const ctx = await testContext();
    const decode = matmulCandidates(ctx, shape(4, 256, 128)).map((c) => c.variant);
    expect(decode).toContain("matvec");
    expect(matmulCandidates(ctx, shape(4, 256, 128, { transB: false })).map((c) => c.variant)).not.toContain(
      "matvec",
    );
    const training = matmulCandidates(ctx, shape(512, 512, 512));
    if (ctx.info.adapter.isSoftware) {
      expect(training.map((c) => c.variant)).not.toContain("blocked");
    } else {
      const tiles = training.filter((c) => c.variant === "blocked");
      expect(tiles.length).toBeGreaterThan(1);
    }
  });

  it("the fixed rule on a GPU: measured tiles for large products, pipelined tensor-core tiles where their loads fit", () => {
    // The parts of a context the rule reads, as an H200 reports them.
    const gpu = {
      info: {
        adapter: { isSoftware: false },
        subgroupSizes: { min: 32, max: 32 },
        features: {
          shaderF16: true,
          subgroupMatrixConfigs: [{ componentType: "f16", resultType: "f32", M: 16, N: 16, K: 16 }],
        },
      },
      device: { limits: { maxComputeInvocationsPerWorkgroup: 1024, maxComputeWorkgroupStorageSize: 49152 } },
    } as unknown as GpuContext;
    const f16 = (m: number, n: number, k: number) => ({ m, n, k, dtype: "f16" as const });
    expect(fixedRuleChoice(gpu, f16(4096, 4096, 4096))).toEqual({
      variant: "subgroup-matrix-pipelined",
      matrixTile: 128,
    });
    expect(fixedRuleChoice(gpu, { ...f16(512, 4864, 896), transB: true })).toEqual({
      variant: "subgroup-matrix-pipelined",
      matrixTile: 128,
    });
    // Rows of 900 halves do not start on multiples of 8: fragments straight from the buffers where whole
    // fragments tile the problem, else the staged kernel.
    expect(fixedRuleChoice(gpu, f16(512, 4864, 900))).toEqual({ variant: "subgroup-matrix" });
    expect(fixedRuleChoice(gpu, f16(1024, 900, 1024))).toEqual({ variant: "subgroup-matrix" });
    expect(fixedRuleChoice(gpu, { ...f16(1024, 1024, 1008), transB: true })).toEqual({
      variant: "subgroup-matrix-pipelined",
      matrixTile: 128,
    });
    // Without room for two stages of a k-step, the direct kernel.
    const small = {
      ...gpu,
      device: { limits: { ...gpu.device.limits, maxComputeWorkgroupStorageSize: 16384 } },
    };
    expect(fixedRuleChoice(small as unknown as GpuContext, f16(4096, 4096, 4096))).toEqual({
      variant: "subgroup-matrix-direct",
      matrixTile: 128,
    });
    // f32: the large products on a measured "blocked" tile, the small and narrow ones on "tiled".
    expect(fixedRuleChoice(gpu, { m: 4096, n: 4096, k: 4096 })).toEqual({
      variant: "blocked",
      blockedTile: { rows: 128, cols: 64, depth: 16 },
    });
    expect(fixedRuleChoice(gpu, { m: 4096, n: 128, k: 384 })).toEqual({ variant: "tiled" });
    expect(fixedRuleChoice(gpu, { m: 512, n: 896, k: 896, transB: true })).toEqual({ variant: "tiled" });
    expect(fixedRuleChoice(gpu, { ...f16(8, 4864, 896), transB: true })).toEqual({ variant: "matvec" });
  });

  it("leaves out a candidate the adapter cannot run", async () => {
    const ctx = await testContext();
    // "subgroup-matrix" refuses f32 operands (and adapters without matrix units): it is dropped, not fatal.
    const { timed, rejected } = await timeMatmulCandidates(ctx, shape(32, 32, 32), [
      { variant: "buffer" },
      { variant: "subgroup-matrix" },
    ]);
    expect(timed.map((t) => t.kernel)).toEqual(["buffer"]);
    expect(rejected).toEqual([{ kernel: "subgroup-matrix", reason: expect.stringMatching(/f16/) }]);
  });

  it("checks every candidate's product against the reference kernel and finds them right", async () => {
    const ctx = await testContext();
    for (const s of [
      shape(70, 130, 48),
      shape(4, 96, 200),
      shape(33, 17, 65, { transA: true, transB: false }),
    ]) {
      const candidates = matmulCandidates(ctx, s);
      const { timed, rejected } = await timeMatmulCandidates(ctx, s, candidates, { repeats: 1, rounds: 1 });
      expect(rejected).toEqual([]);
      expect(timed).toHaveLength(candidates.length);
    }
  });
});

describe("tuning f16 products on tensor cores", () => {
  // Where the adapter has no subgroup matrices, a context emulating them runs the same kernels (slowly:
  // the times mean nothing there, the checks of the products do).
  it("offers the tensor-core kernels, and checks each one's product against the reference", async () => {
    const real = (await testContext()).info.features.subgroupMatrixConfigs.length > 0;
    const ctx = real
      ? await testContext()
      : await GpuContext.create({
          emulateSubgroupMatrices: [{ componentType: "f16", resultType: "f32", M: 16, N: 16, K: 16 }],
        });
    try {
      const s = shape(64, 48, 32, { dtype: "f16" });
      const offered = matmulCandidates(ctx, s).map(choiceName);
      expect(offered).toEqual(
        expect.arrayContaining([
          "subgroup-matrix",
          "subgroup-matrix-direct 128x128",
          "subgroup-matrix-direct 128x128 prefetch",
          "subgroup-matrix-direct 64x64",
          "subgroup-matrix-direct 64x64 prefetch",
          "subgroup-matrix-pipelined 128x128",
          "subgroup-matrix-pipelined 64x64",
          "subgroup-matrix-pipelined 128x128 rotated-stores",
          "subgroup-matrix-pipelined 64x64 rotated-stores",
        ]),
      );
      // Wide stores where subgroup-matrix loads take WGSL buffer views.
      expect(offered.includes("subgroup-matrix-pipelined 64x64 wide-stores")).toBe(
        ctx.info.features.subgroupMatrixViews,
      );
      // Emulated, a 128 x 128 tile takes lavapipe 8-12 s to compile: the 64 x 64 ones check the same code.
      const candidates = matmulCandidates(ctx, s).filter(
        (c) => c.variant.startsWith("subgroup-matrix") && (real || c.matrixTile !== 128),
      );
      const { timed, rejected } = await timeMatmulCandidates(ctx, s, candidates, { repeats: 1, rounds: 1 });
      expect(rejected).toEqual([]);
      expect(timed.map((t) => t.kernel).sort()).toEqual(candidates.map(choiceName).sort());
    } finally {
      if (!real) ctx.destroy();
    }
  });
});
