import { describe, expect, it } from "vitest";
import { roundToHalf } from "../src/core/half-float.js";
import { GpuContext } from "../src/gpu/context.js";
import { affine, binary, unary } from "../src/kernels/elementwise.js";
import { cast, fill, stridedCopy } from "../src/kernels/layout.js";
import {
  limitMatmulForTesting,
  type MatmulVariant,
  matmul,
  subgroupMatrixShape,
  textureVariantAvailable,
} from "../src/kernels/matmul.js";
import {
  BLOCKED_TILES,
  type BlockedTile,
  blockedTileBytes,
  MATRIX_TILES,
  type MatrixTile,
  pickSubgroupMatrixShape,
} from "../src/kernels/matmul-gpu.js";
import { affineRef, binaryRef, unaryRef } from "../src/reference/elementwise.js";
import {
  fromHalfBits,
  packF16Ref,
  stridedCopyRef,
  toHalfBits,
  unpackF16Ref,
} from "../src/reference/layout.js";
import { matmulRef } from "../src/reference/matmul.js";
import { expectClose, halves, randomArray, testContext } from "./helpers.js";

function uploadHalves(ctx: GpuContext, values: Float32Array): GPUBuffer {
  return ctx.upload(
    packF16Ref({ x: values, out: new Uint32Array(Math.ceil(values.length / 2)), n: values.length }),
  );
}

async function readHalves(ctx: GpuContext, buffer: GPUBuffer, n: number): Promise<Float32Array> {
  const words = new Uint32Array(await ctx.read(buffer, Math.ceil(n / 2) * 4));
  return unpackF16Ref({ x: words, out: new Float32Array(n), n });
}

/** Rounding of the one f16 store (rel 2^-11) plus f32 accumulation of f16 products: well inside 1e-2. */
const F16 = { atol: 2e-3, rtol: 1e-2 };

async function withF16(run: (ctx: GpuContext) => Promise<void>, context = testContext): Promise<void> {
  const ctx = await context();
  if (!ctx.info.features.shaderF16) return; // covered by the f16 tensor tests' missing-feature case
  await run(ctx);
}

// Tensor-core matmul runs on the adapter's subgroup matrices where it has them (a GPU test run), and
// elsewhere on a second context that emulates NVIDIA's 16 x 16 x 16 shape with subgroup operations: the
// same WGSL, so its tiling, edges, transposes and epilogue are checked on every machine.
const realMatrices = subgroupMatrixShape(await testContext()) !== undefined;
let emulated: Promise<GpuContext> | undefined;
const matrixContext = (): Promise<GpuContext> => {
  if (realMatrices) return testContext();
  emulated ??= GpuContext.create({
    emulateSubgroupMatrices: [{ componentType: "f16", resultType: "f32", M: 16, N: 16, K: 16 }],
  });
  return emulated;
};
const hasSubgroupMatrix = subgroupMatrixShape(await matrixContext()) !== undefined;
const hasMatrixViews = (await matrixContext()).info.features.subgroupMatrixViews;

describe("f16 matmul (halves in, f32 accumulation, one rounding on store)", () => {
  const cases = [
    { batch: 1, m: 17, n: 33, k: 65 },
    { batch: 2, m: 40, n: 72, k: 96, transB: true, bBatchStride: 0 },
    { batch: 1, m: 48, n: 128, k: 256, transA: true },
    { batch: 1, m: 64, n: 256, k: 128 }, // rows of 128 and 256 halves: copied into textures, not repacked
    { batch: 2, m: 33, n: 31, k: 29, accumulate: true, alpha: 0.5, transA: true, transB: true },
    { batch: 1, m: 150, n: 260, k: 100, transB: true }, // several 128 x 128 tiles, ragged edges
    { batch: 2, m: 130, n: 140, k: 70, transA: true, accumulate: true, alpha: -2 },
    { batch: 1, m: 70, n: 150, k: 40, transB: true, bias: true }, // a bias row in the epilogue
    { batch: 2, m: 33, n: 31, k: 29, accumulate: true, alpha: 0.5, bias: true },
    { batch: 2, m: 40, n: 72, k: 96, transB: true, bBatchStride: 0, bias: true, addend: true }, // + residual
  ];
  type Case = (typeof cases)[number];

  async function checkHalves(
    c: Case,
    variant: MatmulVariant,
    blockedTile?: BlockedTile,
    matrixTile?: MatrixTile,
    directPrefetch?: boolean,
    stores?: "wide" | "rotated",
  ): Promise<void> {
    const context = variant.startsWith("subgroup-matrix") ? matrixContext : testContext;
    await withF16(async (ctx) => {
      if (variant === "texture" && !textureVariantAvailable(ctx)) return;
      const aLength = c.batch * c.m * c.k;
      const bLength = (c.bBatchStride === 0 ? 1 : c.batch) * c.k * c.n;
      const a = halves(randomArray(aLength, c.m));
      const b = halves(randomArray(bLength, c.n));
      const init = halves(randomArray(c.batch * c.m * c.n, c.k));
      const bias = halves(randomArray(c.n, c.m + c.n));
      const buffers = [uploadHalves(ctx, a), uploadHalves(ctx, b), uploadHalves(ctx, init)] as const;
      const addend = halves(randomArray(init.length, c.k + 1));
      const biasBuffer = "bias" in c ? uploadHalves(ctx, bias) : undefined;
      const addendBuffer = "addend" in c ? uploadHalves(ctx, addend) : undefined;
      const { bias: _, addend: __, ...shape } = { bias: false, addend: false, ...c };
      const args = {
        ...shape,
        a: buffers[0],
        b: buffers[1],
        out: buffers[2],
        variant,
        blockedTile,
        matrixTile,
        directPrefetch,
        wideStores: stores === "wide",
        rotatedStores: stores === "rotated",
        dtype: "f16",
      } as const;
      matmul(ctx, { ...args, bias: biasBuffer, addend: addendBuffer });
      const actual = await readHalves(ctx, buffers[2], init.length);
      const init2 = c.accumulate ? init.slice() : undefined;
      const expected = matmulRef({ ...shape, a, b, accumulateInto: init2 });
      if (biasBuffer) for (let i = 0; i < expected.length; i++) expected[i]! += bias[i % c.n]!;
      if (addendBuffer) for (let i = 0; i < expected.length; i++) expected[i]! += addend[i]!;
      expectClose(actual, expected, F16.atol * Math.sqrt(c.k), F16.rtol);
      // The result really is f16: every value is a half.
      expect(Array.from(actual.subarray(0, 64)).every((v) => fromHalfBits(toHalfBits(v)) === v)).toBe(true);
      for (const buffer of [...buffers, biasBuffer, addendBuffer]) if (buffer) ctx.pool.release(buffer);
    }, context);
  }

  const variants: MatmulVariant[] = [
    "buffer",
    "tiled",
    "texture",
    "blocked",
    "subgroup-matrix",
    "subgroup-matrix-direct",
  ];
  // Emulated, "subgroup-matrix-direct" runs here only the cases it hands to the staged kernel (whole
  // fragments are the next section's, whose compiles are the expensive ones).
  const fragmentsFit = (c: Case) => [c.m, c.n, c.k].every((d) => d % 16 === 0);
  for (const variant of variants) {
    const unavailable = variant.startsWith("subgroup-matrix") && !hasSubgroupMatrix;
    const run =
      variant === "subgroup-matrix-direct" && !realMatrices ? cases.filter((c) => !fragmentsFit(c)) : cases;
    it.skipIf(unavailable).each(run.map((c) => [JSON.stringify(c), c] as const))(`"${variant}" %s`, (_, c) =>
      checkHalves(c, variant),
    );
  }

  // Tuning may choose any of these for an f16 problem: each runs a ragged and a transposed case.
  const fewCases = [cases[4]!, cases[5]!];
  it.each(BLOCKED_TILES.slice(1).map((t) => [`${t.rows}x${t.cols}/${t.depth}`, t] as const))(
    '"blocked" tile %s',
    async (_, tile) => {
      const ctx = await testContext();
      if (blockedTileBytes(tile) > ctx.device.limits.maxComputeWorkgroupStorageSize) return;
      for (const c of fewCases) await checkHalves(c, "blocked", tile);
    },
  );
  // Whole fragments on every axis, so the direct kernel runs them itself (the ragged cases above fall back
  // to the staged one): each tile, transposes, accumulate, partial tiles, a bias and a residual.
  const wholeFragments = [
    { batch: 1, m: 128, n: 256, k: 64 },
    { batch: 2, m: 64, n: 48, k: 96, transA: true, transB: true, accumulate: true, alpha: 0.5 },
    { batch: 1, m: 192, n: 80, k: 160, transB: true, bias: true },
    { batch: 2, m: 48, n: 144, k: 32, transA: true, bBatchStride: 0, addend: true },
  ] as Case[];
  // Emulated, a 128 x 128 kernel takes lavapipe 8-12 s to compile per layout: it runs one layout there (the
  // 64 x 64 tile runs the same index arithmetic on every layout).
  const casesFor = (tile: MatrixTile) =>
    realMatrices || tile === 64 ? wholeFragments : wholeFragments.slice(0, 1);
  for (const matrixTile of MATRIX_TILES) {
    for (const prefetch of [false, true]) {
      it.skipIf(!hasSubgroupMatrix).each(casesFor(matrixTile).map((c) => [JSON.stringify(c), c] as const))(
        `"subgroup-matrix-direct" ${matrixTile}x${matrixTile}${prefetch ? " prefetch" : ""} %s`,
        (_, c) => checkHalves(c, "subgroup-matrix-direct", undefined, matrixTile, prefetch),
      );
    }
  }

  // Operand rows on multiples of 8 halves, so the pipelined kernel stages them in wide loads itself; the
  // edges that are not contiguous in memory are ragged (m = 72, n = 152, k = 40 and 56).
  const wideRows = [
    { batch: 1, m: 128, n: 256, k: 96 },
    { batch: 2, m: 72, n: 48, k: 56, transA: true, transB: true, accumulate: true, alpha: 0.5 },
    { batch: 1, m: 200, n: 152, k: 160, transB: true, bias: true },
    { batch: 2, m: 48, n: 136, k: 40, transA: true, bBatchStride: 0, addend: true },
  ] as Case[];
  // Emulated, lavapipe takes 6-20 s to compile each layout: the 64 x 64 tile (k-steps of 32) runs both
  // operands transposed, the 128 x 128 tile (k-steps of 16 in lavapipe's 32 KiB) neither.
  for (const matrixTile of MATRIX_TILES) {
    const run = realMatrices ? wideRows : [wideRows[matrixTile === 64 ? 1 : 0]!];
    it.skipIf(!hasSubgroupMatrix).each(run.map((c) => [JSON.stringify(c), c] as const))(
      `"subgroup-matrix-pipelined" ${matrixTile}x${matrixTile} %s`,
      (_, c) => checkHalves(c, "subgroup-matrix-pipelined", undefined, matrixTile),
    );
  }
  // Wide stores: the same kernel staging through 16-byte stores into workgroup buffers (WGSL buffer_view).
  // Emulated, the 64 x 64 tile only (the 128 x 128 one took lavapipe 47 s to compile; only constants differ).
  for (const matrixTile of MATRIX_TILES) {
    const run = realMatrices ? wideRows : matrixTile === 64 ? [wideRows[1]!] : [];
    it.skipIf(!hasSubgroupMatrix || !hasMatrixViews).each(run.map((c) => [JSON.stringify(c), c] as const))(
      `"subgroup-matrix-pipelined" ${matrixTile}x${matrixTile} wide-stores %s`,
      (_, c) => checkHalves(c, "subgroup-matrix-pipelined", undefined, matrixTile, false, "wide"),
    );
  }
  // Rotated stores: the same kernel writing each load's halves in a per-lane order (spread over the banks).
  // Emulated, the 64 x 64 tile only, untransposed: A's staged rows hold a k-step and B's a tile's width, so
  // the two operands rotate by different tables.
  for (const matrixTile of MATRIX_TILES) {
    const run = realMatrices ? wideRows : matrixTile === 64 ? [wideRows[0]!] : [];
    it.skipIf(!hasSubgroupMatrix).each(run.map((c) => [JSON.stringify(c), c] as const))(
      `"subgroup-matrix-pipelined" ${matrixTile}x${matrixTile} rotated-stores %s`,
      (_, c) => checkHalves(c, "subgroup-matrix-pipelined", undefined, matrixTile, false, "rotated"),
    );
  }
  it.skipIf(!hasSubgroupMatrix)(
    '"subgroup-matrix-pipelined" in chunks, and rows off multiples of 8 (the staged kernel)',
    async () => {
      // A's 128 x 96 halves over 16 KiB bindings: two chunks of rows, the second's window shifted.
      limitMatmulForTesting({ bindingBytes: 16 * 1024 });
      try {
        await checkHalves(wideRows[0]!, "subgroup-matrix-pipelined", undefined, 128);
      } finally {
        limitMatmulForTesting();
      }
      await checkHalves(cases[5]!, "subgroup-matrix-pipelined", undefined, 64); // k = 100
    },
  );

  it('"matvec" (decoding: x · Wᵀ, blocks of 16 rows)', async () => {
    for (const c of [
      { batch: 1, m: 5, n: 90, k: 150, transB: true },
      { batch: 2, m: 16, n: 70, k: 200, transB: true, bBatchStride: 0, bias: true },
      { batch: 1, m: 37, n: 40, k: 64, transB: true, addend: true },
    ] as Case[])
      await checkHalves(c, "matvec");
  });
});

describe("f16 element-wise kernels (computed in f32, rounded on store)", () => {
  it("binary ops, contiguous, broadcast rows and strided", async () => {
    await withF16(async (ctx) => {
      const shape = [5, 6, 12];
      const n = 5 * 6 * 12;
      const a = halves(randomArray(n, 3));
      const row = halves(randomArray(12, 4));
      const layouts = [
        { b: halves(randomArray(n, 5)), bStrides: [72, 12, 1] },
        { b: row, bStrides: [0, 0, 1] },
        { b: halves(randomArray(5 * 12, 6)), bStrides: [12, 0, 1] }, // [5, 1, 12]: the strided kernel
      ];
      for (const op of ["add", "sub", "mul", "div", "max", "gt"] as const) {
        for (const { b, bStrides } of layouts) {
          const [aBuffer, bBuffer] = [uploadHalves(ctx, a), uploadHalves(ctx, b)];
          const out = ctx.pool.acquire(n * 2);
          const args = { op, shape, aStrides: [72, 12, 1], bStrides };
          binary(ctx, { ...args, a: aBuffer, b: bBuffer, out, dtype: "f16" });
          const expected = new Float32Array(n);
          binaryRef({ ...args, a, b, out: expected });
          expectClose(await readHalves(ctx, out, n), halves(expected), 1e-3, 1e-3);
          for (const buffer of [aBuffer, bBuffer, out]) ctx.pool.release(buffer);
        }
      }
    });
  });

  it("unary ops and affine, with a vec4 body and a scalar tail", async () => {
    await withF16(async (ctx) => {
      const n = 1027;
      const x = halves(randomArray(n, 7, 3));
      const xBuffer = uploadHalves(ctx, x);
      const out = ctx.pool.acquire(n * 2);
      for (const op of ["exp", "tanh", "sigmoid", "silu", "square", "neg"] as const) {
        unary(ctx, { op, x: xBuffer, out, n, dtype: "f16" });
        const expected = new Float32Array(n);
        unaryRef({ op, x, out: expected, n });
        expectClose(await readHalves(ctx, out, n), expected, 1e-3, 1e-2);
      }
      affine(ctx, { x: xBuffer, out, n, scale: 0.75, shift: -0.5, dtype: "f16" });
      const expected = new Float32Array(n);
      affineRef({ x, out: expected, n, scale: 0.75, shift: -0.5 });
      expectClose(await readHalves(ctx, out, n), expected, 1e-3, 1e-2);
      ctx.pool.release(xBuffer);
      ctx.pool.release(out);
    });
  });
});

describe("f16 layout kernels", () => {
  it("casts f32 <-> f16 with round-to-nearest-even, and f16 -> f32 exactly", async () => {
    const ctx = await testContext();
    const values = Float32Array.from([
      0,
      -0,
      1,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      65504,
      65520,
      1e-8,
      -2.5,
      3e-5,
    ]);
    const n = values.length;
    const source = ctx.upload(values);
    const halfBuffer = ctx.pool.acquire(n * 2);
    const back = ctx.pool.acquire(n * 4);
    cast(ctx, { x: source, out: halfBuffer, n, from: "f32", to: "f16" });
    cast(ctx, { x: halfBuffer, out: back, n, from: "f16", to: "f32" });
    const expected = Array.from(values, (v) => fromHalfBits(toHalfBits(v)));
    expect(Array.from(new Float32Array(await ctx.read(back, n * 4)))).toEqual(expected);
    expect(() => cast(ctx, { x: source, out: back, n, from: "i32", to: "f16" })).toThrow(/through f32/);
    for (const buffer of [source, halfBuffer, back]) ctx.pool.release(buffer);
  });

  it("fills and strided-copies halves (odd offsets and counts, transposes, vec4 rows)", async () => {
    await withF16(async (ctx) => {
      const out = ctx.pool.acquire(64);
      fill(ctx, { out, n: 13, value: 0.1, dtype: "f16" });
      expect(Array.from(await readHalves(ctx, out, 13))).toEqual(
        new Array(13).fill(fromHalfBits(toHalfBits(0.1))),
      );
      ctx.pool.release(out);
      const x = halves(randomArray(8 * 12, 9));
      const layouts = [
        { shape: [8, 12], xStrides: [12, 1], xOffset: 0 }, // a plain copy
        { shape: [12, 8], xStrides: [1, 12], xOffset: 0 }, // transpose by 4x4 blocks
        { shape: [6, 12], xStrides: [12, 1], xOffset: 12 }, // rows, as vec4s
        { shape: [3, 5], xStrides: [12, 1], xOffset: 3 }, // odd offset and count
        { shape: [7], xStrides: [1], xOffset: 1 }, // contiguous but not word-aligned: no buffer copy
      ];
      for (const layout of layouts) {
        const n = layout.shape.reduce((p, d) => p * d, 1);
        const xBuffer = uploadHalves(ctx, x);
        const target = ctx.pool.acquire(n * 2);
        stridedCopy(ctx, { ...layout, x: xBuffer, out: target, dtype: "f16" });
        const expected = new Float32Array(n);
        stridedCopyRef({ ...layout, x, out: expected });
        expect(Array.from(await readHalves(ctx, target, n))).toEqual(Array.from(expected));
        ctx.pool.release(xBuffer);
        ctx.pool.release(target);
      }
    });
  });
});

describe("roundToHalf (the CPU backend's f16 emulation)", () => {
  it("equals decoding the nearest half's bit pattern, at edges and on random values", () => {
    const edges = [
      0,
      -0,
      1,
      -1,
      2 ** -24,
      2 ** -25,
      3 * 2 ** -26,
      2 ** -14,
      2 ** -14 - 2 ** -25,
      65504,
      65519.99,
      65520,
      -70000,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      2048 + 1,
      2048 + 3,
      0.1,
      Number.POSITIVE_INFINITY,
      Number.NaN,
    ];
    const random = Array.from(randomArray(4000, 11), (v, i) => v * 2 ** ((i % 48) - 30));
    for (const v of [...edges, ...random, ...Array.from(randomArray(2000, 12, 70000))]) {
      const f = Math.fround(v);
      expect(Object.is(roundToHalf(f), fromHalfBits(toHalfBits(f))), `value ${f}`).toBe(true);
    }
  });
});

describe("subgroup-matrix shape choice", () => {
  // The configurations an H100 offers through Dawn's Vulkan backend (driver 580), as its adapter lists them.
  const h100 = [
    { componentType: "f16", resultType: "f16", M: 16, N: 16, K: 16 },
    { componentType: "f16", resultType: "f16", M: 16, N: 8, K: 16 },
    { componentType: "f16", resultType: "f16", M: 16, N: 8, K: 8 },
    { componentType: "f16", resultType: "f32", M: 16, N: 16, K: 16 },
    { componentType: "f16", resultType: "f32", M: 16, N: 8, K: 16 },
    { componentType: "f16", resultType: "f32", M: 16, N: 8, K: 8 },
    { componentType: "u8", resultType: "u32", M: 16, N: 16, K: 32 },
    { componentType: "i8", resultType: "i32", M: 16, N: 16, K: 32 },
  ];

  it("takes the largest f16 x f16 -> f32 shape that tiles 64 x 32 blocks and 32-deep k-steps", () => {
    expect(pickSubgroupMatrixShape(h100)).toEqual({ m: 16, n: 16, k: 16 });
    expect(pickSubgroupMatrixShape(h100.filter((c) => c.N !== 16))).toEqual({ m: 16, n: 8, k: 16 });
  });

  it("refuses f16 accumulators, integer shapes and shapes that do not tile", () => {
    expect(pickSubgroupMatrixShape(h100.filter((c) => c.resultType !== "f32"))).toBeUndefined();
    expect(
      pickSubgroupMatrixShape([{ componentType: "f16", resultType: "f32", M: 24, N: 8, K: 8 }]),
    ).toBeUndefined();
    expect(pickSubgroupMatrixShape([])).toBeUndefined();
  });
});
