import {
  type Backend,
  createCpuBackend,
  noGrad,
  scope,
  type Tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { beforeAll, describe, expect, it } from "vitest";
import { logitsChunkTokens, Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import {
  batchOf,
  countedBackwardPeak,
  gradientsOf,
  maxAbsDiff,
  policyLoss,
  tinyShape,
} from "./helpers/policy-loss.js";

const tiny: Qwen2Shape = { ...tinyShape, vocabSize: 50, numHiddenLayers: 2 };

let gpu: Backend;
beforeAll(async () => {
  gpu = await webGpuBackend();
});

const gradients = (model: Qwen2Model, lossOf: () => Tensor) => gradientsOf(model.parameters(), lossOf);

describe("sequenceLogProbs with the head in chunks", () => {
  it("chunks only past maxLogits, in whole tokens", () => {
    expect(logitsChunkTokens(151_936)).toBe(441);
    expect(logitsChunkTokens(50, 3 * 50)).toBe(3);
    expect(logitsChunkTokens(50, 10)).toBe(1);
  });

  for (const [name, backendOf] of [
    ["CPU reference", () => createCpuBackend() as Backend],
    ["WebGPU", () => gpu],
  ] as const) {
    for (const tied of [true, false]) {
      it(`gives the log-probs, entropies and gradients of the whole head (${name}, ${tied ? "tied" : "untied"} head)`, async () => {
        const model = Qwen2Model.random({ ...tiny, tieWordEmbeddings: tied }, 3, backendOf());
        const { input, targets } = batchOf(model.config, 7, 2);
        const outputs = async () =>
          Promise.all(
            scope(() => {
              const { logProbs, entropy } = model.sequenceLogProbs(input, targets, 0.9);
              return [logProbs.keep(), entropy.keep()];
            }).map(async (t) => {
              const values = await t.floats();
              t.dispose();
              return values;
            }),
          );
        const whole = {
          values: await outputs(),
          grads: await gradients(model, () => policyLoss(model, 7, 2)),
        };
        // 14 tokens in chunks of 3: four whole chunks and a remainder.
        model.maxLogits = 3 * tiny.vocabSize;
        const chunked = {
          values: await outputs(),
          grads: await gradients(model, () => policyLoss(model, 7, 2)),
        };
        expect(maxAbsDiff(chunked.values, whole.values)).toBeLessThanOrEqual(1e-6);
        expect(whole.grads.some((g) => g.some((v) => v !== 0))).toBe(true);
        // Summed over chunks, the head's gradient adds the same terms in another order.
        expect(maxAbsDiff(chunked.grads, whole.grads)).toBeLessThanOrEqual(1e-5);
        model.dispose();
      });
    }
  }

  it("gives LoRA adapters the same gradients, with the base weights frozen (WebGPU)", async () => {
    const model = Qwen2Model.random(tiny, 7, gpu);
    model.attachLora({ rank: 4, alpha: 8, seed: 2 });
    for (const p of model.parameters())
      if (p.name?.endsWith("lora_B.weight"))
        gpu.write(
          p.buffer,
          Float32Array.from({ length: p.size }, (_, i) => 0.05 * Math.cos(i)),
        );
    const whole = await gradients(model, () => policyLoss(model, 6, 3));
    model.maxLogits = 4 * tiny.vocabSize;
    const chunked = await gradients(model, () => policyLoss(model, 6, 3));
    expect(maxAbsDiff(chunked, whole)).toBeLessThanOrEqual(1e-5);
    expect(model.param("model.embed_tokens.weight").grad).toBeUndefined();
    model.dispose();
  });

  it("gives the same values without gradients (reference log-probs)", async () => {
    const model = Qwen2Model.random(tiny, 5, createCpuBackend());
    const { input, targets } = batchOf(model.config, 9, 3);
    const logProbs = () =>
      noGrad(() => scope(() => model.sequenceLogProbs(input, targets).logProbs.keep())).floats();
    const whole = await logProbs();
    model.maxLogits = 5 * tiny.vocabSize;
    expect(await logProbs()).toEqual(whole);
    model.dispose();
  });

  it("holds a chunk's logits at its peak instead of the micro-batch's (CPU reference, counted)", () => {
    // A vocabulary 32x the hidden size (Qwen2's is 170x), where the head bounds the step.
    const wide: Qwen2Shape = { ...tiny, vocabSize: 1024 };
    const peakOf = (maxLogits: number) =>
      countedBackwardPeak(
        wide,
        (model) => {
          model.maxLogits = maxLogits;
        },
        64,
        4,
      );
    const whole = peakOf(Number.POSITIVE_INFINITY);
    const chunked = peakOf(32 * 1024); // 32 of the 256 tokens at a time
    // Whole: three 256 × 1024 tensors (logits and two gradients), 3 MiB; chunked: three of 32 rows.
    expect(whole - chunked).toBeGreaterThan(2 * 2 ** 20);
    expect(chunked).toBeLessThan(0.5 * whole);
  });
});
