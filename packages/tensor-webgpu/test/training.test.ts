import { beforeAll, describe, expect, it } from "vitest";
import { backward } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import * as ops from "../src/ops/index.js";
import { AdamW } from "../src/optim.js";
import { tensor } from "../src/runtime.js";
import { asyncScope, type Tensor } from "../src/tensor.js";
import { randomArray, testContext } from "./helpers.js";

let gpu: Backend;
beforeAll(async () => {
  gpu = createWebGpuBackend(await testContext());
});

const param = (shape: number[], seed: number, scale: number) =>
  tensor(
    randomArray(
      shape.reduce((a, b) => a * b, 1),
      seed,
      scale,
    ),
    shape,
    { backend: gpu, requiresGrad: true },
  ).keep();

async function train(
  params: Tensor[],
  steps: number,
  lr: number,
  lossOf: (step: number) => Tensor,
): Promise<number[]> {
  const optimizer = new AdamW(params, { lr, weightDecay: 0, maxGradNorm: 1 });
  const losses: number[] = [];
  for (let step = 0; step < steps; step++) {
    const value = await asyncScope(async () => {
      const loss = lossOf(step);
      backward(loss);
      const { gradNorm, clipScale } = optimizer.step();
      optimizer.zeroGrad();
      const v = await loss.item();
      gradNorm.dispose();
      clipScale.dispose();
      return v;
    });
    losses.push(value);
  }
  optimizer.dispose();
  return losses;
}

describe("training on the GPU", () => {
  it("a two-layer MLP fits a nonlinear function (loss falls 10x)", async () => {
    // y = sin(3 x0) * x1 on 64 fixed points.
    const n = 64;
    const xs = randomArray(n * 2, 7);
    const ys = Float32Array.from({ length: n }, (_, i) => Math.sin(3 * xs[2 * i]!) * xs[2 * i + 1]!);
    const x = tensor(xs, [n, 2], { backend: gpu }).keep();
    const y = tensor(ys, [n, 1], { backend: gpu }).keep();
    const w1 = param([32, 2], 1, 1);
    const b1 = param([32], 2, 0.1);
    const w2 = param([1, 32], 3, 0.2);
    const losses = await train([w1, b1, w2], 300, 0.02, () => {
      const prediction = ops.linear(ops.tanh(ops.linear(x, w1, b1)), w2);
      return ops.mean(ops.square(ops.sub(prediction, y)));
    });
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 10);
    for (const t of [x, y, w1, b1, w2]) t.dispose();
  });

  it("a tiny attention block learns to copy the previous token (cross-entropy falls below 0.3)", async () => {
    const vocab = 8;
    const dim = 16;
    const seq = 6;
    const batch = 8;
    const embed = param([vocab, dim], 11, 0.5);
    const wq = param([dim, dim], 12, 0.3);
    const wk = param([dim, dim], 13, 0.3);
    const wv = param([dim, dim], 14, 0.3);
    const head = param([vocab, dim], 15, 0.3);
    const positionTable = param([seq, dim], 16, 0.5);
    const positions = Int32Array.from({ length: batch * seq }, (_, i) => i % seq);
    const losses = await train([embed, wq, wk, wv, head, positionTable], 250, 0.03, (step) => {
      // Random sequences; the target at t is the token at t-1 (ignored at t = 0).
      const tokens = Int32Array.from(
        { length: batch * seq },
        (_, i) => (Math.imul(i + 1, 2654435761 + step) >>> 29) % vocab,
      );
      const targets = Int32Array.from(tokens, (_, i) => (i % seq === 0 ? -100 : tokens[i - 1]!));
      const h = ops.add(
        ops.embedding(embed, tokens, [batch, seq]),
        ops.embedding(positionTable, positions, [batch, seq]),
      );
      const attended = ops.attention(ops.linear(h, wq), ops.linear(h, wk), ops.linear(h, wv), {
        numHeads: 2,
        numKvHeads: 2,
      });
      const logits = ops.linear(ops.add(attended, h), head);
      const t = tensor(targets, [batch * seq], { backend: gpu, dtype: "i32" });
      const perToken = ops.crossEntropy(ops.reshape(logits, [batch * seq, vocab]), t);
      return ops.scale(ops.sum(perToken), 1 / (batch * (seq - 1)));
    });
    const last = losses.slice(-10).reduce((a, b) => a + b, 0) / 10;
    expect(losses[0]!).toBeGreaterThan(1.5);
    expect(last).toBeLessThan(0.3);
    for (const t of [embed, wq, wk, wv, head, positionTable]) t.dispose();
  });
});

describe("AdamW checkpoints", () => {
  it("a restored state continues exactly where the saved one left off", async () => {
    const target = tensor(randomArray(24, 3), [4, 6], { backend: gpu }).keep();
    const lossOf = (w: Tensor) => ops.mean(ops.mul(ops.sub(w, target), ops.sub(w, target)));
    const stepOnce = async (optimizer: AdamW, w: Tensor) =>
      asyncScope(async () => {
        backward(lossOf(w));
        const { gradNorm, clipScale } = optimizer.step();
        optimizer.zeroGrad();
        gradNorm.dispose();
        clipScale.dispose();
      });
    const original = param([4, 6], 1, 1);
    const first = new AdamW([original], { lr: 0.05 });
    for (let i = 0; i < 3; i++) await stepOnce(first, original);
    const saved = await first.stateDict();
    expect(saved.steps).toBe(3);

    const copy = tensor(await original.floats(), [4, 6], { backend: gpu, requiresGrad: true }).keep();
    const resumed = new AdamW([copy], { lr: 0.05 });
    resumed.loadStateDict(saved);
    // Bias correction depends on the step count and the moments on the history: both must carry over.
    for (let i = 0; i < 2; i++) {
      await stepOnce(first, original);
      await stepOnce(resumed, copy);
    }
    expect(Array.from(await copy.floats())).toEqual(Array.from(await original.floats()));
    const fresh = new AdamW([copy], { lr: 0.05 });
    expect(() => fresh.loadStateDict({ steps: 1, moments: [] })).toThrow(/1 parameters|0 parameters/);
    for (const o of [first, resumed, fresh]) o.dispose();
  });

  it("moments(i) is one parameter's state on the device, as stateDict copies it", async () => {
    const trained = param([3, 2], 1, 5);
    const untouched = param([2], 1, 6);
    const optimizer = new AdamW([trained, untouched], { lr: 0.05 });
    await asyncScope(async () => {
      backward(ops.sum(ops.mul(trained, trained)));
      const { gradNorm, clipScale } = optimizer.step();
      gradNorm.dispose();
      clipScale.dispose();
    });
    const saved = await optimizer.stateDict();
    const moments = optimizer.moments(0)!;
    expect(moments.m.shape).toEqual([3, 2]);
    expect(Array.from(await moments.m.floats())).toEqual(Array.from(saved.moments[0]!.m));
    expect(Array.from(await moments.v.floats())).toEqual(Array.from(saved.moments[0]!.v));
    expect(optimizer.moments(1)).toBeUndefined();
    expect(() => optimizer.moments(2)).toThrow(/no parameter 2 of 2/);
    optimizer.dispose();
  });
});
