import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG, Qwen2Model, serializeSafetensors } from "@ragen/models";
import { createCpuBackend, noGrad, tensor, writeSlice } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { ADAPTER_WEIGHTS_FILE, loadLoraAdapter, saveLoraAdapter } from "../src/node/lora-adapter.js";

const config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  vocabSize: 16,
  hiddenSize: 8,
  intermediateSize: 12,
  numHiddenLayers: 2,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  headDim: 4,
};
const cpu = createCpuBackend();
const root = mkdtempSync(join(tmpdir(), "lora-adapter-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const adapterConfig = {
  rank: 2,
  alpha: 4,
  targets: ["q_proj" as const, "down_proj" as const],
  baseModel: "tiny",
};

/** A model with adapters whose B matrices are non-zero, so a reload that dropped them would show. */
function adaptedModel() {
  const model = Qwen2Model.random(config, 1, cpu);
  const adapters = model.attachLora({ ...adapterConfig, seed: 2 });
  noGrad(() => {
    adapters.parameters().forEach((parameter, i) => {
      const values = Float32Array.from({ length: parameter.size }, (_, j) => (i + 1) * 0.01 + j * 1e-3);
      const source = tensor(values, parameter.shape, { backend: cpu });
      writeSlice(parameter, source, 0, 0);
      source.dispose();
    });
  });
  return { model, adapters };
}

describe("LoRA adapter folders", () => {
  it("hold PEFT's tensors with their shapes, the bytes of the whole-file writer, and load back", async () => {
    const { adapters } = adaptedModel();
    const dir = join(root, "adapter");
    await saveLoraAdapter(dir, adapters, adapterConfig);

    const state = await adapters.stateDict();
    const expected = serializeSafetensors(
      new Map(
        [...adapters.peftWeights()].map(([name, weight]) => [
          name,
          { dtype: "F32" as const, shape: weight.shape, data: state.get(name)! },
        ]),
      ),
      { format: "pt" },
    );
    expect(Buffer.from(readFileSync(join(dir, ADAPTER_WEIGHTS_FILE))).equals(Buffer.from(expected))).toBe(
      true,
    );
    const q = adapters.peftWeights().get("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")!;
    expect(q.shape).toEqual([2, config.hiddenSize]);

    const reloaded = loadLoraAdapter(Qwen2Model.random(config, 1, cpu), dir);
    expect(await reloaded.stateDict()).toEqual(state);
  });

  it("replaces an adapter folder in place and leaves no temporary folder behind", async () => {
    const dir = join(root, "replaced");
    await saveLoraAdapter(dir, adaptedModel().adapters, adapterConfig);
    await saveLoraAdapter(dir, adaptedModel().adapters, { ...adapterConfig, baseModel: "other" });
    expect(readdirSync(root).filter((name) => name.includes("replaced"))).toEqual(["replaced"]);
    expect(existsSync(join(dir, ADAPTER_WEIGHTS_FILE))).toBe(true);
    expect(readFileSync(join(dir, "adapter_config.json"), "utf8")).toContain('"other"');
  });
});
