import { readMetrics } from "@ragen/rl-core";
import { asyncScope, backward, type Tensor, tensor } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { apoLoss } from "../src/loss.js";
import { cpu } from "./fixtures.js";

const t2 = (rows: number[][], requiresGrad = false): Tensor =>
  tensor(Float32Array.from(rows.flat()), [rows.length, rows[0]!.length], { backend: cpu, requiresGrad });
const t1 = (values: number[]): Tensor => tensor(Float32Array.from(values), [values.length], { backend: cpu });

function expectClose(actual: ArrayLike<number>, expected: readonly number[], digits = 5): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((e, i) => {
    expect(actual[i], `index ${i}`).toBeCloseTo(e, digits);
  });
}

describe("apoLoss", () => {
  // Two rows of three positions. Log-ratios [[0.5, -1, 0], [-0.1, -0.6, -6]], masked sums l = [-1, -0.7];
  // with beta2 = 0.5 and r - V = [0.7, -0.2], residuals are [-1.2, -0.15].
  const logProbs = [
    [-1, -2, -0.5],
    [-0.3, -0.7, -9],
  ];
  const refLogProbs = [
    [-1.5, -1, -0.5],
    [-0.2, -0.1, -3],
  ];
  const mask = [
    [0, 1, 1],
    [1, 1, 0],
  ];

  it("is the mean squared residual of beta2 · Σ log-ratio against r − V̂*, minus the entropy bonus", async () => {
    const metrics = await asyncScope(async () => {
      const { loss, metrics } = apoLoss(
        {
          logProbs: t2(logProbs, true),
          refLogProbs: t2(refLogProbs),
          mask: t2(mask),
          rewards: t1([1, 0]),
          vstar: t1([0.3, 0.2]),
          entropy: t2([
            [1, 2, 3],
            [4, 5, 6],
          ]),
        },
        { beta2: 0.5, entropyCoeff: 0.1 },
      );
      return { loss: await loss.item(), ...(await readMetrics(metrics)) };
    });
    // (1.44 + 0.0225) / 2 = 0.73125; masked entropy mean (2 + 3 + 4 + 5) / 4 = 3.5.
    expect(metrics["actor/apo_loss"]).toBeCloseTo(0.73125, 5);
    expect(metrics.loss).toBeCloseTo(0.73125 - 0.1 * 3.5, 5);
    expect(metrics["actor/loss"]).toBeCloseTo(metrics.loss, 6);
    expect(metrics["actor/entropy"]).toBeCloseTo(3.5, 5);
    expect(metrics["actor/log_ratio_sum"]).toBeCloseTo(-0.85, 5);
    // Token mean over the four sampled tokens: (-1 + 0 - 0.1 - 0.6) / 4.
    expect(metrics["actor/kl"]).toBeCloseTo(-0.425, 5);
    expect(metrics["actor/residual"]).toBeCloseTo(-0.675, 5);
  });

  it("has gradient 2/B · (beta2·l − (r − V̂*)) · beta2 · mask w.r.t. the policy log-probs, and none elsewhere", async () => {
    const grads = await asyncScope(async () => {
      const lp = t2(logProbs, true);
      const entropy = t2(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        true,
      );
      const { loss } = apoLoss(
        {
          logProbs: lp,
          refLogProbs: t2(refLogProbs),
          mask: t2(mask),
          rewards: t1([1, 0]),
          vstar: t1([0.3, 0.2]),
        },
        { beta2: 0.5, entropyCoeff: 0 },
      );
      backward(loss);
      return { logProbs: await lp.grad!.floats(), entropy: entropy.grad };
    });
    // Row 0: 2/2 · -1.2 · 0.5 = -0.6; row 1: 2/2 · -0.15 · 0.5 = -0.075; padding and unsampled tokens 0.
    expectClose(grads.logProbs, [0, -0.6, -0.6, -0.075, -0.075, 0]);
    expect(grads.entropy).toBeUndefined();
  });

  it("matches the analytic gradient at the default beta2 on a larger batch", async () => {
    const batch = 4;
    const seqLen = 5;
    const beta2 = 1e-3;
    const value = (b: number, t: number, salt: number) => -((((b * 7 + t * 3 + salt) % 11) + 1) / 3);
    const lpRows = Array.from({ length: batch }, (_, b) =>
      Array.from({ length: seqLen }, (_, t) => value(b, t, 0)),
    );
    const refRows = Array.from({ length: batch }, (_, b) =>
      Array.from({ length: seqLen }, (_, t) => value(b, t, 5)),
    );
    const maskRows = Array.from({ length: batch }, (_, b) =>
      Array.from({ length: seqLen }, (_, t) => Number(t > b % 3)),
    );
    const rewards = [1, 0, 0.5, -0.1];
    const vstar = [0.3, 0.7, 0.5, 0];
    const grad = await asyncScope(async () => {
      const lp = t2(lpRows, true);
      const { loss } = apoLoss(
        {
          logProbs: lp,
          refLogProbs: t2(refRows),
          mask: t2(maskRows),
          rewards: t1(rewards),
          vstar: t1(vstar),
        },
        { entropyCoeff: 0 },
      );
      backward(loss);
      return lp.grad!.floats();
    });
    const expected: number[] = [];
    for (let b = 0; b < batch; b++) {
      let l = 0;
      for (let t = 0; t < seqLen; t++) l += maskRows[b]![t]! * (lpRows[b]![t]! - refRows[b]![t]!);
      const residual = beta2 * l - (rewards[b]! - vstar[b]!);
      for (let t = 0; t < seqLen; t++) expected.push((2 / batch) * residual * beta2 * maskRows[b]![t]!);
    }
    expectClose(grad, expected, 8);
    expect(expected.some((g) => Math.abs(g) > 1e-4)).toBe(true);
  });

  it("refuses a non-positive beta2", () => {
    expect(() =>
      apoLoss(
        { logProbs: t2([[0]]), refLogProbs: t2([[0]]), mask: t2([[1]]), rewards: t1([0]), vstar: t1([0]) },
        { beta2: 0 },
      ),
    ).toThrow(/beta2/);
  });
});
