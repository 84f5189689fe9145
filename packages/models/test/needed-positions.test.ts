// sequenceLogProbs with a mask of the positions a loss reads: the head runs on those alone.
import {
  add,
  type Backend,
  backward,
  createCpuBackend,
  mul,
  noGrad,
  scope,
  sum,
  type Tensor,
  tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { beforeAll, describe, expect, it } from "vitest";
import { Qwen2Model, type Qwen2Shape, type TokenBatch } from "../src/model/qwen2.js";
import { countingBackend } from "./helpers/counting-backend.js";
import { batchOf, gradientsOf, maxAbsDiff, tinyShape, unevenWeights } from "./helpers/policy-loss.js";

const tiny: Qwen2Shape = { ...tinyShape, vocabSize: 50, numHiddenLayers: 2 };

let gpu: Backend;
beforeAll(async () => {
  gpu = await webGpuBackend();
});

/** As a rollout's rows look: a prompt, then sampled tokens with an environment's turn between them. */
function responseMask(rows: number, seqLen: number): Float32Array {
  return Float32Array.from({ length: rows * seqLen }, (_, i) => {
    const t = i % seqLen;
    return t >= 3 && t % 4 !== 0 ? 1 : 0;
  });
}

/** A PPO-shaped loss over the masked positions, the mask passed on to the model when `needed`. */
function maskedLoss(
  model: Qwen2Model,
  input: TokenBatch,
  targets: Int32Array,
  mask: Float32Array,
  needed: boolean,
): Tensor {
  const like = model.param("model.embed_tokens.weight");
  const shape = [input.batch, input.seqLen];
  const { logProbs, entropy } = model.sequenceLogProbs(input, targets, 0.9, needed ? mask : undefined);
  const maskTensor = tensor(mask, shape, { backend: like.backend });
  return add(
    sum(mul(mul(logProbs, unevenWeights(like, shape, 1)), maskTensor)),
    sum(mul(mul(entropy, unevenWeights(like, shape, 2)), maskTensor)),
  );
}

async function outputs(
  model: Qwen2Model,
  input: TokenBatch,
  targets: Int32Array,
  needed?: Float32Array,
): Promise<Float32Array[]> {
  const kept = noGrad(() =>
    scope(() => {
      const { logProbs, entropy } = model.sequenceLogProbs(input, targets, 0.9, needed);
      return [logProbs.keep(), entropy.keep()];
    }),
  );
  const values = await Promise.all(kept.map((t) => t.floats()));
  for (const t of kept) t.dispose();
  return values;
}

describe("sequenceLogProbs on the needed positions alone", () => {
  for (const [name, backendOf] of [
    ["CPU reference", () => createCpuBackend() as Backend],
    ["WebGPU", () => gpu],
  ] as const) {
    for (const chunked of [false, true]) {
      it(`gives the whole head's values there, zeros elsewhere, and the same gradients (${name}${chunked ? ", head in chunks" : ""})`, async () => {
        const model = Qwen2Model.random(tiny, 4, backendOf());
        const { input, targets } = batchOf(model.config, 9, 3);
        const mask = responseMask(3, 9);
        const whole = await outputs(model, input, targets);
        const wholeGrads = await gradientsOf(model.parameters(), () =>
          maskedLoss(model, input, targets, mask, false),
        );
        // 18 of 27 positions needed; in chunks of 4 tokens: four whole chunks and a remainder.
        if (chunked) model.maxLogits = 4 * tiny.vocabSize;
        const picked = await outputs(model, input, targets, mask);
        const pickedGrads = await gradientsOf(model.parameters(), () =>
          maskedLoss(model, input, targets, mask, true),
        );
        for (const [i, values] of picked.entries()) {
          const expected = whole[i]!.map((v, t) => (mask[t] ? v : 0));
          expect(maxAbsDiff([values], [expected])).toBeLessThanOrEqual(1e-5);
          expect(values.filter((_, t) => !mask[t]).every((v) => v === 0)).toBe(true);
        }
        expect(wholeGrads.some((g) => g.some((v) => v !== 0))).toBe(true);
        expect(maxAbsDiff(pickedGrads, wholeGrads)).toBeLessThanOrEqual(1e-5);
        model.dispose();
      });
    }
  }

  it("gives LoRA adapters the same gradients (WebGPU)", async () => {
    const model = Qwen2Model.random(tiny, 6, gpu);
    model.attachLora({ rank: 4, alpha: 8, seed: 1 });
    for (const p of model.parameters())
      if (p.name?.endsWith("lora_B.weight"))
        gpu.write(
          p.buffer,
          Float32Array.from({ length: p.size }, (_, i) => 0.05 * Math.sin(i)),
        );
    const { input, targets } = batchOf(model.config, 8, 2);
    const mask = responseMask(2, 8);
    const whole = await gradientsOf(model.parameters(), () => maskedLoss(model, input, targets, mask, false));
    const picked = await gradientsOf(model.parameters(), () => maskedLoss(model, input, targets, mask, true));
    expect(whole.some((g) => g.some((v) => v !== 0))).toBe(true);
    expect(maxAbsDiff(picked, whole)).toBeLessThanOrEqual(1e-5);
    model.dispose();
  });

  it("still connects a loss to the weights when no position is needed", async () => {
    const model = Qwen2Model.random(tiny, 2, createCpuBackend());
    const { input, targets } = batchOf(model.config, 5, 2);
    const none = new Float32Array(10);
    const [logProbs] = await outputs(model, input, targets, none);
    expect(logProbs!.subarray(1).every((v) => v === 0)).toBe(true);
    expect(logProbs![0]).toBeLessThan(0);
    const grads = await gradientsOf(model.parameters(), () => maskedLoss(model, input, targets, none, true));
    expect(grads.every((g) => g.every((v) => v === 0))).toBe(true);
    model.dispose();
  });

  it("rejects a mask that does not cover the batch", () => {
    const model = Qwen2Model.random(tiny, 2, createCpuBackend());
    const { input, targets } = batchOf(model.config, 5, 2);
    expect(() => model.sequenceLogProbs(input, targets, 1, new Float32Array(9))).toThrow(
      /a mask of 9 for 2x5 positions/,
    );
    model.dispose();
  });

  it("holds the needed positions' logits at its peak, not the batch's (CPU reference, counted)", () => {
    // A vocabulary 32x the hidden size (Qwen2's is 170x), where the head bounds the step.
    const wide: Qwen2Shape = { ...tiny, vocabSize: 1024 };
    const [rows, seqLen] = [4, 64];
    // A quarter of the positions sampled, as after a long prompt.
    const mask = Float32Array.from({ length: rows * seqLen }, (_, i) => (i % seqLen >= 48 ? 1 : 0));
    const peakOf = (needed: boolean) => {
      const counter = countingBackend(createCpuBackend());
      const model = Qwen2Model.random(wide, 3, counter.backend);
      model.maxLogits = Number.POSITIVE_INFINITY;
      const { input, targets } = batchOf(model.config, seqLen, rows);
      const base = counter.liveBytes();
      counter.resetPeak();
      scope(() => backward(maskedLoss(model, input, targets, mask, needed)));
      const peak = counter.peakBytes() - base;
      model.dispose();
      return peak;
    };
    const whole = peakOf(false);
    const picked = peakOf(true);
    // Whole: 256 × 1024 logits and their gradients (3 MiB); picked: 64 rows of them.
    expect(whole - picked).toBeGreaterThan(2 * 2 ** 20);
    expect(picked).toBeLessThan(0.5 * whole);
  });
});
