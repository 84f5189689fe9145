import { readMetrics } from "@ragen/rl-core";
import { backward, createCpuBackend, type Tensor, tensor } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { actorLoss, aggregateLoss, klPenalty, ppoPolicyLoss, valueLoss } from "../src/losses.js";
import { expectClose } from "./helpers.js";

const backend = createCpuBackend();
const t = (data: number[][], requiresGrad = false): Tensor =>
  tensor(data, undefined, { backend, requiresGrad });

describe("aggregateLoss", () => {
  const values = [
    [1, 2, 3],
    [4, 5, 6],
  ];
  const mask = [
    [1, 1, 0],
    [1, 0, 0],
  ];
  it.each([
    ["token-mean", (1 + 2 + 4) / 3],
    ["seq-mean-token-sum", (3 + 4) / 2],
    ["seq-mean-token-mean", (1.5 + 4) / 2],
  ] as const)("%s", async (aggregation, expected) => {
    expect(await aggregateLoss(t(values), t(mask), aggregation).item()).toBeCloseTo(expected, 5);
  });
});

describe("ppoPolicyLoss", () => {
  // Old log-probs are 0, so ratio = exp(logProbs). One case per branch (clip range [0.8, 1.28], c = 3):
  //  t0 r 1.1  A  1: inside, loss -1.1, grad -A r = -1.1
  //  t1 r 1.5  A  1: clipped high, loss -1.28, grad 0
  //  t2 r 0.5  A  1: below the floor but A > 0 keeps the unclipped -0.5, grad -0.5
  //  t3 r 5    A -1: clip branch gives 5, dual clip caps it at 3, grad 0
  //  t4 r 0.7  A -1: clipped low, loss 0.8, grad 0
  //  t5 r 1.2  A -2: inside, loss 2.4, grad 2.4
  //  t6 masked out
  const ratios = [1.1, 1.5, 0.5, 5, 0.7, 1.2, 9];
  const advantages = [1, 1, 1, -1, -1, -2, 1];
  const mask = [1, 1, 1, 1, 1, 1, 0];
  const make = () => ({
    logProbs: t([ratios.map(Math.log)], true),
    oldLogProbs: t([ratios.map(() => 0)]),
    advantages: t([advantages]),
    mask: t([mask]),
  });

  it("matches the hand-computed loss, gradient and metrics", async () => {
    const inputs = make();
    const { loss, metrics } = ppoPolicyLoss(inputs);
    expect(await loss.item()).toBeCloseTo((-1.1 - 1.28 - 0.5 + 3 + 0.8 + 2.4) / 6, 5);
    backward(loss);
    expectClose(await inputs.logProbs.grad!.floats(), [-1.1 / 6, 0, -0.5 / 6, 0, 0, 2.4 / 6, 0]);
    const read = await readMetrics(metrics);
    expect(read["actor/pg_loss"]).toBeCloseTo(3.32 / 6, 5);
    expect(read["actor/pg_clipfrac"]).toBeCloseTo(2 / 6, 5); // t1 and t4
    expect(read["actor/pg_clipfrac_lower"]).toBeCloseTo(1 / 6, 5); // t3
    const meanLogRatio = ratios.slice(0, 6).reduce((s, r) => s + Math.log(r), 0) / 6;
    expect(read["actor/ppo_kl"]).toBeCloseTo(-meanLogRatio, 5);
  });

  it("without dual clip (c huge) the negative-advantage outlier costs its full ratio", async () => {
    const { loss } = ppoPolicyLoss(make(), { dualClip: 1e9 });
    expect(await loss.item()).toBeCloseTo((-1.1 - 1.28 - 0.5 + 5 + 0.8 + 2.4) / 6, 5);
  });

  it("symmetric clipping (0.2 / 0.2) caps t1's ratio at 1.2 instead of 1.28", async () => {
    const { loss } = ppoPolicyLoss(make(), { clipRatioHigh: 0.2 });
    expect(await loss.item()).toBeCloseTo((-1.1 - 1.2 - 0.5 + 3 + 0.8 + 2.4) / 6, 5);
  });

  it("scales each token's clipped term by its importance weight, a constant of the gradient", async () => {
    const weights = [2, 0.5, 1, 1, 1, 0.25, 7];
    const inputs = { ...make(), importanceWeights: t([weights]) };
    const { loss } = ppoPolicyLoss(inputs);
    expect(await loss.item()).toBeCloseTo((-1.1 * 2 - 1.28 * 0.5 - 0.5 + 3 + 0.8 + 2.4 * 0.25) / 6, 5);
    backward(loss);
    expectClose(await inputs.logProbs.grad!.floats(), [
      (-1.1 * 2) / 6,
      0,
      -0.5 / 6,
      0,
      0,
      (2.4 * 0.25) / 6,
      0,
    ]);
  });

  it("rejects a dual clip that is not above 1", () => {
    expect(() => ppoPolicyLoss(make(), { dualClip: 1 })).toThrow(RangeError);
  });
});

describe("klPenalty", () => {
  // logp - ref = [0.5, -1]
  const logp = [[-1, -2]];
  const ref = [[-1.5, -1]];
  it.each([
    ["kl", [0.5, -1]],
    ["abs", [0.5, 1]],
    ["mse", [0.125, 0.5]],
    ["low_var_kl", [Math.exp(-0.5) + 0.5 - 1, Math.exp(1) - 1 - 1]],
  ] as const)("%s", async (type, expected) => {
    expectClose(await klPenalty(t(logp), t(ref), type).floats(), [...expected]);
  });

  it("clamps low_var_kl to 10 and differentiates it as 1 - exp(ref - logp)", async () => {
    expectClose(await klPenalty(t([[-30]]), t([[0]]), "low_var_kl").floats(), [10]);
    const x = t(logp, true);
    backward(aggregateLoss(klPenalty(x, t(ref), "low_var_kl"), t([[1, 0]]), "seq-mean-token-sum"));
    expectClose(await x.grad!.floats(), [1 - Math.exp(-0.5), 0]);
  });
});

describe("actorLoss", () => {
  it("adds klCoeff * kl and subtracts entropyCoeff * entropy", async () => {
    const inputs = {
      logProbs: t([[Math.log(1.1), -1]], true),
      oldLogProbs: t([[0, -1]]),
      advantages: t([[1, 0]]),
      mask: t([[1, 1]]),
      entropy: t([[2, 4]]),
      refLogProbs: t([[0, -1]]),
    };
    const { loss, metrics } = actorLoss(inputs, { entropyCoeff: 0.01, klCoeff: 0.5, klType: "kl" });
    // pg = (-1.1 + 0) / 2, entropy = 3, kl = (ln 1.1 + 0) / 2
    const pg = -1.1 / 2;
    const kl = Math.log(1.1) / 2;
    expect(await loss.item()).toBeCloseTo(pg - 0.01 * 3 + 0.5 * kl, 5);
    const read = await readMetrics(metrics);
    expect(read["actor/entropy"]).toBeCloseTo(3, 5);
    expect(read["actor/kl_loss"]).toBeCloseTo(kl, 5);
    expect(read["actor/pg_loss"]).toBeCloseTo(pg, 5);
  });
});

describe("valueLoss", () => {
  //  t0 v 1.0 old 0.8 R 0.5: inside the clip, errors 0.25 / 0.25, grad (v - R) / 3
  //  t1 v 2.0 old 1.0 R 0:   v_clip 1.5, errors 4 / 2.25, unclipped wins, grad 2 / 3
  //  t2 v 1.2 old 0   R 1:   v_clip 0.5, errors 0.04 / 0.25, clipped wins, grad 0
  it("matches the hand-computed loss, gradient and clip fraction", async () => {
    const values = t([[1, 2, 1.2]], true);
    const { loss, metrics } = valueLoss({
      values,
      oldValues: t([[0.8, 1, 0]]),
      returns: t([[0.5, 0, 1]]),
      mask: t([[1, 1, 1]]),
    });
    expect(await loss.item()).toBeCloseTo((0.5 * (0.25 + 4 + 0.25)) / 3, 5);
    backward(loss);
    expectClose(await values.grad!.floats(), [0.5 / 3, 2 / 3, 0]);
    const read = await readMetrics(metrics);
    expect(read["critic/vf_clipfrac"]).toBeCloseTo(1 / 3, 5);
    expect(read["critic/vf_loss"]).toBeCloseTo(0.75, 5);
    expect(read["critic/vpred_mean"]).toBeCloseTo(4.2 / 3, 5);
  });
});
