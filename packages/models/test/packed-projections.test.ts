import {
  disableMatmulTuning,
  enableMatmulTuning,
  matmulShapeKey,
  noGrad,
  type WebGpuBackend,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
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

/** A shape whose decoding kernels take their fused forms: headDim 16, two query heads per KV head. */
const decoding: Qwen2Shape = {
  ...tiny,
  hiddenSize: 64,
  intermediateSize: 96,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
};

/** Dispatches and logits of one decoding step of `rows` sequences after a 4-token prompt. */
async function decodeStep(
  backend: WebGpuBackend,
  model: Qwen2Model,
  packed: PackedProjections,
  rows: number,
) {
  const vocab = model.config.vocabSize;
  const cache = model.createCache(rows, 8);
  const start = new Int32Array(rows);
  const prompt = Int32Array.from({ length: rows * 4 }, (_, i) => (i * 5) % vocab);
  const positions = Int32Array.from({ length: rows * 4 }, (_, i) => i % 4);
  noGrad(() => model.run({ ids: prompt, batch: rows, seqLen: 4, start }, positions, cache, packed).dispose());
  await backend.ctx.sync();
  const before = backend.ctx.stats.dispatches;
  const ids = Int32Array.from({ length: rows }, (_, i) => i + 1);
  const logits = noGrad(() =>
    model.run({ ids, batch: rows, seqLen: 1, start }, new Int32Array(rows).fill(4), cache, packed),
  );
  const dispatches = backend.ctx.stats.dispatches - before;
  const values = await logits.floats();
  logits.dispose();
  cache.dispose();
  return { dispatches, values };
}

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

  it("decodes with each norm and the SwiGLU folded into the products where matvec runs them: 3 dispatches fewer a layer", async () => {
    const backend = (await webGpuBackend()) as WebGpuBackend;
    const shape = decoding;
    const model = Qwen2Model.random(shape, 5, backend);
    const packed = model.packProjections();
    const rows = 3;
    // "matvec" for the decoding step's stacked products, as a GPU's fixed rule chooses for few rows.
    const table = enableMatmulTuning(backend.ctx);
    const qkv = shape.hiddenSize + 2 * 2 * 16;
    for (const [n, k] of [
      [qkv, 64],
      [192, 64],
      [64, 96],
    ] as const) {
      const s = { batch: 1, m: rows, n, k, transA: false, transB: true, dtype: "f32" } as const;
      table.set({
        key: matmulShapeKey(s),
        shape: s,
        choice: { variant: "matvec" },
        candidates: [],
        rejected: [],
      });
    }
    try {
      const folded = await decodeStep(backend, model, packed, rows);
      const saved = backend.linearOfInput;
      delete backend.linearOfInput; // the same products, with the norms and the SwiGLU as their own kernels
      const separate = await decodeStep(backend, model, packed, rows);
      backend.linearOfInput = saved;
      expect(separate.dispatches - folded.dispatches).toBe(3 * shape.numHiddenLayers);
      const worst = Math.max(...folded.values.map((v, i) => Math.abs(v - separate.values[i]!)));
      expect(worst).toBeLessThan(1e-5);
    } finally {
      disableMatmulTuning(backend.ctx);
      packed.dispose();
      model.dispose();
    }
  });

  it("decodes each layer's rotation, cache append and attention in one kernel, to the same bits", async () => {
    const backend = (await webGpuBackend()) as WebGpuBackend;
    const model = Qwen2Model.random(decoding, 6, backend);
    const packed = model.packProjections();
    try {
      const fused = await decodeStep(backend, model, packed, 3);
      const saved = backend.decodeAttentionRoped;
      delete backend.decodeAttentionRoped; // ropeAppendPacked, then decodeAttention
      const separate = await decodeStep(backend, model, packed, 3);
      backend.decodeAttentionRoped = saved;
      expect(separate.dispatches - fused.dispatches).toBe(tiny.numHiddenLayers);
      expect(Array.from(fused.values)).toEqual(Array.from(separate.values));
    } finally {
      packed.dispose();
      model.dispose();
    }
  });
});
