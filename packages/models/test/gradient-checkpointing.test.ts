import {
  type Backend,
  backward,
  createCpuBackend,
  createWebGpuBackend,
  GpuContext,
  mul,
  scope,
  sum,
  type Tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { beforeAll, describe, expect, it } from "vitest";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import { Qwen2ValueModel } from "../src/model/value.js";
import {
  batchOf,
  countedBackwardPeak,
  gradientsOf,
  maxAbsDiff,
  policyLoss,
  tinyShape,
  unevenWeights,
} from "./helpers/policy-loss.js";

const tiny = tinyShape;

let gpu: Backend;
beforeAll(async () => {
  gpu = await webGpuBackend();
});

/** A critic-like loss: weighted values. */
function valueLoss(critic: Qwen2ValueModel, seqLen: number): Tensor {
  const { input } = batchOf(tiny, seqLen);
  return sum(mul(critic.values(input), unevenWeights(critic.scoreWeight, [input.batch, input.seqLen], 3)));
}

async function compare(params: Tensor[], setRecompute: (on: boolean) => void, lossOf: () => Tensor) {
  setRecompute(false);
  const plain = await gradientsOf(params, lossOf);
  setRecompute(true);
  const recomputed = await gradientsOf(params, lossOf);
  setRecompute(false);
  expect(plain.some((g) => g.some((v) => v !== 0))).toBe(true);
  return { plain, recomputed };
}

describe("gradient checkpointing (activation recomputation per decoder layer)", () => {
  for (const [name, backendOf] of [
    ["CPU reference", () => createCpuBackend() as Backend],
    ["WebGPU", () => gpu],
  ] as const) {
    it(`gives the policy the same gradients as keeping every activation (${name})`, async () => {
      const model = Qwen2Model.random(tiny, 3, backendOf());
      const { plain, recomputed } = await compare(
        model.parameters(),
        (on) => {
          model.gradientCheckpointing = on;
        },
        () => policyLoss(model, 6),
      );
      expect(maxAbsDiff(recomputed, plain)).toBeLessThanOrEqual(1e-6);
      model.dispose();
    });
  }

  it("gives the value model the same gradients (WebGPU)", async () => {
    const critic = Qwen2ValueModel.random(tiny, 5, gpu);
    const { plain, recomputed } = await compare(
      critic.parameters(),
      (on) => {
        critic.gradientCheckpointing = on;
      },
      () => valueLoss(critic, 6),
    );
    expect(critic.backbone.gradientCheckpointing).toBe(false);
    expect(maxAbsDiff(recomputed, plain)).toBeLessThanOrEqual(1e-6);
    critic.dispose();
  });

  it("gives LoRA adapters the same gradients, with the base weights frozen (WebGPU)", async () => {
    const model = Qwen2Model.random(tiny, 7, gpu);
    model.attachLora({ rank: 4, alpha: 8, seed: 2 });
    // B starts at zero, which would leave A's gradient zero: give B values so both are exercised.
    for (const p of model.parameters()) {
      if (p.name?.endsWith("lora_B.weight")) {
        const values = Float32Array.from({ length: p.size }, (_, i) => 0.05 * Math.cos(i));
        gpu.write(p.buffer, values);
      }
    }
    const { plain, recomputed } = await compare(
      model.parameters(),
      (on) => {
        model.gradientCheckpointing = on;
      },
      () => policyLoss(model, 6),
    );
    expect(maxAbsDiff(recomputed, plain)).toBeLessThanOrEqual(1e-6);
    expect(model.param("model.layers.0.self_attn.q_proj.weight").grad).toBeUndefined();
    model.dispose();
  });

  it("leaves generation-style runs without grad unchanged", async () => {
    const model = Qwen2Model.random(tiny, 3, createCpuBackend());
    const { input } = batchOf(tiny, 5);
    const before = await scope(() => model.logits(input)).floats();
    model.gradientCheckpointing = true;
    const after = await scope(() => model.logits(input)).floats();
    expect(after).toEqual(before);
    model.dispose();
  });

  const deep: Qwen2Shape = { ...tiny, numHiddenLayers: 8 };

  // Peaks of one forward and backward above what the model itself holds: activations, logits and the
  // gradients (which recomputation does not change: 8 layers of 32 wide, against 4 × 32 tokens).
  const stepPeak = (recompute: boolean) =>
    countedBackwardPeak(
      deep,
      (model) => {
        model.gradientCheckpointing = recompute;
      },
      32,
      4,
    );

  it("holds measurably less at its peak for a deeper model (CPU reference, counted allocations)", () => {
    const plain = stepPeak(false);
    const recomputed = stepPeak(true);
    expect(recomputed).toBeLessThan(plain * 0.6);
  });

  it("holds measurably less at its peak for a deeper model (WebGPU, the buffer pool's own peak)", async () => {
    const peakOf = async (recompute: boolean) => {
      const ctx = await GpuContext.create();
      const backend = createWebGpuBackend(ctx);
      const model = Qwen2Model.random(deep, 3, backend);
      model.gradientCheckpointing = recompute;
      const held = ctx.pool.stats.inUseBytes;
      scope(() => backward(policyLoss(model, 32, 4)));
      await backend.sync();
      const peak = ctx.pool.stats.peakInUseBytes - held;
      model.dispose();
      ctx.destroy();
      return peak;
    };
    const plain = await peakOf(false);
    const recomputed = await peakOf(true);
    expect(recomputed).toBeLessThan(plain * 0.6);
  });
});
