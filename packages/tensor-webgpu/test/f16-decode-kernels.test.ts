/**
 * The kernels of a decoding step on f16 storage: ropeAppend, "matvec" with its input transformed
 * (RMSNorm, SwiGLU), swigluPacked and sampleRows. Each widens halves as it reads them and does the f32
 * kernel's arithmetic in the same order, so on halves it must give, bit for bit, the f32 kernel's results
 * on the same values rounded once to halves (sampleRows: the same tokens and log-probabilities).
 */
import { afterEach, describe, expect, it } from "vitest";
import { swigluPacked } from "../src/kernels/activation.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import type { FloatStorage } from "../src/kernels/elementwise.js";
import { disableMatmulTuning } from "../src/kernels/matmul-choices.js";
import { matvecWithInput, type ProductInput } from "../src/kernels/matmul-fused-input.js";
import { ropeAppend } from "../src/kernels/rope.js";
import { sampleRows } from "../src/kernels/sampling.js";
import { chooseMatmulKernel, halves, randomArray, readAs, testContext, uploadAs } from "./helpers.js";

const ctx = await testContext();
const bytesOf = (storage: FloatStorage) => (storage === "f16" ? 2 : 4);

/** Fails at the first element whose bits differ (exact: -0 is not 0, and NaNs are compared by payload). */
function expectSameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  const a = new Uint32Array(actual.buffer, actual.byteOffset, actual.length);
  const e = new Uint32Array(expected.buffer, expected.byteOffset, expected.length);
  const i = a.findIndex((bits, index) => bits !== e[index]);
  if (i >= 0) expect.fail(`${what}, element ${i}: got ${actual[i]}, expected ${expected[i]}`);
}

/**
 * The f16 kernel's outputs against the f32 kernel's on the same (half) values, each rounded once. Some
 * f32 result must need the rounding, or the comparison could not tell one rounding from several.
 */
function expectRoundedOnce(f16: Float32Array[], f32: Float32Array[], names: string[]): void {
  for (const [i, name] of names.entries()) expectSameBits(f16[i]!, halves(f32[i]!), name);
  expect(f32.some((values) => halves(values).some((v, i) => v !== values[i]))).toBe(true);
}

/** Uploads each array as `storage`, runs `record` on the buffers and releases them afterwards. */
async function withBuffers<T>(
  storage: FloatStorage,
  values: Float32Array[],
  record: (buffers: GPUBuffer[]) => Promise<T>,
): Promise<T> {
  const buffers = values.map((v) => uploadAs(ctx, v, storage));
  try {
    return await record(buffers);
  } finally {
    for (const buffer of buffers) ctx.pool.release(buffer);
  }
}

describe.skipIf(!ctx.info.features.shaderF16)(
  "f16 decoding kernels: the f32 kernels' bits, rounded once",
  () => {
    describe("ropeAppend (q rotated into qOut, k rotated and v copied into the caches)", () => {
      const theta = 10_000;
      const cases = [
        // A decoding step (vec4 pairs), a prefill into a partly filled cache (scalar pairs: half is 5),
        // a prefill from slot 0 filling the cache, and a decoding step on scalar pairs (half is 3).
        { batch: 2, seqLen: 1, numHeads: 4, numKvHeads: 2, headDim: 64, capacity: 6, at: 3 },
        { batch: 2, seqLen: 3, numHeads: 3, numKvHeads: 1, headDim: 10, capacity: 7, at: 2 },
        { batch: 1, seqLen: 2, numHeads: 2, numKvHeads: 2, headDim: 16, capacity: 2, at: 0 },
        { batch: 3, seqLen: 1, numHeads: 2, numKvHeads: 1, headDim: 6, capacity: 5, at: 4 },
      ];

      async function run(storage: FloatStorage, c: (typeof cases)[number], packed: boolean, seed: number) {
        const { batch, seqLen, numHeads, numKvHeads, headDim, capacity, at } = c;
        const tokens = batch * seqLen;
        const qkvHeads = numHeads + 2 * numKvHeads;
        const cacheSize = batch * capacity * numKvHeads * headDim;
        // Every input already holds halves, so both kernels see the same values.
        const qkv = halves(randomArray(tokens * qkvHeads * headDim, seed, 3));
        const q = halves(randomArray(tokens * numHeads * headDim, seed + 1, 3));
        const k = halves(randomArray(tokens * numKvHeads * headDim, seed + 2, 3));
        const v = halves(randomArray(tokens * numKvHeads * headDim, seed + 3, 3));
        const keys = halves(randomArray(cacheSize, seed + 4));
        const values = halves(randomArray(cacheSize, seed + 5));
        // Row r's tokens at positions 7r + at.. (not the slots: positions and slots differ with padding).
        const positions = Int32Array.from(
          { length: tokens },
          (_, t) => 7 * Math.floor(t / seqLen) + at + (t % seqLen),
        );
        const inputs = packed ? [qkv, keys, values] : [q, k, v, keys, values];
        return withBuffers(storage, inputs, async (buffers) => {
          const [qBuffer, kBuffer, vBuffer] = packed ? [buffers[0]!, buffers[0]!, buffers[0]!] : buffers;
          const [keysBuffer, valuesBuffer] = buffers.slice(-2) as [GPUBuffer, GPUBuffer];
          const qOut = ctx.pool.acquire(tokens * numHeads * headDim * bytesOf(storage));
          const positionBuffer = ctx.upload(positions);
          const recorded = ropeAppend(ctx, {
            q: qBuffer!,
            qOut,
            k: kBuffer!,
            v: vBuffer!,
            keys: keysBuffer,
            values: valuesBuffer,
            positions: positionBuffer,
            ...c,
            theta,
            packed,
            dtype: storage,
          });
          expect(recorded).toBe(true);
          const results = [
            await readAs(ctx, qOut, tokens * numHeads * headDim, storage),
            await readAs(ctx, keysBuffer, cacheSize, storage),
            await readAs(ctx, valuesBuffer, cacheSize, storage),
          ];
          ctx.pool.release(qOut);
          ctx.pool.release(positionBuffer);
          return results;
        });
      }

      for (const [i, c] of cases.entries()) {
        for (const packed of [false, true]) {
          it(`${packed ? "packed q/k/v" : "separate q, k, v"}: ${JSON.stringify(c)}`, async () => {
            const f16 = await run("f16", c, packed, 10 * i + 1);
            const f32 = await run("f32", c, packed, 10 * i + 1);
            expectRoundedOnce(f16, f32, ["qOut", "keys", "values"]);
          });
        }
      }
    });

    describe('"matvec" with its input transformed (RMSNorm, SwiGLU)', () => {
      afterEach(() => disableMatmulTuning(ctx));
      const n = 70;
      const k = 75; // odd: rows of halves start at odd offsets; not a multiple of the 32 lanes of a column

      async function run(
        storage: FloatStorage,
        kind: ProductInput["kind"],
        rows: number,
        epilogue: { bias: boolean; addend: boolean },
        seed: number,
      ) {
        const rowElements = kind === "swiglu" ? 2 * k : k;
        const values = [
          halves(randomArray(rows * rowElements, seed, 3)), // x
          halves(randomArray(n * k, seed + 1)), // weight
          halves(randomArray(k, seed + 2, 2)), // the norm's weight
          halves(randomArray(n, seed + 3)), // bias
          halves(randomArray(rows * n, seed + 4, 2)), // addend
        ];
        return withBuffers(storage, values, async ([x, weight, normWeight, bias, addend]) => {
          const out = ctx.pool.acquire(rows * n * bytesOf(storage));
          const input: ProductInput =
            kind === "rmsNorm" ? { kind, weight: normWeight!, eps: 1e-6 } : { kind: "swiglu" };
          const recorded = matvecWithInput(ctx, {
            x: x!,
            weight: weight!,
            out,
            rows,
            n,
            k,
            input,
            ...(epilogue.bias ? { bias: bias! } : {}),
            ...(epilogue.addend ? { addend: addend! } : {}),
            dtype: storage,
            variant: "matvec",
          });
          expect(recorded).toBe(true);
          const result = await readAs(ctx, out, rows * n, storage);
          ctx.pool.release(out);
          return result;
        });
      }

      const epilogues = [
        { bias: false, addend: false },
        { bias: true, addend: false },
        { bias: false, addend: true },
        { bias: true, addend: true },
      ];
      // Blocks of 1, 2, 4 and 8 rows (3: a block with a row past m). Lavapipe takes seconds to compile
      // the unrolled 8-row RMSNorm kernel, so RMSNorm stops at 3 rows; the reduction is the same code.
      const rowCounts = { rmsNorm: [1, 2, 3], swiglu: [1, 3, 8] };
      for (const kind of ["rmsNorm", "swiglu"] as const) {
        for (const rows of rowCounts[kind]) {
          it(`${kind}, ${rows} row${rows > 1 ? "s" : ""}, with and without bias and addend`, async () => {
            for (const [i, epilogue] of epilogues.entries()) {
              const seed = 100 * rows + 10 * i + (kind === "swiglu" ? 1 : 0);
              const f16 = await run("f16", kind, rows, epilogue, seed);
              const f32 = await run("f32", kind, rows, epilogue, seed);
              expectRoundedOnce([f16], [f32], [`out, ${JSON.stringify(epilogue)}`]);
            }
          });
        }
      }

      it("is chosen by the f16 product's entry (the choice is made for the problem's dtype)", async () => {
        const rows = 2;
        const size = rows * 2 * k * 4; // large enough for every operand, either dtype
        const [x, weight, out] = [size, n * k * 4, rows * n * 4].map((bytes) => ctx.pool.acquire(bytes));
        const args = { x: x!, weight: weight!, out: out!, rows, n, k, input: { kind: "swiglu" } } as const;
        // Entries for the f16 product ("matvec") and the f32 one ("tiled"), whatever the fixed rule takes.
        const shape = { batch: 1, m: rows, n, k, transA: false, transB: true } as const;
        chooseMatmulKernel(ctx, { ...shape, dtype: "f16" });
        chooseMatmulKernel(ctx, { ...shape, dtype: "f32" }, "tiled");
        expect(matvecWithInput(ctx, { ...args, dtype: "f16" })).toBe(true);
        expect(matvecWithInput(ctx, args)).toBe(false);
        await ctx.read(out!, 4);
        for (const buffer of [x, weight, out]) ctx.pool.release(buffer!);
      });
    });

    describe("swigluPacked", () => {
      async function run(storage: FloatStorage, rows: number, width: number, seed: number) {
        const gateUp = halves(randomArray(rows * 2 * width, seed, 4));
        return withBuffers(storage, [gateUp], async ([buffer]) => {
          const out = ctx.pool.acquire(rows * width * bytesOf(storage));
          expect(swigluPacked(ctx, { gateUp: buffer!, out, rows, width, dtype: storage })).toBe(true);
          const result = await readAs(ctx, out, rows * width, storage);
          ctx.pool.release(out);
          return result;
        });
      }

      // vec4 rows, and scalar rows of odd widths (odd half offsets).
      for (const [rows, width] of [
        [1, 344],
        [3, 64],
        [5, 6],
        [4, 7],
      ] as const) {
        it(`${rows} x ${width}`, async () => {
          expectRoundedOnce(
            [await run("f16", rows, width, width)],
            [await run("f32", rows, width, width)],
            ["out"],
          );
        });
      }
    });

    describe("sampleRows (f16 logits; softmax and log-probabilities in f32)", () => {
      afterEach(() => limitBindingsForTesting(undefined));
      const rows = 5;
      const vocab = 999; // odd: rows of halves start at odd offsets

      async function run(
        storage: FloatStorage,
        logits: Float32Array,
        draws: Float32Array,
        temperature: number,
      ) {
        return withBuffers(storage, [logits], async ([logitBuffer]) => {
          const uniforms = ctx.upload(draws);
          const tokens = ctx.pool.acquire(rows * 4);
          const logProbs = ctx.pool.acquire(rows * 4);
          sampleRows(ctx, {
            logits: logitBuffer!,
            uniforms,
            tokens,
            logProbs,
            rows,
            vocab,
            temperature,
            dtype: storage,
          });
          const result = {
            tokens: new Int32Array(await ctx.read(tokens, rows * 4)),
            logProbs: new Float32Array(await ctx.read(logProbs, rows * 4)),
          };
          for (const buffer of [uniforms, tokens, logProbs]) ctx.pool.release(buffer);
          return result;
        });
      }

      for (const temperature of [0, 0.7, 1.5]) {
        for (const windows of ["one binding", "a binding per two rows"] as const) {
          it(`temperature ${temperature}, ${windows}`, async () => {
            // Logits of a few units, so that sampling spreads over many tokens; the draws fixed.
            const logits = halves(randomArray(rows * vocab, 31 + 10 * temperature, 4));
            const draws = Float32Array.from(randomArray(rows, 7), (u) => (u + 1) / 2);
            // Two rows of halves and the misalignment a window may start with: windows at odd halves.
            if (windows !== "one binding")
              limitBindingsForTesting(ctx.device.limits.minStorageBufferOffsetAlignment + 2 * vocab * 2);
            const f16 = await run("f16", logits, draws, temperature);
            const f32 = await run("f32", logits, draws, temperature);
            expect(Array.from(f16.tokens)).toEqual(Array.from(f32.tokens));
            expectSameBits(f16.logProbs, f32.logProbs, "logProbs");
            if (temperature > 0) expect(new Set(f16.tokens).size).toBeGreaterThan(1);
          });
        }
      }
    });
  },
);
