import { attentionTuning, type Backend, type GpuContext, webGpuBackend } from "@ragen/tensor-webgpu";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Qwen2Model } from "../src/model/qwen2.js";
import { gradientsOf, maxAbsDiff, policyLoss, tinyShape } from "./helpers/policy-loss.js";

// The attention kernels' forms (the tiled kernels, or the scores materialised and the products on the
// matmul kernels) compute the same thing: a model trains the same on either, whichever kernel tuning picks.

let gpu: Backend;
beforeAll(async () => {
  gpu = await webGpuBackend();
});
afterEach(() => {
  attentionTuning.forward = "auto";
  attentionTuning.backward = "auto";
});

describe("the attention forms in a training step", () => {
  it("give the policy the gradients of the tiled kernels, with left padding (WebGPU)", async () => {
    const model = Qwen2Model.random(tinyShape, 7, gpu);
    const tiled = await gradientsOf(model.parameters(), () => policyLoss(model, 19));
    attentionTuning.forward = "matmul";
    attentionTuning.backward = "matmul";
    const ctx = (gpu as Backend & { ctx: GpuContext }).ctx;
    const dispatch = vi.spyOn(ctx, "dispatch");
    const matmul = await gradientsOf(model.parameters(), () => policyLoss(model, 19));
    const labels = dispatch.mock.calls.map(([pipeline]) => pipeline.label);
    dispatch.mockRestore();
    // Every layer's attention ran in the matmul form, forward and backward.
    for (const kernel of ["attention forward row softmax", "attention backward score gradients"])
      expect(labels.filter((l) => l === kernel)).toHaveLength(tinyShape.numHiddenLayers);
    const largest = Math.max(...tiled.map((g) => Math.max(...g.map(Math.abs))));
    expect(largest).toBeGreaterThan(0);
    expect(maxAbsDiff(matmul, tiled)).toBeLessThanOrEqual(1e-5 * largest);
    model.dispose();
  });
});
