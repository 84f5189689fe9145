import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG, type Qwen2Config } from "../src/io/config.js";
import {
  isCompleteModelFolder,
  type ModelFolder,
  ModelFolderError,
  readModelFolder,
  writeModelFolder,
} from "../src/io/folder.js";
import type { TensorToWrite } from "../src/io/safetensors.js";
import { parseShardIndex, ShardedSafetensors } from "../src/io/sharded.js";

const FIXTURES = join(import.meta.dirname, "fixtures", "io");
const scratch = mkdtempSync(join(tmpdir(), "ragen-models-folder-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let counter = 0;
function freshPath(name = "model"): string {
  counter++;
  return join(scratch, `${counter}`, name);
}

/** All tensors of a folder as BF16/F32 tensors to write back. */
function tensorsOf(folder: ModelFolder, dtype: TensorToWrite["dtype"]): Map<string, TensorToWrite> {
  const tensors = new Map<string, TensorToWrite>();
  for (const name of folder.weights.names()) {
    const info = folder.weights.info(name);
    tensors.set(name, { dtype, shape: info.shape, data: folder.weights.toFloat32(name) });
  }
  return tensors;
}

const tinyConfig: Qwen2Config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  vocabSize: 8,
  hiddenSize: 4,
  intermediateSize: 8,
  numHiddenLayers: 1,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  headDim: 2,
  bosTokenId: 1,
  eosTokenId: [2, 3],
  torchDtype: "float32",
};

function tinyTensors(): Record<string, TensorToWrite> {
  const filled = (shape: number[], start: number): TensorToWrite => ({
    dtype: "F32",
    shape,
    data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => start + i / 8),
  });
  return {
    "model.embed_tokens.weight": filled([8, 4], 0),
    "model.layers.0.self_attn.q_proj.weight": filled([4, 4], 1),
    "model.layers.0.self_attn.q_proj.bias": filled([4], 2),
    "model.norm.weight": filled([4], 3),
  };
}

function entriesBeside(path: string): string[] {
  return readdirSync(join(path, "..")).sort();
}

describe("reading folders saved by transformers", () => {
  it("reads a single-file checkpoint", async () => {
    const folder = await readModelFolder(join(FIXTURES, "transformers-tiny-qwen2"));
    expect(folder.config).toMatchObject({
      hiddenSize: 16,
      numHiddenLayers: 2,
      vocabSize: 64,
      tieWordEmbeddings: true,
    });
    expect(folder.weightFiles).toEqual(["model.safetensors"]);
    expect(folder.weights.names()).toContain("model.layers.1.self_attn.k_proj.bias");
    expect(folder.weights.names()).not.toContain("lm_head.weight"); // tied
    expect(folder.weights.info("model.embed_tokens.weight")).toMatchObject({
      dtype: "BF16",
      shape: [64, 16],
    });
    expect(folder.generationConfig).toMatchObject({ bos_token_id: 1, eos_token_id: 2 });
    expect(folder.tokenizer).toBeUndefined();
  });

  it("reads the sharded copy of the same model to the same values", async () => {
    const whole = await readModelFolder(join(FIXTURES, "transformers-tiny-qwen2"));
    const sharded = await readModelFolder(join(FIXTURES, "transformers-tiny-qwen2-sharded"));
    expect(sharded.weights).toBeInstanceOf(ShardedSafetensors);
    expect(sharded.weightFiles).toEqual([
      "model.safetensors.index.json",
      "model-00001-of-00002.safetensors",
      "model-00002-of-00002.safetensors",
    ]);
    expect(sharded.weights.names().sort()).toEqual(whole.weights.names().sort());
    for (const name of whole.weights.names()) {
      expect(sharded.weights.toFloat32(name)).toEqual(whole.weights.toFloat32(name));
    }
  });

  it("writes the transformers checkpoint back byte for byte", async () => {
    const source = await readModelFolder(join(FIXTURES, "transformers-tiny-qwen2"));
    const target = freshPath();
    await writeModelFolder(target, { config: source.config, tensors: tensorsOf(source, "BF16") });
    const original = readFileSync(join(FIXTURES, "transformers-tiny-qwen2", "model.safetensors"));
    expect(readFileSync(join(target, "model.safetensors")).equals(original)).toBe(true);
  });
});

describe("writing and reading back", () => {
  it("round-trips config, weights, tokenizer files and extra files", async () => {
    const target = freshPath();
    const tokenizer = { version: "1.0", model: { type: "BPE", vocab: { a: 0, é: 1 } } };
    await writeModelFolder(target, {
      config: tinyConfig,
      tensors: tinyTensors(),
      tokenizer,
      tokenizerConfig: { eos_token: "<|im_end|>", chat_template: "{{ x }}" },
      generationConfig: { eos_token_id: [2, 3], temperature: 0.7 },
      files: {
        "special_tokens_map.json": '{"eos_token": "<|im_end|>"}\n',
        "notes.bin": new Uint8Array([1, 2]),
      },
    });
    expect(readdirSync(target).sort()).toEqual([
      "config.json",
      "generation_config.json",
      "model.safetensors",
      "notes.bin",
      "special_tokens_map.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    const folder = await readModelFolder(target);
    expect(folder.config).toEqual(tinyConfig);
    expect(folder.tokenizer).toEqual(tokenizer);
    expect(folder.tokenizerConfig).toEqual({ eos_token: "<|im_end|>", chat_template: "{{ x }}" });
    expect(folder.generationConfig).toEqual({ eos_token_id: [2, 3], temperature: 0.7 });
    for (const [name, tensor] of Object.entries(tinyTensors())) {
      expect(folder.weights.info(name)).toMatchObject({ dtype: "F32", shape: tensor.shape });
      expect(folder.weights.toFloat32(name)).toEqual(tensor.data);
    }
    const safetensors = readFileSync(join(target, "model.safetensors"));
    expect(safetensors.subarray(8, 40).toString()).toBe('{"__metadata__":{"format":"pt"},');
    expect(readFileSync(join(target, "generation_config.json"), "utf8")).toBe(
      '{\n  "eos_token_id": [\n    2,\n    3\n  ],\n  "temperature": 0.7\n}\n',
    );
  });

  it("writes shards with an index when asked, and reads them back", async () => {
    const target = freshPath();
    await writeModelFolder(target, { config: tinyConfig, tensors: tinyTensors() }, { maxShardBytes: 80 });
    const files = readdirSync(target).sort();
    expect(files).toEqual([
      "config.json",
      "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors",
      "model-00003-of-00003.safetensors",
      "model.safetensors.index.json",
    ]);
    const index = parseShardIndex(readFileSync(join(target, "model.safetensors.index.json"), "utf8"));
    expect(index.totalSize).toBe((32 + 16 + 4 + 4) * 4);
    // Names sorted, each shard at most 80 bytes unless a single tensor is bigger.
    expect([...index.weightMap]).toEqual([
      ["model.embed_tokens.weight", "model-00001-of-00003.safetensors"],
      ["model.layers.0.self_attn.q_proj.bias", "model-00002-of-00003.safetensors"],
      ["model.layers.0.self_attn.q_proj.weight", "model-00002-of-00003.safetensors"],
      ["model.norm.weight", "model-00003-of-00003.safetensors"],
    ]);
    const folder = await readModelFolder(target);
    for (const [name, tensor] of Object.entries(tinyTensors()))
      expect(folder.weights.toFloat32(name)).toEqual(tensor.data);
  });

  it("refuses to replace a folder unless told to, then replaces it whole", async () => {
    const target = freshPath();
    await writeModelFolder(target, {
      config: tinyConfig,
      tensors: tinyTensors(),
      files: { "old.txt": "old" },
    });
    await expect(writeModelFolder(target, { config: tinyConfig, tensors: tinyTensors() })).rejects.toThrow(
      /already exists \(pass overwrite: true/,
    );
    const changed = { ...tinyConfig, ropeTheta: 500 };
    await writeModelFolder(target, { config: changed, tensors: tinyTensors() }, { overwrite: true });
    expect(readdirSync(target).sort()).toEqual(["config.json", "model.safetensors"]);
    expect((await readModelFolder(target)).config.ropeTheta).toBe(500);
    expect(entriesBeside(target)).toEqual(["model"]); // no temporary or old folders left
  });

  it("leaves the previous checkpoint untouched when writing fails midway", async () => {
    const target = freshPath();
    await writeModelFolder(target, { config: tinyConfig, tensors: tinyTensors() });
    const before = readFileSync(join(target, "model.safetensors"));
    const broken = {
      ...tinyTensors(),
      bad: { dtype: "F32" as const, shape: [3], data: new Float32Array(2) },
    };
    // config.json is written before the weights fail validation.
    await expect(
      writeModelFolder(
        target,
        { config: { ...tinyConfig, ropeTheta: 7 }, tensors: broken },
        { overwrite: true },
      ),
    ).rejects.toThrow(/tensor "bad": shape \[3\] has 3 elements, data has 2/);
    expect(readFileSync(join(target, "model.safetensors")).equals(before)).toBe(true);
    expect((await readModelFolder(target)).config.ropeTheta).toBe(tinyConfig.ropeTheta);
    expect(entriesBeside(target)).toEqual(["model"]);

    const fresh = freshPath();
    await expect(writeModelFolder(fresh, { config: tinyConfig, tensors: broken })).rejects.toThrow(/bad/);
    expect(entriesBeside(fresh)).toEqual([]);
  });

  it("rejects extra file names that escape the folder or clash with its own files", async () => {
    const contents = { config: tinyConfig, tensors: tinyTensors() };
    await expect(writeModelFolder(freshPath(), { ...contents, files: { "../x": "" } })).rejects.toThrow(
      /plain file name/,
    );
    await expect(
      writeModelFolder(freshPath(), { ...contents, files: { "config.json": "" } }),
    ).rejects.toThrow(/replace/);
  });
  it("refuses a config it could not load back, before writing anything", async () => {
    const target = freshPath();
    // The 0.5B config shrunk to a tiny vocabulary but still naming Qwen's token ids.
    const shrunk: Qwen2Config = { ...tinyConfig, bosTokenId: QWEN2_5_0_5B_INSTRUCT_CONFIG.bosTokenId };
    await expect(writeModelFolder(target, { config: shrunk, tensors: tinyTensors() })).rejects.toThrow(
      /bos_token_id/,
    );
    expect(existsSync(target)).toBe(false);
  });
});

describe("broken folders", () => {
  async function folderError(path: string): Promise<Error> {
    try {
      await readModelFolder(path);
    } catch (error) {
      return error as Error;
    }
    throw new Error("expected an error");
  }

  it("names what is missing", async () => {
    const missing = freshPath();
    expect((await folderError(missing)).message).toBe(`${missing}: does not exist`);

    const noConfig = freshPath();
    await writeModelFolder(noConfig, { config: tinyConfig, tensors: tinyTensors() });
    rmSync(join(noConfig, "config.json"));
    const error = await folderError(noConfig);
    expect(error).toBeInstanceOf(ModelFolderError);
    expect(error.message).toBe(`${noConfig}: has no config.json: not a Hugging Face model folder`);

    const noWeights = freshPath();
    await writeModelFolder(noWeights, {
      config: tinyConfig,
      tensors: tinyTensors(),
      files: { "pytorch_model.bin": "" },
    });
    rmSync(join(noWeights, "model.safetensors"));
    expect((await folderError(noWeights)).message).toMatch(
      /has neither model.safetensors nor model.safetensors.index.json \(pytorch_model.bin is not supported/,
    );
    expect(await isCompleteModelFolder(noWeights)).toBe(false);
  });

  it("names a missing shard and a shard lacking a listed tensor", async () => {
    const target = freshPath();
    await writeModelFolder(target, { config: tinyConfig, tensors: tinyTensors() }, { maxShardBytes: 80 });
    expect(await isCompleteModelFolder(target)).toBe(true);
    const indexPath = join(target, "model.safetensors.index.json");
    const index = JSON.parse(readFileSync(indexPath, "utf8"));
    index.weight_map["model.norm.weight"] = "model-00001-of-00003.safetensors";
    writeFileSync(indexPath, JSON.stringify(index));
    expect((await folderError(target)).message).toBe(
      'model-00001-of-00003.safetensors: tensor "model.norm.weight": listed in model.safetensors.index.json but absent from this shard',
    );
    rmSync(join(target, "model-00002-of-00003.safetensors"));
    expect((await folderError(target)).message).toMatch(
      /is missing shard\(s\) model-00002-of-00003.safetensors/,
    );
    expect(await isCompleteModelFolder(target)).toBe(false);
  });

  it("names the file for corrupt weights and JSON", async () => {
    const target = freshPath();
    await writeModelFolder(target, { config: tinyConfig, tensors: tinyTensors() });
    const weights = join(target, "model.safetensors");
    writeFileSync(weights, readFileSync(weights).subarray(0, 100));
    expect((await folderError(target)).message).toMatch(new RegExp(`^${weights}: .*truncated`));
    writeFileSync(join(target, "generation_config.json"), "{oops");
    writeFileSync(join(target, "config.json"), JSON.stringify({ model_type: "qwen2" }));
    expect((await folderError(target)).message).toMatch(/config.json: "vocab_size" is missing/);
  });

  it("refuses shard names that point outside the folder", () => {
    expect(() => parseShardIndex({ weight_map: { w: "../secret.safetensors" } })).toThrow(
      /not a plain file name/,
    );
    expect(() => parseShardIndex({ weight_map: {} })).toThrow(/"weight_map" is empty/);
    expect(() => parseShardIndex("{")).toThrow(/not valid JSON/);
    expect(() => parseShardIndex({ metadata: { total_size: -1 }, weight_map: { w: "a" } })).toThrow(
      /total_size/,
    );
  });
});
