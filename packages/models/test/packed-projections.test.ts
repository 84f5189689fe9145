import { type WebGpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { PackedProjections } from "../src/model/packed-projections.js";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";

const tiny: Qwen2Shape = {
  vocabSize: 16,
  hiddenSize: 8,
  intermediateSize: 12,
  numHiddenLayers: 2,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: true,
};

describe("PackedProjections", () => {
  it("stacks q/k/v and gate/up rows in order, with the biases side by side", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 3, backend);
    const packed = model.packProjections();
    try {
      const layer = packed.layers[1]!;
      const rows = async (name: string) => Array.from(await model.param(name).floats());
      const attention = "model.layers.1.self_attn";
      expect(layer.qkvWeight.shape).toEqual([8 + 2 * 4, 8]);
      expect(Array.from(await layer.qkvWeight.floats())).toEqual([
        ...(await rows(`${attention}.q_proj.weight`)),
        ...(await rows(`${attention}.k_proj.weight`)),
        ...(await rows(`${attention}.v_proj.weight`)),
      ]);
      expect(layer.qkvBias?.shape).toEqual([16]);
      expect(Array.from(await layer.gateUpWeight.floats())).toEqual([
        ...(await rows("model.layers.1.mlp.gate_proj.weight")),
        ...(await rows("model.layers.1.mlp.up_proj.weight")),
      ]);
      expect(layer.oWeight).toBeUndefined();
      expect(packed.withAdapters).toBe(false);
    } finally {
      packed.dispose();
      model.dispose();
    }
  });

  it("names a layer whose q, k and v disagree about a bias, and frees what it had stacked", async () => {
    const backend = (await webGpuBackend()) as WebGpuBackend;
    const model = Qwen2Model.random(tiny, 3, backend);
    await backend.ctx.sync();
    const inUse = backend.ctx.pool.stats.inUseBytes;
    const bias = (name: string) =>
      name === "model.layers.1.self_attn.k_proj.bias" ? undefined : model.param(name);
    expect(() => PackedProjections.build(2, (name) => model.param(name), bias)).toThrow(
      "model.layers.1.self_attn: only some of the q, k and v projections have a bias",
    );
    await backend.ctx.sync();
    expect(backend.ctx.pool.stats.inUseBytes).toBe(inUse);
    model.dispose();
  });
});
