import { describe, expect, it } from "vitest";
import { groupTokenPositions } from "../src/core/token-groups.js";
import type { GpuContext } from "../src/gpu/context.js";
import { swiglu, swigluBackward } from "../src/kernels/activation.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import type { FloatStorage } from "../src/kernels/elementwise.js";
import { embeddingBackward } from "../src/kernels/embedding.js";
import {
  crossEntropy,
  crossEntropyBackward,
  entropy,
  entropyBackward,
  tokenLogProbs,
  tokenLogProbsBackward,
} from "../src/kernels/logprobs.js";
import { reduce } from "../src/kernels/reduce.js";
import { rmsNorm, rmsNormBackward } from "../src/kernels/rmsnorm.js";
import { swigluBackwardRef, swigluRef } from "../src/reference/activation.js";
import { embeddingBackwardRef } from "../src/reference/embedding.js";
import {
  crossEntropyBackwardRef,
  crossEntropyRef,
  entropyBackwardRef,
  entropyRef,
  tokenLogProbsBackwardRef,
  tokenLogProbsRef,
} from "../src/reference/logprobs.js";
import { reduceRef } from "../src/reference/reduce.js";
import { rmsNormBackwardRef, rmsNormRef } from "../src/reference/rmsnorm.js";
import { expectClose, halves, randomArray, readAs, testContext, uploadAs } from "./helpers.js";

/**
 * The row kernels on f16 buffers: RMSNorm (f16 activations with an f16 or f32 weight), SwiGLU, the
 * reductions, the log-prob family (f16 logits, f32 results, f16 dLogits) and the embedding's table
 * gradient read
 * halves, compute in f32 and round once on store. Each is compared with the f64 reference run on the
 * same halves, its result rounded to halves: they may differ by the one rounding (2^-11 relative) where
 * the f32 and f64 results fall on either side of a half's midpoint.
 */
const ONE_ROUNDING = { atol: 1e-4, rtol: 2 ** -10 };
const EPS = 1e-6;

async function withF16(run: (ctx: GpuContext) => Promise<void>): Promise<void> {
  const ctx = await testContext();
  if (!ctx.info.features.shaderF16) return; // f16 tensors do not exist without it (f16.test.ts)
  await run(ctx);
}

function normInputs(rows: number, dim: number, seed: number) {
  const x = halves(randomArray(rows * dim, seed, 3));
  const weight = halves(randomArray(dim, seed + 1).map((v) => 1 + v / 2));
  const dOut = halves(randomArray(rows * dim, seed + 2));
  return { x, weight, dOut };
}

async function normOnGpu(
  ctx: GpuContext,
  { x, weight, dOut }: ReturnType<typeof normInputs>,
  rows: number,
  dim: number,
  weightDtype: FloatStorage,
  initialWeightGrad?: Float32Array,
) {
  const buffers = [uploadAs(ctx, x, "f16"), uploadAs(ctx, weight, weightDtype), uploadAs(ctx, dOut, "f16")];
  const [xBuffer, weightBuffer, dOutBuffer] = buffers;
  const out = ctx.pool.acquire(rows * dim * 2 + 4);
  const rstd = ctx.pool.acquire(rows * 4);
  const dX = ctx.pool.acquire(rows * dim * 2 + 4);
  const dWeight = uploadAs(ctx, initialWeightGrad ?? new Float32Array(dim).fill(Number.NaN), weightDtype);
  const storage = { dtype: "f16", weightDtype } as const;
  rmsNorm(ctx, { x: xBuffer!, weight: weightBuffer!, out, rstd, rows, dim, eps: EPS, ...storage });
  rmsNormBackward(ctx, {
    x: xBuffer!,
    weight: weightBuffer!,
    rstd,
    dOut: dOutBuffer!,
    dX,
    dWeight,
    rows,
    dim,
    accumulateWeightGrad: initialWeightGrad !== undefined,
    ...storage,
  });
  const result = {
    y: await readAs(ctx, out, rows * dim, "f16"),
    rstd: await readAs(ctx, rstd, rows, "f32"),
    dX: await readAs(ctx, dX, rows * dim, "f16"),
    dWeight: await readAs(ctx, dWeight, dim, weightDtype),
  };
  for (const buffer of [...buffers, out, rstd, dX, dWeight]) ctx.pool.release(buffer);
  return result;
}

function expectNormMatches(
  gpu: Awaited<ReturnType<typeof normOnGpu>>,
  inputs: ReturnType<typeof normInputs>,
  rows: number,
  dim: number,
  weightDtype: FloatStorage,
  initialWeightGrad?: Float32Array,
) {
  const f64 = (a: Float32Array) => Float64Array.from(a);
  const reference = rmsNormRef({ x: f64(inputs.x), weight: inputs.weight, rows, dim, eps: EPS });
  const grads = rmsNormBackwardRef({
    x: f64(inputs.x),
    weight: inputs.weight,
    rstd: reference.rstd,
    dOut: inputs.dOut,
    dWeight: initialWeightGrad,
    rows,
    dim,
  });
  expectClose(gpu.rstd, reference.rstd, 0, 1e-5);
  expectClose(gpu.y, halves(reference.y), ONE_ROUNDING.atol, ONE_ROUNDING.rtol);
  expectClose(gpu.dX, halves(grads.dX), ONE_ROUNDING.atol, ONE_ROUNDING.rtol);
  const dWeight = weightDtype === "f16" ? halves(grads.dWeight) : Float32Array.from(grads.dWeight);
  // dWeight sums rows·(f32 rounding) before its one store.
  expectClose(gpu.dWeight, dWeight, 1e-3, weightDtype === "f16" ? ONE_ROUNDING.rtol : 1e-5);
}

describe("RMSNorm on f16 activations (sums in f32, one rounding on store)", () => {
  const shapes = [
    [1, 7], // scalar rows, one chunk
    [3, 64],
    [40, 64], // two chunks of the weight-gradient sum
    [5, 896], // Qwen2.5-0.5B's hidden size
    [70, 36],
  ] as const;
  for (const weightDtype of ["f16", "f32"] as const) {
    it(`forward, dX and dWeight match the reference, ${weightDtype} weight`, async () => {
      await withF16(async (ctx) => {
        for (const [rows, dim] of shapes) {
          const inputs = normInputs(rows, dim, rows + dim);
          const gpu = await normOnGpu(ctx, inputs, rows, dim, weightDtype);
          expectNormMatches(gpu, inputs, rows, dim, weightDtype);
        }
      });
    });
  }

  it("adds to an f16 dWeight (gradient accumulation), rounding the sum once", async () => {
    await withF16(async (ctx) => {
      for (const [rows, dim] of [
        [4, 16],
        [65, 12],
      ] as const) {
        const inputs = normInputs(rows, dim, 9 * rows);
        const initial = halves(randomArray(dim, 5, 4));
        const gpu = await normOnGpu(ctx, inputs, rows, dim, "f16", initial);
        expectNormMatches(gpu, inputs, rows, dim, "f16", initial);
      }
    });
  });

  it("runs matrices larger than one binding in windows of rows", async () => {
    await withF16(async (ctx) => {
      for (const [rows, dim] of [
        [150, 40],
        [150, 10],
      ] as const) {
        const inputs = normInputs(rows, dim, 77);
        // Alignment slack plus 70 rows: the forward's 70-row windows start unaligned, the backward's
        // batches are 64 rows (whole chunks of the weight-gradient sum).
        limitBindingsForTesting(256 + 70 * dim * 2);
        try {
          const gpu = await normOnGpu(ctx, inputs, rows, dim, "f16");
          expectNormMatches(gpu, inputs, rows, dim, "f16");
        } finally {
          limitBindingsForTesting(undefined);
        }
      }
    });
  });
});

describe("SwiGLU on f16 buffers", () => {
  async function onGpu(ctx: GpuContext, gate: Float32Array, up: Float32Array, dOut: Float32Array) {
    const n = gate.length;
    const inputs = [gate, up, dOut].map((values) => uploadAs(ctx, values, "f16"));
    const [out, dGate, dUp] = [0, 1, 2].map(() => ctx.pool.acquire(n * 2 + 4));
    swiglu(ctx, { gate: inputs[0]!, up: inputs[1]!, out: out!, n, dtype: "f16" });
    swigluBackward(ctx, {
      gate: inputs[0]!,
      up: inputs[1]!,
      dOut: inputs[2]!,
      dGate: dGate!,
      dUp: dUp!,
      n,
      dtype: "f16",
    });
    const result = await Promise.all([out!, dGate!, dUp!].map((b) => readAs(ctx, b, n, "f16")));
    for (const buffer of [...inputs, out!, dGate!, dUp!]) ctx.pool.release(buffer);
    return result;
  }

  const expectMatches = (gpu: Float32Array[], gate: Float32Array, up: Float32Array, dOut: Float32Array) => {
    const n = gate.length;
    const [out, dGate, dUp] = gpu;
    const f64 = Float64Array.from(gate);
    const grads = swigluBackwardRef({ gate: f64, up, dOut, n });
    expectClose(out!, halves(swigluRef({ gate: f64, up, n })), ONE_ROUNDING.atol, ONE_ROUNDING.rtol);
    expectClose(dGate!, halves(grads.dGate), ONE_ROUNDING.atol, ONE_ROUNDING.rtol);
    expectClose(dUp!, halves(grads.dUp), ONE_ROUNDING.atol, ONE_ROUNDING.rtol);
  };

  it("forward and backward match the reference (vec4 and scalar layouts, saturated gates)", async () => {
    await withF16(async (ctx) => {
      for (const n of [1024, 1027]) {
        const gate = halves(randomArray(n, n, 6).map((v, i) => (i % 97 === 0 ? v * 1000 : v)));
        const up = halves(randomArray(n, n + 1, 2));
        const dOut = halves(randomArray(n, n + 2));
        const gpu = await onGpu(ctx, gate, up, dOut);
        expectMatches(gpu, gate, up, dOut);
        expect(gpu.every((values) => values.every(Number.isFinite))).toBe(true);
      }
    });
  });

  it("runs arrays larger than one binding in windows", async () => {
    await withF16(async (ctx) => {
      limitBindingsForTesting(256 + 600); // 300 halves a batch: windows start unaligned
      try {
        const n = 1000;
        const [gate, up, dOut] = [1, 2, 3].map((seed) => halves(randomArray(n, seed, 3)));
        expectMatches(await onGpu(ctx, gate!, up!, dOut!), gate!, up!, dOut!);
      } finally {
        limitBindingsForTesting(undefined);
      }
    });
  });
});

describe("reductions of f16 tensors (f32 sums, the last pass rounds)", () => {
  // [outer, size, inner]: one workgroup per row; rows split into chunks (a second pass over f32
  // partials); columns; columns with `size` split into chunks.
  const shapes = [
    [6, 200, 1],
    [2, 40_000, 1],
    [3, 50, 12],
    [1, 3_000, 4],
  ] as const;

  it("sum, mean and max into f16 and into f32 match the reference on the same halves", async () => {
    await withF16(async (ctx) => {
      for (const [outer, size, inner] of shapes) {
        const x = halves(randomArray(outer * size * inner, size + inner, 2));
        const input = uploadAs(ctx, x, "f16");
        for (const op of ["sum", "mean", "max"] as const) {
          for (const outDtype of ["f16", "f32"] as const) {
            const out = ctx.pool.acquire(outer * inner * 4 + 4);
            reduce(ctx, { op, x: input, out, outer, size, inner, dtype: "f16", outDtype });
            const expected = reduceRef({ op, x, out: new Float32Array(outer * inner), outer, size, inner });
            const got = await readAs(ctx, out, outer * inner, outDtype);
            const label = `${op} [${outer}, ${size}, ${inner}] -> ${outDtype}`;
            if (outDtype === "f16") expectClose(got, halves(expected), 1e-3, ONE_ROUNDING.rtol);
            else expectClose(got, expected, 1e-3, 1e-5);
            expect(got.every(Number.isFinite), label).toBe(true);
            ctx.pool.release(out);
          }
        }
        ctx.pool.release(input);
      }
    });
  });
});

describe("log-probs, entropy and cross-entropy of f16 logits (f32 results, f16 logit gradients)", () => {
  async function onGpu(ctx: GpuContext, logits: Float32Array, ids: Int32Array, rows: number, vocab: number) {
    const temperature = 0.7;
    const dOut = randomArray(rows, vocab + 3);
    const logitsBuffer = uploadAs(ctx, logits, "f16");
    const idsBuffer = ctx.upload(ids);
    const dOutBuffer = ctx.upload(dOut);
    const [logProbs, entropies, losses, lse] = [0, 1, 2, 3].map(() => ctx.pool.acquire(rows * 4));
    const [dLogProbs, dEntropyAdded, dLoss] = [0, 1, 2].map(() => ctx.pool.acquire(rows * vocab * 2 + 4));
    const shape = { rows, vocab, dtype: "f16" } as const;
    tokenLogProbs(ctx, {
      logits: logitsBuffer,
      ids: idsBuffer,
      out: logProbs!,
      lse: lse!,
      temperature,
      ...shape,
    });
    const base = { logits: logitsBuffer, lse: lse!, dOut: dOutBuffer, temperature, ...shape };
    tokenLogProbsBackward(ctx, { ...base, ids: idsBuffer, dLogits: dLogProbs! });
    tokenLogProbsBackward(ctx, { ...base, ids: idsBuffer, dLogits: dEntropyAdded! });
    entropy(ctx, { logits: logitsBuffer, out: entropies!, lse: lse!, temperature, ...shape });
    // The entropy's gradient added to the log-probs' (as the two terms of a PPO loss share the logits).
    entropyBackward(ctx, { ...base, entropy: entropies!, dLogits: dEntropyAdded!, accumulate: true });
    crossEntropy(ctx, { logits: logitsBuffer, targets: idsBuffer, out: losses!, lse: lse!, ...shape });
    crossEntropyBackward(ctx, { ...base, targets: idsBuffer, dLogits: dLoss! });
    const read = (buffer: GPUBuffer, n: number, storage: FloatStorage) => readAs(ctx, buffer, n, storage);
    const result = {
      logProbs: await read(logProbs!, rows, "f32"),
      entropies: await read(entropies!, rows, "f32"),
      losses: await read(losses!, rows, "f32"),
      dLogProbs: await read(dLogProbs!, rows * vocab, "f16"),
      dBoth: await read(dEntropyAdded!, rows * vocab, "f16"),
      dLoss: await read(dLoss!, rows * vocab, "f16"),
    };
    const buffers = [logitsBuffer, idsBuffer, dOutBuffer, logProbs, entropies, losses, lse];
    for (const buffer of [...buffers, dLogProbs, dEntropyAdded, dLoss]) ctx.pool.release(buffer!);
    // The reference on the same halves, in f64, each gradient rounded as it is stored.
    const f64 = Float64Array.from(logits);
    const args = { logits: f64, ids, rows, vocab, temperature };
    const { out: refLogProbs, lse: refLse } = tokenLogProbsRef(args);
    const dLogProbsRef = tokenLogProbsBackwardRef({ ...args, lse: refLse, dOut });
    const refEntropy = entropyRef(args).out;
    // Accumulating reads the stored (rounded) first gradient, adds in f32 and rounds again.
    const dBothRef = entropyBackwardRef({ ...args, lse: refLse, dOut, dLogits: halves(dLogProbsRef) });
    const plain = { logits: f64, targets: ids, rows, vocab };
    const refLoss = crossEntropyRef(plain);
    const dLossRef = crossEntropyBackwardRef({ ...plain, lse: refLoss.lse, dOut });
    expectClose(result.logProbs, refLogProbs, 1e-4, 1e-5);
    expectClose(result.entropies, refEntropy, 1e-4, 1e-5);
    expectClose(result.losses, refLoss.out, 1e-4, 1e-5);
    // Gradients' entries are small (probabilities): one rounding is 2^-11 of each, or a subnormal step.
    const GRAD = { atol: 1e-6, rtol: 2 ** -10 };
    expectClose(result.dLogProbs, halves(dLogProbsRef), GRAD.atol, GRAD.rtol);
    expectClose(result.dBoth, halves(dBothRef), GRAD.atol, GRAD.rtol);
    expectClose(result.dLoss, halves(dLossRef), GRAD.atol, GRAD.rtol);
  }

  const logitsOf = (rows: number, vocab: number, seed: number) => halves(randomArray(rows * vocab, seed, 6));
  const idsOf = (rows: number, vocab: number) =>
    Int32Array.from({ length: rows }, (_, r) => (r === 1 ? -100 : (r * 7919) % vocab));

  it("match the reference on the same halves (vec4 and scalar rows, split rows, ignored ids)", async () => {
    await withF16(async (ctx) => {
      for (const [rows, vocab] of [
        [5, 64],
        [3, 1001],
        [2, 9000],
      ] as const) {
        await onGpu(ctx, logitsOf(rows, vocab, vocab), idsOf(rows, vocab), rows, vocab);
      }
    });
  });

  it("run logits larger than one binding in windows of rows", async () => {
    await withF16(async (ctx) => {
      const [rows, vocab] = [9, 300];
      limitBindingsForTesting(256 + 2 * vocab * 2 + 40); // two rows a batch, windows start unaligned
      try {
        await onGpu(ctx, logitsOf(rows, vocab, 11), idsOf(rows, vocab), rows, vocab);
      } finally {
        limitBindingsForTesting(undefined);
      }
    });
  });
});

describe("the embedding's table gradient on f16 buffers (rows summed in f32, rounded once)", () => {
  async function onGpu(ctx: GpuContext, dim: number, vocab: number, count: number, seed: number) {
    const ids = Int32Array.from({ length: count }, (_, i) => (i % 5 === 4 ? -1 : (i * 7 + seed) % vocab));
    const dOut = halves(randomArray(count * dim, seed, 2));
    // A table gradient already holding halves: the kernel adds to it (accumulation across uses).
    const dTable = halves(randomArray(vocab * dim, seed + 1, 2));
    const grouping = groupTokenPositions(ids, vocab);
    const numUnique = grouping.uniqueIds.length;
    const expected = halves(embeddingBackwardRef({ dOut, dTable, ...grouping, numUnique, dim }));
    const [dOutBuffer, dTableBuffer] = [uploadAs(ctx, dOut, "f16"), uploadAs(ctx, dTable, "f16")];
    const grouped = [grouping.uniqueIds, grouping.offsets, grouping.positions].map((a) => ctx.upload(a));
    const [uniqueIds, offsets, positions] = grouped;
    embeddingBackward(ctx, {
      dOut: dOutBuffer,
      dTable: dTableBuffer,
      uniqueIds: uniqueIds!,
      offsets: offsets!,
      positions: positions!,
      numUnique,
      dim,
      vocab,
      dtype: "f16",
    });
    expectClose(
      await readAs(ctx, dTableBuffer, vocab * dim, "f16"),
      expected,
      ONE_ROUNDING.atol,
      ONE_ROUNDING.rtol,
    );
    for (const b of [dOutBuffer, dTableBuffer, ...grouped]) ctx.pool.release(b);
  }

  it("matches the reference on the same halves (vec4 and scalar rows, ids out of range, repeats)", async () => {
    await withF16(async (ctx) => {
      for (const dim of [64, 7]) await onGpu(ctx, dim, 11, 37, dim);
    });
  });

  it("runs tables larger than one binding in slices of rows", async () => {
    await withF16(async (ctx) => {
      const [dim, vocab, count] = [64, 13, 21];
      limitBindingsForTesting(256 + count * dim * 2); // dOut whole; the table in slices of rows
      try {
        await onGpu(ctx, dim, vocab, count, 5);
      } finally {
        limitBindingsForTesting(undefined);
      }
    });
  });
});
