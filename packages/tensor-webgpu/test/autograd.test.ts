import { beforeAll, describe, expect, it } from "vitest";
import { backward, GraphFreedError, noGrad } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import * as ops from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { scope, type Tensor } from "../src/tensor.js";
import { gradcheck } from "./gradcheck.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const cpu = createCpuBackend();
let gpu: Backend;
beforeAll(async () => {
  gpu = createWebGpuBackend(await testContext());
});

const input = (shape: number[], seed: number, scale = 1) => ({
  shape,
  values: randomArray(
    shape.reduce((a, b) => a * b, 1),
    seed,
    scale,
  ),
});
const positive = (shape: number[], seed: number) => {
  const i = input(shape, seed);
  i.values = i.values.map((v) => Math.abs(v) + 0.5);
  return i;
};
const awayFromZero = (i: { shape: number[]; values: Float32Array }) => ({
  ...i,
  values: i.values.map((v) => v + Math.sign(v) * 0.2),
});
const ids = (values: number[], backend: Backend) =>
  tensor(Int32Array.from(values), [values.length], { backend, dtype: "i32" });

/** Sum of the output weighted by fixed pseudo-random weights, so every output element matters. */
function weightedSum(y: Tensor, seed = 99): Tensor {
  const w = tensor(randomArray(y.size, seed), y.shape, { backend: y.backend });
  return ops.sum(ops.mul(y, w));
}

// Each case: inputs and a function to a scalar. Checked against finite differences on the CPU
// reference, and the WebGPU gradients checked against the CPU ones.
const cases: {
  name: string;
  inputs: () => { shape: number[]; values: Float32Array }[];
  f: (xs: Tensor[], backend: Backend) => Tensor;
}[] = [
  {
    name: "add with broadcasting",
    inputs: () => [input([2, 3], 1), input([3], 2)],
    f: ([a, b]) => weightedSum(ops.add(a!, b!)),
  },
  {
    name: "sub with broadcasting",
    inputs: () => [input([2, 1], 3), input([2, 4], 4)],
    f: ([a, b]) => weightedSum(ops.sub(a!, b!)),
  },
  {
    name: "mul",
    inputs: () => [input([3, 4], 5), input([1, 4], 6)],
    f: ([a, b]) => weightedSum(ops.mul(a!, b!)),
  },
  {
    name: "div",
    inputs: () => [input([5], 7), positive([5], 8)],
    f: ([a, b]) => weightedSum(ops.div(a!, b!)),
  },
  {
    name: "exp, log, sqrt",
    inputs: () => [positive([6], 9)],
    f: ([a]) => weightedSum(ops.add(ops.exp(a!), ops.mul(ops.log(a!), ops.sqrt(a!)))),
  },
  {
    name: "tanh, sigmoid, square",
    inputs: () => [input([7], 10)],
    f: ([a]) => weightedSum(ops.add(ops.tanh(a!), ops.mul(ops.sigmoid(a!), ops.square(a!)))),
  },
  {
    name: "affine and clamp",
    inputs: () => [input([8], 11, 2)],
    f: ([a]) => weightedSum(ops.clamp(ops.affine(a!, 1.5, 0.25), -1, 1)),
  },
  {
    name: "maximum and minimum",
    inputs: () => [input([6], 12), input([6], 13)],
    f: ([a, b]) => weightedSum(ops.add(ops.maximum(a!, b!), ops.minimum(a!, 0.1))),
  },
  {
    name: "sum and mean over axes",
    inputs: () => [input([2, 3, 4], 14)],
    f: ([a]) => weightedSum(ops.add(ops.sum(a!, 1), ops.mean(a!, [0, 1]))),
  },
  {
    name: "permute, narrow, concat",
    inputs: () => [input([2, 3, 4], 15)],
    f: ([a]) =>
      weightedSum(
        ops.concat(
          [ops.narrow(ops.permute(a!, [2, 0, 1]), 0, 1, 2), ops.transpose(ops.narrow(a!, 2, 0, 2), 1, 2)],
          0,
        ),
      ),
  },
  {
    name: "matmul",
    inputs: () => [input([3, 4], 16), input([4, 5], 17)],
    f: ([a, b]) => weightedSum(ops.matmul(a!, b!)),
  },
  {
    name: "matmul transposed, batched",
    inputs: () => [input([2, 4, 3], 18), input([2, 5, 4], 19)],
    f: ([a, b]) => weightedSum(ops.matmul(a!, b!, { transA: true, transB: true })),
  },
  {
    name: "linear with bias (weight shared over the batch)",
    inputs: () => [input([2, 3, 4], 20), input([5, 4], 21), input([5], 22)],
    f: ([x, w, b]) => weightedSum(ops.linear(x!, w!, b!)),
  },
  {
    name: "addLinear: residual + alpha · x · Wᵀ + bias in one kernel",
    inputs: () => [input([2, 3, 5], 26), input([2, 3, 4], 27), input([5, 4], 28), input([5], 29)],
    f: ([r, x, w, b]) => weightedSum(ops.addLinear(r!, x!, w!, b!, 0.75)),
  },
  {
    name: "addLinear without a bias",
    inputs: () => [input([3, 5], 30), input([3, 4], 31), input([5, 4], 32)],
    f: ([r, x, w]) => weightedSum(ops.addLinear(r!, x!, w!)),
  },
  {
    name: "rmsNorm",
    inputs: () => [input([3, 8], 23), input([8], 24)],
    f: ([x, w]) => weightedSum(ops.rmsNorm(x!, w!, 1e-6)),
  },
  {
    name: "rope",
    inputs: () => [input([2, 3, 2, 8], 25)],
    f: ([x], backend) =>
      weightedSum(
        ops.rope(x!, tensor(Int32Array.from([0, 1, 2, 5, 6, 7]), [2, 3], { backend, dtype: "i32" }), 10000),
      ),
  },
  {
    name: "attention (GQA, causal)",
    inputs: () => [input([1, 3, 4 * 4], 26), input([1, 3, 2 * 4], 27), input([1, 3, 2 * 4], 28)],
    f: ([q, k, v]) => weightedSum(ops.attention(q!, k!, v!, { numHeads: 4, numKvHeads: 2 })),
  },
  {
    name: "silu and relu (away from relu's kink)",
    inputs: () => [awayFromZero(input([9], 36, 2))],
    f: ([a]) => weightedSum(ops.add(ops.silu(a!), ops.relu(a!))),
  },
  {
    name: "swiglu",
    inputs: () => [input([10], 29, 2), input([10], 30)],
    f: ([g, u]) => weightedSum(ops.swiglu(g!, u!)),
  },
  {
    name: "embedding (repeated ids)",
    inputs: () => [input([5, 3], 31)],
    f: ([t]) => weightedSum(ops.embedding(t!, Int32Array.from([1, 4, 1, 0]), [2, 2])),
  },
  {
    name: "softmax and logSoftmax",
    inputs: () => [input([2, 5], 32, 2)],
    f: ([x]) => weightedSum(ops.add(ops.softmax(x!), ops.logSoftmax(x!))),
  },
  {
    name: "tokenLogProbs with temperature",
    inputs: () => [input([3, 6], 33, 2)],
    f: ([x], backend) => weightedSum(ops.tokenLogProbs(x!, ids([1, 5, 0], backend), 0.7)),
  },
  { name: "entropy", inputs: () => [input([3, 6], 34, 2)], f: ([x]) => weightedSum(ops.entropy(x!)) },
  {
    name: "crossEntropy ignoring -100",
    inputs: () => [input([3, 6], 35, 2)],
    f: ([x], backend) => weightedSum(ops.crossEntropy(x!, ids([2, -100, 4], backend))),
  },
];

describe("autograd gradients", () => {
  for (const c of cases) {
    it(`${c.name}: CPU autograd matches finite differences, and WebGPU matches CPU`, async () => {
      const inputs = c.inputs();
      const cpuGrads = await gradcheck(cpu, inputs, (xs) => c.f(xs, cpu));
      const xs = inputs.map((i) => tensor(i.values, i.shape, { backend: gpu, requiresGrad: true }));
      const loss = c.f(xs, gpu);
      backward(loss);
      for (let i = 0; i < xs.length; i++) {
        expectClose(await xs[i]!.grad!.floats(), cpuGrads[i]!, 1e-4, 1e-3);
        xs[i]!.dispose();
      }
      loss.dispose();
    });
  }
});

describe("autograd engine", () => {
  it("accumulates into .grad across backward calls and frees the graph after each", async () => {
    const x = tensor([1, 2, 3], [3], { backend: cpu, requiresGrad: true });
    const loss1 = ops.sum(ops.square(x));
    backward(loss1);
    expect(Array.from(await x.grad!.floats())).toEqual([2, 4, 6]);
    expect(() => backward(loss1)).toThrow(GraphFreedError);
    backward(ops.sum(x));
    expect(Array.from(await x.grad!.floats())).toEqual([3, 5, 7]);
  });

  it("records nothing under noGrad", () => {
    const x = tensor([1, 2], [2], { backend: cpu, requiresGrad: true });
    const y = noGrad(() => ops.mul(x, 3));
    expect(y.requiresGrad).toBe(false);
    expect(y.node).toBeUndefined();
  });

  it("keeps an intermediate differentiable after the user disposed it", async () => {
    const x = tensor([0.5, -1], [2], { backend: cpu, requiresGrad: true });
    const h = ops.exp(x);
    const loss = ops.sum(ops.mul(h, h));
    h.dispose();
    backward(loss);
    const g = await x.grad!.floats();
    expectClose(g, [2 * Math.exp(1), 2 * Math.exp(-2)], 1e-5, 1e-5);
  });

  it("does not leak device memory across many training steps", async () => {
    const ctx = await testContext();
    const w = tensor(randomArray(64 * 32, 1, 0.1), [64, 32], { backend: gpu, requiresGrad: true }).keep();
    const step = () =>
      scope(() => {
        const x = tensor(randomArray(16 * 32, 2), [16, 32], { backend: gpu });
        const loss = ops.mean(ops.square(ops.linear(x, w)));
        backward(loss);
        w.grad!.dispose();
        w.grad = undefined;
      });
    step();
    await ctx.sync();
    const baseline = ctx.pool.stats.inUseBytes;
    for (let i = 0; i < 50; i++) step();
    await ctx.sync();
    expect(ctx.pool.stats.inUseBytes).toBe(baseline);
    w.dispose();
  });
});
