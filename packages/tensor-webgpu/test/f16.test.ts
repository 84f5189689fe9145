import { beforeAll, describe, expect, it } from "vitest";
import { backward } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import { roundToHalf } from "../src/core/half-float.js";
import { GpuContext } from "../src/gpu/context.js";
import * as ops from "../src/ops/index.js";
import { AdamW } from "../src/optim.js";
import { onesLike, tensor, zeros } from "../src/runtime.js";
import { asyncScope, scope, type Tensor } from "../src/tensor.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const halves = (values: Float32Array) => values.map(roundToHalf);
const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

let gpu: Backend | undefined;
const cpu = createCpuBackend();
beforeAll(async () => {
  const ctx = await testContext();
  if (ctx.info.features.shaderF16) gpu = createWebGpuBackend(ctx);
});

/** Both backends that hold f16 here: the WebGPU one (when the adapter has shader-f16) and the CPU one. */
const backends = (): [string, Backend][] => [
  ...(gpu ? [["webgpu", gpu] as [string, Backend]] : []),
  ["cpu", cpu],
];

/** The CPU backend with its casts counted: `casts()` is how many it has made. */
function castCounting(): { counting: typeof cpu; casts: () => number } {
  let casts = 0;
  const counting: typeof cpu = {
    ...cpu,
    cast: (args) => {
      casts++;
      cpu.cast(args);
    },
  };
  return { counting, casts: () => casts };
}

describe("f16 tensors", () => {
  it("store halves: values round to nearest even, and take 2 bytes per element on WebGPU", async () => {
    const values = Float32Array.from([0.1, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504, 70000, -3e-8, 12345.678]);
    for (const [name, backend] of backends()) {
      const t = tensor(values, [7], { backend, dtype: "f16" });
      expect(t.dtype).toBe("f16");
      expect(Array.from(await t.floats()), name).toEqual(Array.from(values, roundToHalf));
      expect(t.storage.bytes).toBe(name === "webgpu" ? 16 : 28);
      const filled = onesLike(t);
      expect(filled.dtype).toBe("f16");
      expect(Array.from(await filled.floats())).toEqual(new Array(7).fill(1));
      t.dispose();
      filled.dispose();
    }
  });

  it("on WebGPU without shader-f16, creating one fails naming the feature", async () => {
    const ctx = await GpuContext.create({ disableFeatures: ["shader-f16"] });
    try {
      const backend = createWebGpuBackend(ctx);
      expect(() => tensor([1, 2], [2], { backend, dtype: "f16" })).toThrow(/"shader-f16"/);
      expect(() => zeros([3], { backend, dtype: "f16" })).toThrow(
        /lacks the feature "shader-f16": f16 tensors need it/,
      );
      const f32 = tensor([1, 2], [2], { backend });
      expect(() => ops.cast(f32, "f16")).toThrow(/shader-f16/);
      f32.dispose();
    } finally {
      ctx.destroy();
    }
  });

  it("cast f32 <-> f16: forward rounds, the gradient of a cast is a cast back", async () => {
    for (const [name, backend] of backends()) {
      await asyncScope(async () => {
        const values = randomArray(10, 3, 4);
        const x = tensor(values, [10], { backend, requiresGrad: true });
        const half = ops.cast(x, "f16");
        expect(half.dtype).toBe("f16");
        expect(Array.from(await half.floats()), name).toEqual(Array.from(values, roundToHalf));
        const weights = tensor(randomArray(10, 4), [10], { backend, dtype: "f16" });
        backward(ops.sum(ops.cast(ops.mul(half, weights), "f32")));
        expect(x.grad!.dtype).toBe("f32");
        expect(Array.from(await x.grad!.floats())).toEqual(Array.from(await weights.floats()));
        // And the other way: an f16 leaf gets an f16 gradient.
        const leaf = tensor(values, [10], { backend, dtype: "f16", requiresGrad: true });
        backward(ops.sum(ops.scale(ops.cast(leaf, "f32"), 3)));
        expect(leaf.grad!.dtype).toBe("f16");
        expect(Array.from(await leaf.grad!.floats())).toEqual(new Array(10).fill(3));
        expect(() => ops.cast(leaf, "i32")).toThrow(/through f32/);
      });
    }
  });

  it("mixing f16 and f32 operands promotes to f32", async () => {
    for (const [, backend] of backends()) {
      await asyncScope(async () => {
        const a = tensor([1.5, 2.25], [2], { backend, dtype: "f16", requiresGrad: true });
        const b = tensor([0.1, 0.2], [2], { backend, requiresGrad: true });
        const sum = ops.add(a, b);
        expect(sum.dtype).toBe("f32");
        expectClose(await sum.floats(), [1.6, 2.45], 1e-6);
        backward(ops.sum(ops.mul(sum, b)));
        expect(a.grad!.dtype).toBe("f16");
        expect(b.grad!.dtype).toBe("f32");
        expectClose(await a.grad!.floats(), [roundToHalf(0.1), roundToHalf(0.2)], 0);
        expect(ops.matmul(ops.reshape(a, [1, 2]), ops.reshape(b, [2, 1])).dtype).toBe("f32");
      });
    }
  });
});

/**
 * One op's forward and its gradients with f16 inputs against the same op on f32 copies of the same
 * (rounded) values: the f16 results may differ by f16 rounding of the output and of intermediate
 * activations, so they are compared at rel 1e-2.
 */
async function compareWithF32(
  backend: Backend,
  shapes: number[][],
  op: (inputs: Tensor[]) => Tensor,
  seed: number,
  scale = 1,
): Promise<void> {
  const values = shapes.map((shape, i) => halves(randomArray(size(shape), seed + i, scale)));
  const run = async (dtype: "f32" | "f16") =>
    asyncScope(async () => {
      const inputs = shapes.map((shape, i) =>
        tensor(values[i]!, shape, { backend, dtype, requiresGrad: true }),
      );
      const out = op(inputs);
      expect(out.dtype).toBe(dtype);
      const weights = tensor(randomArray(out.size, seed + 99), out.shape, { backend, dtype });
      backward(ops.sum(ops.cast(ops.mul(out, weights), "f32")));
      for (const input of inputs) expect(input.grad!.dtype).toBe(dtype);
      return {
        out: await out.floats(),
        grads: await Promise.all(inputs.map((input) => input.grad!.floats())),
      };
    });
  const wide = await run("f32");
  const half = await run("f16");
  expectClose(half.out, wide.out, 2e-2, 1e-2);
  for (const [i, g] of half.grads.entries()) expectClose(g, wide.grads[i]!, 5e-2, 2e-2);
}

describe("f16 ops match their f32 results within f16 tolerance (forward and backward)", () => {
  const cases: [string, number[][], (inputs: Tensor[]) => Tensor, number?][] = [
    [
      "matmul (x · Wᵀ, shared weight)",
      [
        [2, 20, 48],
        [36, 48],
      ],
      ([x, w]) => ops.linear(x!, w!),
    ],
    [
      "matmul, batched with transposed a",
      [
        [3, 24, 17],
        [3, 24, 40],
      ],
      ([a, b]) => ops.matmul(a!, b!, { transA: true }),
    ],
    ["add with a broadcast bias", [[6, 40], [40]], ([a, b]) => ops.add(a!, b!)],
    [
      "mul",
      [
        [6, 40],
        [6, 40],
      ],
      ([a, b]) => ops.mul(a!, b!),
    ],
    ["scale", [[6, 41]], ([a]) => ops.scale(a!, -0.75)],
    ["rmsNorm", [[5, 64], [64]], ([x, w]) => ops.rmsNorm(x!, w!)],
    ["silu", [[7, 33]], ([x]) => ops.silu(x!), 3],
    [
      "swiglu",
      [
        [7, 32],
        [7, 32],
      ],
      ([g, u]) => ops.swiglu(g!, u!),
      2,
    ],
    ["softmax", [[4, 50]], ([x]) => ops.softmax(x!), 3],
    ["sum over an axis", [[6, 70]], ([x]) => ops.sum(x!, 1)],
  ];
  for (const [name, shapes, op, scale] of cases) {
    it(name, async () => {
      for (const [, backend] of backends()) await compareWithF32(backend, shapes, op, name.length, scale);
    });
  }

  it("RMSNorm and SwiGLU keep f16 activations f16 with no cast either way (an f32 norm weight too)", async () => {
    const { counting, casts } = castCounting();
    const xValues = halves(randomArray(6 * 16, 3, 2));
    const weightValues = [halves(randomArray(16, 4)), halves(randomArray(16, 5))];
    const block = (backend: Backend, dtypes: readonly ["f32" | "f16", "f32" | "f16", "f32" | "f16"]) => {
      const x = tensor(xValues, [6, 16], { backend, dtype: dtypes[0], requiresGrad: true });
      const weights = weightValues.map((values, i) =>
        tensor(values, [16], { backend, dtype: dtypes[i + 1], requiresGrad: true }),
      );
      const normed = weights.map((weight) => ops.rmsNorm(x, weight));
      const out = ops.swiglu(normed[0]!, normed[1]!);
      return { x, weights, normed, out };
    };
    await asyncScope(async () => {
      const half = block(counting, ["f16", "f16", "f32"]);
      expect([...half.normed, half.out].map((t) => t.dtype)).toEqual(["f16", "f16", "f16"]);
      expect(casts()).toBe(0);
      backward(ops.sum(ops.cast(half.out, "f32")));
      expect(casts()).toBe(2); // the loss's own cast and its gradient's
      const grads = [half.x, ...half.weights].map((t) => t.grad!);
      expect(grads.map((g) => g.dtype)).toEqual(["f16", "f16", "f32"]);
      // The values of the f32 ops on the same inputs, within f16 rounding of the activations.
      const wide = block(cpu, ["f32", "f32", "f32"]);
      backward(ops.sum(wide.out));
      expectClose(await half.out.floats(), await wide.out.floats(), 1e-2, 1e-2);
      const wideGrads = [wide.x, ...wide.weights].map((t) => t.grad!);
      for (const [i, g] of grads.entries())
        expectClose(await g.floats(), await wideGrads[i]!.floats(), 5e-2, 2e-2);
    });
  });

  it("log-probs, entropy and cross-entropy read f16 logits without an f32 copy; the gradient is f16", async () => {
    const { counting, casts } = castCounting();
    const [rows, vocab] = [6, 40];
    const values = halves(randomArray(rows * vocab, 21, 4));
    const ids = Int32Array.from([3, 0, 39, -100, 7, 12]);
    for (const [name, backend] of [...backends(), ["counting cpu", counting] as [string, Backend]]) {
      await asyncScope(async () => {
        const losses = (dtype: "f32" | "f16") => {
          const logits = tensor(values, [rows, vocab], { backend, dtype, requiresGrad: true });
          const targets = tensor(ids, [rows], { backend, dtype: "i32" });
          const out = [
            ops.tokenLogProbs(logits, targets, 0.8),
            ops.entropy(logits, 0.8),
            ops.crossEntropy(logits, targets),
          ];
          backward(ops.sum(ops.add(ops.add(out[0]!, ops.scale(out[1]!, 0.3)), out[2]!)));
          return { logits, out };
        };
        const before = casts();
        const half = losses("f16");
        expect(casts() - before, name).toBe(0);
        expect(half.out.map((t) => t.dtype)).toEqual(["f32", "f32", "f32"]);
        expect(half.logits.grad!.dtype).toBe("f16");
        const wide = losses("f32");
        for (const [i, t] of half.out.entries())
          expectClose(await t.floats(), await wide.out[i]!.floats(), 1e-5, 1e-5);
        // Each of the three gradients rounded to f16 as it is stored and as they are added.
        expectClose(await half.logits.grad!.floats(), await wide.logits.grad!.floats(), 2e-3, 4e-3);
      });
    }
  });

  it("a gradient given in f32 for an f16 output reaches each backward as f16", async () => {
    for (const [name, backend] of backends()) {
      await asyncScope(async () => {
        const xValues = halves(randomArray(4 * 16, 31, 2));
        const wValues = halves(randomArray(16 * 16, 32));
        const gradient = halves(randomArray(4 * 16, 33));
        const grads = async (gradientDtype: "f32" | "f16") => {
          const x = tensor(xValues, [4, 16], { backend, dtype: "f16", requiresGrad: true });
          const w = tensor(wValues, [16, 16], { backend, dtype: "f16", requiresGrad: true });
          const norm = tensor(halves(randomArray(16, 34)), [16], { backend, dtype: "f16" });
          const h = ops.linear(x, w);
          const out = ops.swiglu(ops.rmsNorm(h, norm), h);
          backward(out, tensor(gradient, [4, 16], { backend, dtype: gradientDtype }));
          return [await x.grad!.floats(), await w.grad!.floats()];
        };
        const [fromF32, fromF16] = [await grads("f32"), await grads("f16")];
        for (const [i, g] of fromF32.entries()) expect(Array.from(g), name).toEqual(Array.from(fromF16[i]!));
      });
    }
  });

  it("a sum over several axes rounds to f16 once, after the last axis", async () => {
    for (const [name, backend] of backends()) {
      // Rows sum to 1 + 2^-11 and 2^-11: rounded between the axes the first becomes 1 (a tie, to even)
      // and the total 1 again; rounded once the total is 1 + 2^-10, a half.
      const x = tensor([1, 2 ** -11, 0, 2 ** -11, 0, 0], [2, 3], { backend, dtype: "f16" });
      const total = ops.sum(x);
      expect(total.dtype).toBe("f16");
      expect(await total.item(), name).toBe(1 + 2 ** -10);
      x.dispose();
      total.dispose();
    }
  });

  it("rope", async () => {
    for (const [, backend] of backends()) {
      const positions = tensor(Int32Array.from([0, 1, 2, 3, 7, 8, 9, 10]), [2, 4], { backend, dtype: "i32" });
      await compareWithF32(backend, [[2, 4, 3, 16]], ([x]) => ops.rope(x!, positions, 10000), 5);
      positions.dispose();
    }
  });

  it("embedding gather (f16 rows copied as they are; the table gradient summed in f32)", async () => {
    for (const [, backend] of backends()) {
      const ids = Int32Array.from([3, 0, 3, 5, 1, 3, 9]);
      await compareWithF32(backend, [[10, 24]], ([table]) => ops.embedding(table!, ids), 6);
      const table = tensor(halves(randomArray(40, 8)), [10, 4], { backend, dtype: "f16" });
      const rows = ops.embedding(table, Int32Array.from([2]));
      expect(rows.dtype).toBe("f16");
      expect(Array.from(await rows.floats())).toEqual(Array.from((await table.floats()).subarray(8, 12)));
      table.dispose();
      rows.dispose();
    }
  });

  it("fused causal attention with grouped KV heads", async () => {
    for (const [, backend] of backends()) {
      await compareWithF32(
        backend,
        [
          [2, 5, 4 * 8],
          [2, 5, 2 * 8],
          [2, 5, 2 * 8],
        ],
        ([q, k, v]) => ops.attention(q!, k!, v!, { numHeads: 4, numKvHeads: 2 }),
        7,
      );
    }
  });
});

describe("the f16 embedding's table gradient", () => {
  it("is summed without a cast, to the bits of the f32 gradient rounded once", async () => {
    const { counting, casts } = castCounting();
    const ids = Int32Array.from([3, 0, 3, 5, 1, 3, 9, 0]);
    const tableValues = halves(randomArray(10 * 12, 51));
    const gradient = halves(randomArray(ids.length * 12, 52));
    const tableGrad = async (backend: Backend, dtype: "f32" | "f16") =>
      asyncScope(async () => {
        const table = tensor(tableValues, [10, 12], { backend, dtype, requiresGrad: true });
        const rows = ops.embedding(table, ids);
        backward(rows, tensor(gradient, rows.shape, { backend, dtype }));
        expect(table.grad!.dtype).toBe(dtype);
        return table.grad!.floats();
      });
    const before = casts();
    const half = await tableGrad(counting, "f16");
    expect(casts() - before).toBe(0);
    expect(Array.from(half)).toEqual(Array.from(halves(await tableGrad(cpu, "f32"))));
    for (const [name, backend] of backends())
      expect(Array.from(await tableGrad(backend, "f16")), name).toEqual(Array.from(half));
  });
});

describe("f16 RoPE and attention", () => {
  it("run on the halves themselves: no cast, forward or backward", async () => {
    const { counting, casts } = castCounting();
    await asyncScope(async () => {
      const make = (shape: number[], seed: number) =>
        tensor(halves(randomArray(size(shape), seed, 1.5)), shape, {
          backend: counting,
          dtype: "f16",
          requiresGrad: true,
        });
      const [q, k, v] = [make([2, 5, 4, 8], 41), make([2, 5, 2, 8], 42), make([2, 5, 2, 8], 43)];
      const positions = tensor(Int32Array.from([0, 1, 2, 3, 4, 0, 0, 1, 2, 3]), [2, 5], {
        backend: counting,
        dtype: "i32",
      });
      const heads = { numHeads: 4, numKvHeads: 2 };
      const out = ops.attention(ops.rope(q, positions, 10000), ops.rope(k, positions, 10000), v, heads);
      expect(out.dtype).toBe("f16");
      backward(
        out,
        tensor(halves(randomArray(out.size, 44)), out.shape, { backend: counting, dtype: "f16" }),
      );
      expect(casts()).toBe(0);
      for (const t of [q, k, v]) expect(t.grad!.dtype).toBe("f16");
    });
  });
});

describe("writeSlice between f16 and f32", () => {
  it("converts the source to the target's type (an f16 model's keys into an f32 cache, and back)", async () => {
    for (const [name, backend] of backends()) {
      const values = randomArray(6, 9);
      for (const [from, to] of [
        ["f16", "f32"],
        ["f32", "f16"],
      ] as const) {
        const target = zeros([2, 4, 3], { backend, dtype: to });
        ops.writeSlice(target, tensor(values, [2, 1, 3], { backend, dtype: from }), 1, 2);
        const got = await target.floats();
        const row = (b: number) => Array.from(got.slice(b * 12 + 6, b * 12 + 9));
        expect([...row(0), ...row(1)], `${name} ${from} -> ${to}`).toEqual(Array.from(halves(values)));
        expect(got.filter((v) => v !== 0).length).toBe(6);
      }
      const ids = tensor([1, 2], [1, 2], { backend, dtype: "i32" });
      expect(() => ops.writeSlice(zeros([1, 2], { backend }), ids, 1, 0)).toThrow(/does not fit/);
    }
  });
});

describe("mixed-precision training", () => {
  it("AdamW keeps an f32 master copy of an f16 parameter: updates below an f16 step accumulate", async () => {
    for (const [name, backend] of backends()) {
      const p = tensor([1, -1], [2], { backend, dtype: "f16", requiresGrad: true }).keep();
      // Adam's step is about lr per step: 1e-4 is a fifth of half an f16 step at 1 (2^-11).
      const optimizer = new AdamW([p], { lr: 1e-4, weightDecay: 0 });
      for (let step = 0; step < 20; step++) {
        scope(() => {
          backward(ops.sum(ops.cast(ops.mul(p, tensor([1, -1], [2], { backend, dtype: "f16" })), "f32")));
          const { gradNorm, clipScale } = optimizer.step();
          optimizer.zeroGrad();
          gradNorm.dispose();
          clipScale.dispose();
        });
      }
      const state = await optimizer.stateDict();
      expectClose(state.moments[0]!.master!, [1 - 2e-3, -1 + 2e-3], 1e-5, 0);
      // The parameter is the master rounded: it moved by 2e-3, four f16 steps, not zero.
      expect(Array.from(await p.floats()), name).toEqual([roundToHalf(1 - 2e-3), roundToHalf(-1 + 2e-3)]);
      // A restored optimizer carries on from the master copy.
      const restored = new AdamW([p], { lr: 1e-4, weightDecay: 0 });
      restored.loadStateDict(state);
      expect((await restored.stateDict()).moments[0]!.master).toEqual(state.moments[0]!.master);
      optimizer.dispose();
      restored.dispose();
      p.dispose();
    }
  });

  it("a small MLP with f16 weights and activations trains: its loss falls 5x", async () => {
    for (const [name, backend] of backends()) {
      const n = 64;
      const xs = randomArray(n * 2, 7);
      const ys = Float32Array.from({ length: n }, (_, i) => Math.sin(3 * xs[2 * i]!) * xs[2 * i + 1]!);
      const half = { backend, dtype: "f16" as const };
      const x = tensor(xs, [n, 2], half).keep();
      const y = tensor(ys, [n, 1], half).keep();
      const param = (shape: number[], seed: number, scale: number) =>
        tensor(randomArray(size(shape), seed, scale), shape, { ...half, requiresGrad: true }).keep();
      const w1 = param([32, 2], 1, 1);
      const b1 = param([32], 2, 0.1);
      const w2 = param([1, 32], 3, 0.2);
      const optimizer = new AdamW([w1, b1, w2], { lr: 0.02, weightDecay: 0, maxGradNorm: 1 });
      const losses: number[] = [];
      const steps = name === "cpu" ? 120 : 200;
      for (let step = 0; step < steps; step++) {
        losses.push(
          await asyncScope(async () => {
            const hidden = ops.tanh(ops.linear(x, w1, b1));
            expect(hidden.dtype).toBe("f16");
            const error = ops.sub(ops.linear(hidden, w2), y);
            const loss = ops.mean(ops.cast(ops.square(error), "f32"));
            backward(loss);
            const { gradNorm, clipScale } = optimizer.step();
            optimizer.zeroGrad();
            gradNorm.dispose();
            clipScale.dispose();
            return loss.item();
          }),
        );
      }
      expect(w1.dtype).toBe("f16");
      expect(losses.at(-1)!, name).toBeLessThan(losses[0]! / 5);
      optimizer.dispose();
      for (const t of [x, y, w1, b1, w2]) t.dispose();
    }
  });
});

describe("dynamic loss scaling", () => {
  const stepOf = (optimizer: AdamW) => {
    const { gradNorm, clipScale } = optimizer.step();
    optimizer.zeroGrad();
    gradNorm.dispose();
    return clipScale;
  };

  it("keeps f16 gradients that would flush to zero: the step moves the weights only with scaling", async () => {
    for (const [name, backend] of backends()) {
      for (const lossScaling of [false, true]) {
        const p = tensor([1, -1], [2], { backend, dtype: "f16", requiresGrad: true }).keep();
        // eps far below the true gradient, so that Adam's first step is lr whatever its size.
        const optimizer = new AdamW([p], { lr: 1e-2, weightDecay: 0, eps: 1e-12, lossScaling });
        const first = await asyncScope(async () => {
          // d loss / d p = 2^-14 · 2^-12 = 2^-26 per element, below f16's smallest subnormal (2^-24).
          const product = ops.mul(p, tensor([2 ** -12, 2 ** -12], [2], { backend, dtype: "f16" }));
          const loss = ops.scale(ops.sum(ops.cast(product, "f32")), 2 ** -14);
          backward(optimizer.scaleLoss(loss));
          const grad = await p.grad!.floats();
          return { grad: Array.from(grad), clip: await stepOf(optimizer).item() };
        });
        const after = Array.from(await p.floats());
        if (lossScaling) {
          // Scaled by 2^16 the gradient is 2^-10; unscaled in the update, Adam moves each weight by lr.
          expect(first.grad, name).toEqual([2 ** -10, 2 ** -10]);
          expect(first.clip, name).toBe(2 ** -16);
          expectClose(after, [roundToHalf(1 - 1e-2), roundToHalf(-1 - 1e-2)], 0, 0);
        } else {
          expect(first.grad, name).toEqual([0, 0]);
          expect(after, name).toEqual([1, -1]);
        }
        optimizer.dispose();
        p.dispose();
      }
    }
  });

  it("skips a step whose scaled gradients overflow and halves the scale; finite steps grow it", async () => {
    for (const [name, backend] of backends()) {
      const p = tensor([0.5], [1], { backend, dtype: "f16", requiresGrad: true }).keep();
      const optimizer = new AdamW([p], { lr: 1e-2, weightDecay: 0, lossScaling: { growthInterval: 2 } });
      const seen: { scale: number; skipped: boolean; moved: boolean }[] = [];
      for (let step = 0; step < 6; step++) {
        const before = (await p.floats())[0];
        const scale = await asyncScope(async () => {
          // d loss / d p = 2: at a scale of 2^15 or more the f16 gradient is Inf (f16 stops at 65504).
          backward(optimizer.scaleLoss(ops.sum(ops.cast(ops.scale(p, 2), "f32"))));
          const used = await optimizer.lossScale()!.item();
          const clip = await stepOf(optimizer).item();
          seen.push({ scale: used, skipped: clip === 0, moved: (await p.floats())[0] !== before });
          return used;
        });
        expect(scale, name).toBeGreaterThan(0);
      }
      expect(seen, name).toEqual([
        { scale: 2 ** 16, skipped: true, moved: false },
        { scale: 2 ** 15, skipped: true, moved: false },
        { scale: 2 ** 14, skipped: false, moved: true },
        { scale: 2 ** 14, skipped: false, moved: true },
        // Two finite steps in a row doubled it: the next step overflows again.
        { scale: 2 ** 15, skipped: true, moved: false },
        { scale: 2 ** 14, skipped: false, moved: true },
      ]);
      expect(optimizer.steps).toBe(6);
      // A checkpoint carries the scale and the run of finite steps; a restored optimizer goes on from them.
      const state = await optimizer.stateDict();
      expect(state.lossScale, name).toEqual({ scale: 2 ** 14, finiteSteps: 1 });
      const restored = new AdamW([p], { lr: 1e-2, weightDecay: 0, lossScaling: { growthInterval: 2 } });
      restored.loadStateDict(state);
      expect(await restored.lossScale()!.item()).toBe(2 ** 14);
      expect((await restored.stateDict()).lossScale).toEqual(state.lossScale);
      optimizer.dispose();
      restored.dispose();
      p.dispose();
    }
  });

  it("on f32 weights, scaling by a power of two changes no bit of a step", async () => {
    for (const [name, backend] of backends()) {
      const results: number[][] = [];
      for (const lossScaling of [false, true]) {
        const w = tensor(randomArray(12, 5), [3, 4], { backend, requiresGrad: true }).keep();
        const x = tensor(randomArray(8, 6), [2, 4], { backend }).keep();
        const optimizer = new AdamW([w], { lr: 0.05, maxGradNorm: 0.5, lossScaling });
        for (let step = 0; step < 3; step++)
          scope(() => {
            backward(optimizer.scaleLoss(ops.mean(ops.square(ops.linear(x, w)))));
            stepOf(optimizer).dispose();
          });
        results.push(Array.from(await w.floats()));
        optimizer.dispose();
        w.dispose();
        x.dispose();
      }
      expect(results[1], name).toEqual(results[0]);
    }
  });

  it("rejects settings that would break the rule, naming them", () => {
    const p = tensor([1], [1], { backend: cpu, requiresGrad: true });
    const make = (lossScaling: object) => () => new AdamW([p], { lr: 1, lossScaling });
    expect(make({ growthFactor: 0.5 })).toThrow(/growthFactor must be a finite number >= 1, got 0.5/);
    expect(make({ backoffFactor: 1 })).toThrow(/backoffFactor must be in \(0, 1\), got 1/);
    expect(make({ growthInterval: 0 })).toThrow(/growthInterval must be an integer from 1 to 2\^24, got 0/);
    expect(make({ initialScale: 0 })).toThrow(/the scale must be a number from 2\^-64 to 2\^64, got 0/);
    const optimizer = new AdamW([p], { lr: 1, lossScaling: true });
    expect(() =>
      optimizer.loadStateDict({
        steps: 0,
        moments: [undefined],
        lossScale: { scale: Number.NaN, finiteSteps: 0 },
      }),
    ).toThrow(/got NaN/);
    expect(new AdamW([p], { lr: 1 }).lossScale()).toBeUndefined();
    p.dispose();
  });
});
