import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG, type Qwen2Config } from "../src/io/config.js";
import { readModelFolder, writeModelFolder } from "../src/io/folder.js";
import { parseSafetensors, serializeSafetensors, type TensorToWrite } from "../src/io/safetensors.js";
import { loadQwen2 } from "../src/model/checkpoint.js";
import { qwen2ParameterShapes } from "../src/model/qwen2.js";
import { readQwen2Weights } from "../src/model/weights.js";

const FIXTURES = join(import.meta.dirname, "fixtures", "io");
const scratch = mkdtempSync(join(tmpdir(), "ragen-models-weights-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const config: Qwen2Config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  vocabSize: 12,
  hiddenSize: 4,
  intermediateSize: 8,
  numHiddenLayers: 2,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  tieWordEmbeddings: true,
  bosTokenId: 0,
  eosTokenId: 1,
};

function tensorsFor(shapeConfig: Qwen2Config): Map<string, TensorToWrite> {
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, shape] of qwen2ParameterShapes(shapeConfig)) {
    const size = shape.reduce((a, b) => a * b, 1);
    tensors.set(name, { dtype: "F32", shape, data: Float32Array.from({ length: size }, (_, i) => i / 100) });
  }
  return tensors;
}

function read(tensors: Map<string, TensorToWrite>, fileName = "/models/x/model.safetensors") {
  return parseSafetensors(serializeSafetensors(tensors), { fileName });
}

describe("readQwen2Weights refuses bad files", () => {
  it("loads a well-formed checkpoint", () => {
    expect(readQwen2Weights({ config, weights: read(tensorsFor(config)) }).size).toBe(
      qwen2ParameterShapes(config).length,
    );
  });

  it("names the tensor, file and both shapes when a tensor is transposed", () => {
    const tensors = tensorsFor(config);
    const embed = tensors.get("model.embed_tokens.weight")!;
    tensors.set("model.embed_tokens.weight", { ...embed, shape: [4, 12] });
    expect(() => readQwen2Weights({ config, weights: read(tensors) })).toThrow(
      /\/models\/x\/model\.safetensors: tensor "model\.embed_tokens\.weight" has shape \[4, 12\], expected \[12, 4\]/,
    );
  });

  it("lists tensors the config does not use, unless told to ignore them", () => {
    const oneLayer = { ...config, numHiddenLayers: 1 };
    const weights = read(tensorsFor(config));
    expect(() => readQwen2Weights({ config: oneLayer, weights })).toThrow(
      /does not use: model\.layers\.1\.input_layernorm\.weight, .* and \d+ more/,
    );
    const loaded = readQwen2Weights({ config: oneLayer, weights }, { ignoreUnexpected: true });
    expect(loaded.has("model.layers.1.input_layernorm.weight")).toBe(false);
  });

  it("still loads the value head, rotary tables and an lm_head beside tied embeddings", () => {
    const tensors = tensorsFor(config);
    tensors.set("score.weight", { dtype: "F32", shape: [1, 4], data: new Float32Array(4) });
    tensors.set("model.layers.0.self_attn.rotary_emb.inv_freq", {
      dtype: "F32",
      shape: [1],
      data: new Float32Array(1),
    });
    tensors.set("lm_head.weight", { dtype: "F32", shape: [12, 4], data: new Float32Array(48) });
    expect(readQwen2Weights({ config, weights: read(tensors) }).has("score.weight")).toBe(false);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY])("refuses %s weights, naming the tensor and file", (bad) => {
    const tensors = tensorsFor(config);
    tensors.set("model.norm.weight", { dtype: "F32", shape: [4], data: new Float32Array(4).fill(bad) });
    expect(() => readQwen2Weights({ config, weights: read(tensors) })).toThrow(
      /\/models\/x\/model\.safetensors: tensor "model\.norm\.weight" holds a non-finite value/,
    );
  });

  it("names the folder when a weight is missing", async () => {
    const tensors = tensorsFor(config);
    tensors.delete("model.norm.weight");
    const path = join(scratch, "missing");
    await writeModelFolder(path, { config, tensors });
    const folder = await readModelFolder(path);
    expect(() => readQwen2Weights(folder)).toThrow(`${folder.path}: missing weights: model.norm.weight`);
  });

  it("names the shard of a bad tensor in a sharded folder", async () => {
    const tensors = tensorsFor(config);
    tensors.set("model.norm.weight", {
      dtype: "BF16",
      shape: [4],
      data: new Float32Array(4).fill(Number.NaN),
    });
    const path = join(scratch, "sharded");
    await writeModelFolder(path, { config, tensors }, { maxShardBytes: 200 });
    const folder = await readModelFolder(path);
    expect(folder.weightFiles.length).toBeGreaterThan(2);
    expect(() => readQwen2Weights(folder)).toThrow(
      /model-\d+-of-\d+\.safetensors: tensor "model\.norm\.weight"/,
    );
  });

  it.each(["transformers-tiny-qwen2", "transformers-tiny-qwen2-sharded"])(
    "loads the %s fixture",
    async (name) => {
      const folder = await readModelFolder(join(FIXTURES, name));
      expect(readQwen2Weights(folder).size).toBe(qwen2ParameterShapes(folder.config).length);
    },
  );

  it.each([
    "../../trainer/embedded-model",
    "../../../examples/sokoban-starpo/model",
    "../../../examples/webshop-apo/model",
  ])("loads %s", async (relative) => {
    const folder = await readModelFolder(join(import.meta.dirname, relative));
    expect(readQwen2Weights(folder).size).toBe(qwen2ParameterShapes(folder.config).length);
  });

  it("loadQwen2 refuses a folder with layers the config lacks, and loads it with ignoreUnexpected", async () => {
    const path = join(scratch, "extra-layers");
    await writeModelFolder(path, { config, tensors: tensorsFor(config) });
    const configPath = join(path, "config.json");
    const json = JSON.parse(readFileSync(configPath, "utf8"));
    writeFileSync(configPath, JSON.stringify({ ...json, num_hidden_layers: 1 }));
    const backend = createCpuBackend();
    await expect(loadQwen2(path, backend)).rejects.toThrow(/does not use: model\.layers\.1\./);
    const { model } = await loadQwen2(path, backend, { ignoreUnexpected: true });
    expect(model.config.numHiddenLayers).toBe(1);
  });
});
