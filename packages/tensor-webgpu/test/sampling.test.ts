import { describe, expect, it } from "vitest";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import type { GpuContext } from "../src/gpu/context.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import { sampleRows as sampleRowsKernel } from "../src/kernels/sampling.js";
import { embedding } from "../src/ops/nn.js";
import { sampleRows, sampleRowsOnDevice } from "../src/ops/sampling.js";
import { sampleRowsRef } from "../src/reference/sampling.js";
import { tensor } from "../src/runtime.js";
import { randomArray, testContext } from "./helpers.js";

const TEMPERATURES = [0, 0.5, 1, 2];
/**
 * Draws closer than this (relative to the row's sum) to a boundary of the CDF may go either way in f32
 * (the GPU's sums and subtractions err by about 1e-6 of the sum).
 */
const BOUNDARY_MARGIN = 1e-5;

function randomUniforms(rows: number, seed: number): Float32Array {
  return Float32Array.from(randomArray(rows, seed), (v) => Math.min((v + 1) / 2, 0.9999999));
}

async function runKernel(
  ctx: GpuContext,
  logits: Float32Array,
  uniforms: Float32Array,
  rows: number,
  vocab: number,
  temperature: number,
): Promise<{ tokens: Int32Array; logProbs: Float32Array }> {
  const logitsBuffer = ctx.upload(logits);
  const uniformsBuffer = ctx.upload(uniforms);
  const tokens = ctx.pool.acquire(rows * 4);
  const logProbs = ctx.pool.acquire(rows * 4);
  sampleRowsKernel(ctx, {
    logits: logitsBuffer,
    uniforms: uniformsBuffer,
    tokens,
    logProbs,
    rows,
    vocab,
    temperature,
  });
  const result = {
    tokens: new Int32Array(await ctx.read(tokens, rows * 4)),
    logProbs: new Float32Array(await ctx.read(logProbs, rows * 4)),
  };
  for (const buffer of [logitsBuffer, uniformsBuffer, tokens, logProbs]) ctx.pool.release(buffer);
  return result;
}

/**
 * How far (relative to the row's sum of weights) the draw's target u * sum lies from the nearest edge of
 * the reference token's interval of the CDF: Infinity when greedy.
 */
function boundaryMargin(row: ArrayLike<number>, u: number, temperature: number): number {
  if (temperature === 0) return Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) max = Math.max(max, row[i]!);
  const weights = Array.from({ length: row.length }, (_, i) => Math.exp((row[i]! - max) / temperature));
  const sum = weights.reduce((a, b) => a + b, 0);
  const target = u * sum;
  let below = 0;
  for (const w of weights) {
    if (w === 0) continue;
    if (below + w > target) return Math.min(target - below, below + w - target) / sum;
    below += w;
  }
  return 0;
}

/** The GPU's tokens equal the reference's away from CDF boundaries, and its logProbs are close to them. */
function expectMatchesReference(
  got: { tokens: Int32Array; logProbs: Float32Array },
  logits: Float32Array,
  uniforms: Float32Array,
  rows: number,
  vocab: number,
  temperature: number,
): { compared: number } {
  const expected = sampleRowsRef({ logits, uniforms, rows, vocab, temperature });
  let compared = 0;
  for (let r = 0; r < rows; r++) {
    const row = logits.subarray(r * vocab, (r + 1) * vocab);
    const token = got.tokens[r]!;
    expect(token, `row ${r}`).toBeGreaterThanOrEqual(0);
    expect(token, `row ${r}`).toBeLessThan(vocab);
    if (boundaryMargin(row, uniforms[r]!, temperature) > BOUNDARY_MARGIN) {
      compared++;
      expect(token, `row ${r} (u = ${uniforms[r]})`).toBe(expected.tokens[r]);
    }
    // The log-probability of whichever token the GPU chose.
    const own = sampleRowsRef({ logits: row, uniforms: [0], rows: 1, vocab, temperature });
    const expectedLogProb = own.logProbs[0]! + (row[token]! - row[own.tokens[0]!]!) / (temperature || 1);
    expect(Math.abs(got.logProbs[r]! - expectedLogProb), `row ${r} logProb`).toBeLessThan(1e-4);
  }
  return { compared };
}

/**
 * Random logits in [-scale, scale]; `spikes` entries per row raised to 4 * scale, so that long rows keep
 * most of their mass in a few wide intervals of the CDF that random draws land well inside.
 */
async function checkRandom(
  rows: number,
  vocab: number,
  temperature: number,
  seed: number,
  { scale = 3, spikes = 0 } = {},
) {
  const ctx = await testContext();
  const logits = randomArray(rows * vocab, seed, scale);
  const positions = randomArray(rows * spikes, seed + 3);
  for (let r = 0; r < rows; r++) {
    for (let s = 0; s < spikes; s++) {
      const i = Math.floor(((positions[r * spikes + s]! + 1) / 2) * vocab);
      logits[r * vocab + i] = 4 * scale;
    }
  }
  const uniforms = randomUniforms(rows, seed + 7);
  const got = await runKernel(ctx, logits, uniforms, rows, vocab, temperature);
  const { compared } = expectMatchesReference(got, logits, uniforms, rows, vocab, temperature);
  // Few random draws fall within the margin of a boundary: the comparison must not be vacuous.
  expect(compared).toBeGreaterThanOrEqual(Math.floor(rows * 0.75));
}

describe("sampleRows kernel", () => {
  for (const vocab of [1, 7, 255, 256, 257, 1000]) {
    for (const temperature of TEMPERATURES) {
      it(`matches the reference for 9 x ${vocab} at temperature ${temperature}`, () =>
        checkRandom(9, vocab, temperature, vocab * 10 + temperature * 4));
    }
  }

  for (const temperature of [0, 1]) {
    it(`handles long rows (2 x 151936) at temperature ${temperature}`, () =>
      checkRandom(2, 151_936, temperature, 151 + temperature, { spikes: 16 }));
  }

  it("samples many rows (300 x 50), each with its own draw", () => checkRandom(300, 50, 0.7, 3));

  it("spreads more than 65535 rows over a 2D grid", () => checkRandom(66_000, 3, 1, 5, { scale: 1 }));

  it("batches rows when the logits exceed one storage binding", async () => {
    const vocab = 1001; // rows start unaligned
    limitBindingsForTesting(256 + 3 * vocab * 4);
    try {
      await checkRandom(17, vocab, 0.8, 11);
      await checkRandom(17, vocab, 0, 12);
    } finally {
      limitBindingsForTesting(undefined);
    }
  });

  it("sweeps the draw over the whole CDF of one row", async () => {
    const ctx = await testContext();
    const vocab = 600; // several entries per lane's chunk
    const rows = 500;
    const row = randomArray(vocab, 21, 2);
    const logits = new Float32Array(rows * vocab);
    for (let r = 0; r < rows; r++) logits.set(row, r * vocab);
    const uniforms = Float32Array.from({ length: rows }, (_, r) => (r + 0.5) / rows);
    uniforms[0] = 0;
    uniforms[rows - 1] = 1; // a draw just below 1 rounded up as an f32: still the last token
    const got = await runKernel(ctx, logits, uniforms, rows, vocab, 1);
    const { compared } = expectMatchesReference(got, logits, uniforms, rows, vocab, 1);
    expect(compared).toBeGreaterThan(rows * 0.9);
    // Larger draws never give earlier tokens.
    for (let r = 1; r < rows; r++) expect(got.tokens[r]!).toBeGreaterThanOrEqual(got.tokens[r - 1]!);
    expect(got.tokens[0]).toBe(0);
    expect(got.tokens[rows - 1]).toBe(vocab - 1);
    expect(sampleRowsRef({ logits: row, uniforms: [1], rows: 1, vocab, temperature: 1 }).tokens[0]).toBe(
      vocab - 1,
    );
  });

  it("gives ties to the lower index, within and across lanes", async () => {
    const ctx = await testContext();
    const vocab = 1000;
    const tieSets = [
      [5, 600, 999],
      [300, 257],
      [999, 998],
      [0, 256, 512],
      [44, 300, 45],
    ];
    const rows = tieSets.length;
    const logits = randomArray(rows * vocab, 9, 1);
    for (const [r, ties] of tieSets.entries()) for (const i of ties) logits[r * vocab + i] = 4;
    const got = await runKernel(ctx, logits, new Float32Array(rows), rows, vocab, 0);
    expect(Array.from(got.tokens)).toEqual(tieSets.map((ties) => Math.min(...ties)));
    const expected = sampleRowsRef({ logits, uniforms: new Float32Array(rows), rows, vocab, temperature: 0 });
    for (let r = 0; r < rows; r++)
      expect(Math.abs(got.logProbs[r]! - expected.logProbs[r]!)).toBeLessThan(1e-5);
  });

  it("never picks -Infinity entries and gives no NaN for them", async () => {
    const ctx = await testContext();
    const vocab = 1000;
    const rows = 64;
    const logits = randomArray(rows * vocab, 17, 2);
    const masked = (i: number) => i % 3 !== 1 || (i >= 256 && i < 700); // whole lanes' chunks masked too
    for (let r = 0; r < rows; r++)
      for (let i = 0; i < vocab; i++) if (masked(i)) logits[r * vocab + i] = -Infinity;
    for (const temperature of TEMPERATURES) {
      const uniforms = randomUniforms(rows, 40 + temperature);
      const got = await runKernel(ctx, logits, uniforms, rows, vocab, temperature);
      for (let r = 0; r < rows; r++) {
        expect(masked(got.tokens[r]!), `row ${r} token ${got.tokens[r]}`).toBe(false);
        expect(Number.isFinite(got.logProbs[r]!)).toBe(true);
      }
      expectMatchesReference(got, logits, uniforms, rows, vocab, temperature);
    }
  });

  it("gives a NaN log-prob to rows holding NaN or +Infinity, as the reference does, halves too", async () => {
    const ctx = await testContext();
    const backend = createWebGpuBackend(ctx);
    const cpu = createCpuBackend();
    const vocab = 700; // NaN and Infinity in different lanes' chunks than the row's largest logit
    const rows = [
      { at: 650, value: Number.NaN, broken: true },
      { at: 3, value: Number.POSITIVE_INFINITY, broken: true },
      { at: 400, value: Number.NEGATIVE_INFINITY, broken: false },
      { at: 0, value: 1, broken: false },
    ];
    const logits = randomArray(rows.length * vocab, 29, 2);
    for (const [r, row] of rows.entries()) logits[r * vocab + row.at] = row.value;
    for (const dtype of ["f32", "f16"] as const)
      for (const temperature of [0, 1]) {
        const uniforms = randomUniforms(rows.length, 5);
        const [gpu, reference] = await Promise.all(
          [backend, cpu].map((b) =>
            sampleRows(tensor(logits, [rows.length, vocab], { backend: b, dtype }), uniforms, temperature),
          ),
        );
        for (const [r, row] of rows.entries()) {
          const label = `${dtype}, T ${temperature}, row ${r}`;
          expect(Number.isNaN(gpu!.logProbs[r]!), label).toBe(row.broken);
          expect(Number.isNaN(reference!.logProbs[r]!), label).toBe(row.broken);
          if (!row.broken) {
            expect(gpu!.tokens[r], label).toBe(reference!.tokens[r]);
            expect(Math.abs(gpu!.logProbs[r]! - reference!.logProbs[r]!), label).toBeLessThan(1e-4);
          }
        }
      }
  });

  it("samples in proportion to softmax(logits / T)", async () => {
    const ctx = await testContext();
    const vocab = 5;
    const rows = 20_000;
    const row = [0.5, -1, 2, 1, 0];
    const temperature = 1.5;
    const logits = new Float32Array(rows * vocab);
    for (let r = 0; r < rows; r++) logits.set(row, r * vocab);
    const got = await runKernel(ctx, logits, randomUniforms(rows, 77), rows, vocab, temperature);
    const weights = row.map((l) => Math.exp(l / temperature));
    const sum = weights.reduce((a, b) => a + b, 0);
    const counts = new Array<number>(vocab).fill(0);
    for (const t of got.tokens) counts[t]!++;
    for (let i = 0; i < vocab; i++)
      expect(Math.abs(counts[i]! / rows - weights[i]! / sum)).toBeLessThan(0.015);
  });

  it("rejects a negative temperature", async () => {
    const ctx = await testContext();
    const buffer = ctx.pool.acquire(16);
    const args = { logits: buffer, uniforms: buffer, tokens: buffer, logProbs: buffer, rows: 1, vocab: 1 };
    expect(() => sampleRowsKernel(ctx, { ...args, temperature: -1 })).toThrow(RangeError);
    ctx.pool.release(buffer);
  });
});

describe("sampleRows op", () => {
  it("on the CPU backend is the sampling of sampleToken (the reference, rows at a time)", async () => {
    const cpu = createCpuBackend();
    const vocab = 300;
    const rows = 12;
    const logits = randomArray(rows * vocab, 31, 3);
    logits[5] = -Infinity;
    for (const temperature of TEMPERATURES) {
      const uniforms = randomUniforms(rows, 32 + temperature);
      const got = await sampleRows(tensor(logits, [rows, vocab], { backend: cpu }), uniforms, temperature);
      for (let r = 0; r < rows; r++) {
        // sampleToken, written out for one row (f64 arithmetic on the f32 logits).
        const row = logits.subarray(r * vocab, (r + 1) * vocab);
        const scale = temperature === 0 ? 1 : 1 / temperature;
        let max = -Infinity;
        let argmax = 0;
        for (let i = 0; i < vocab; i++) if (row[i]! > max) [max, argmax] = [row[i]!, i];
        let sum = 0;
        for (let i = 0; i < vocab; i++) sum += Math.exp((row[i]! - max) * scale);
        let token = argmax;
        if (temperature !== 0) {
          let target = uniforms[r]! * sum;
          for (let i = 0; i < vocab; i++) {
            target -= Math.exp((row[i]! - max) * scale);
            if (target < 0) {
              token = i;
              break;
            }
          }
        }
        expect(got.tokens[r]).toBe(token);
        expect(got.logProbs[r]).toBe(Math.fround((row[token]! - max) * scale - Math.log(sum)));
      }
    }
  });

  it("on WebGPU takes [batch, 1, vocab] logits and matches the CPU backend", async () => {
    const gpu = createWebGpuBackend(await testContext());
    const cpu = createCpuBackend();
    const [batch, vocab] = [6, 513];
    const logits = randomArray(batch * vocab, 41, 2);
    const uniforms = randomUniforms(batch, 42);
    const onGpu = tensor(logits, [batch, 1, vocab], { backend: gpu });
    const got = await sampleRows(onGpu, uniforms, 0.9);
    onGpu.dispose();
    const expected = await sampleRows(tensor(logits, [batch, 1, vocab], { backend: cpu }), uniforms, 0.9);
    let compared = 0;
    for (let b = 0; b < batch; b++) {
      if (boundaryMargin(logits.subarray(b * vocab, (b + 1) * vocab), uniforms[b]!, 0.9) <= BOUNDARY_MARGIN)
        continue;
      compared++;
      expect(got.tokens[b]).toBe(expected.tokens[b]);
      expect(Math.abs(got.logProbs[b]! - expected.logProbs[b]!)).toBeLessThan(1e-4);
    }
    expect(compared).toBeGreaterThanOrEqual(batch - 1);
  });

  it("keeps the tokens on the device for the next step's embedding, the same rows as the read tokens give", async () => {
    const gpu = createWebGpuBackend(await testContext());
    const [batch, vocab, dim] = [5, 37, 12];
    const logits = tensor(randomArray(batch * vocab, 43, 2), [batch, 1, vocab], { backend: gpu });
    const uniforms = randomUniforms(batch, 44);
    const table = tensor(randomArray(vocab * dim, 45), [vocab, dim], { backend: gpu });
    const sampled = sampleRowsOnDevice(logits, uniforms, 0.8);
    expect(sampled.tokens.shape).toEqual([batch]);
    expect(sampled.tokens.dtype).toBe("i32");
    const fromDevice = embedding(table, sampled.tokens, [batch, 1]);
    const read = await sampleRows(logits, uniforms, 0.8);
    expect(Array.from(await sampled.tokens.data())).toEqual(Array.from(read.tokens));
    expect(Array.from(await sampled.logProbs.data())).toEqual(Array.from(read.logProbs));
    expect(Array.from(await fromDevice.floats())).toEqual(
      Array.from(await embedding(table, read.tokens, [batch, 1]).floats()),
    );
    // The gradient groups ids on the host: device ids cannot be differentiated.
    const trained = tensor(randomArray(vocab * dim, 46), [vocab, dim], { backend: gpu, requiresGrad: true });
    expect(() => embedding(trained, sampled.tokens)).toThrow(/device ids cannot be differentiated/);
    expect(() => embedding(table, sampled.tokens, [2, 2])).toThrow(/5 ids do not fill the shape \[2, 2\]/);
    expect(() => embedding(table, sampled.logProbs)).toThrow(/expected an i32 tensor/);
  });

  it("checks its arguments", async () => {
    const cpu = createCpuBackend();
    const logits = tensor(randomArray(8, 1), [2, 4], { backend: cpu });
    await expect(sampleRows(logits, new Float32Array(3), 1)).rejects.toThrow(/3 uniform draws/);
    await expect(sampleRows(logits, new Float32Array(2), -0.5)).rejects.toThrow(RangeError);
    const ids = tensor(new Int32Array(2), [2], { backend: cpu });
    await expect(sampleRows(ids, new Float32Array(1), 1)).rejects.toThrow(TypeError);
  });
});
