import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { parseQwen2Config } from "../src/io/config.js";
import { GgufError, type GgufValue, planGguf, serializeGguf } from "../src/io/gguf.js";
import { qwen2GgufMetadata, qwen2GgufTensorName, qwen2GgufTensors } from "../src/io/gguf-qwen2.js";
import { writeGgufFile } from "../src/io/gguf-writer.js";
import { exportQwen2Gguf } from "../src/model/gguf-export.js";
import { Qwen2Model, qwen2ParameterShapes } from "../src/model/qwen2.js";
import { ggufTensorValues, readGguf } from "./helpers/gguf-reader.js";

const scratch = mkdtempSync(join(tmpdir(), "gguf-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const EMBEDDED_MODEL = join(import.meta.dirname, "../../trainer/embedded-model");
const embeddedTokenizer = JSON.parse(readFileSync(join(EMBEDDED_MODEL, "tokenizer.json"), "utf8"));
const embeddedTokenizerConfig = JSON.parse(
  readFileSync(join(EMBEDDED_MODEL, "tokenizer_config.json"), "utf8"),
);
const embeddedConfig = parseQwen2Config(readFileSync(join(EMBEDDED_MODEL, "config.json"), "utf8"));

const metadata = new Map<string, GgufValue>([
  ["general.architecture", { type: "string", value: "test" }],
  ["test.count", { type: "uint32", value: 4_000_000_000 }],
  ["test.offset", { type: "int32", value: -7 }],
  ["test.scale", { type: "float32", value: 0.5 }],
  ["test.big", { type: "uint64", value: 2n ** 40n }],
  ["test.flag", { type: "bool", value: true }],
  ["test.words", { type: "array", itemType: "string", value: ["a", "Ġb", "日本"] }],
  ["test.kinds", { type: "array", itemType: "int32", value: [1, -3, 6] }],
]);
const tensors = new Map([
  ["matrix.weight", { shape: [3, 5], data: Float32Array.from({ length: 15 }, (_, i) => i - 7.25) }],
  ["vector.bias", { shape: [3], data: Float32Array.of(1, 2, 3) }],
  ["cube", { shape: [2, 1, 4], data: Float32Array.from({ length: 8 }, (_, i) => 1 / (i + 1)) }],
]);

describe("GGUF writer", () => {
  it("writes a v3 header, typed metadata, reversed dims and aligned f32 data that read back", () => {
    const bytes = serializeGguf(metadata, tensors);
    const file = readGguf(bytes);
    expect(file.version).toBe(3);
    expect([...file.metadata.keys()]).toEqual([...metadata.keys(), "general.alignment"]);
    expect(file.metadata.get("general.alignment")).toEqual({ type: 4, value: 32 });
    expect(file.metadata.get("test.count")).toEqual({ type: 4, value: 4_000_000_000 });
    expect(file.metadata.get("test.offset")).toEqual({ type: 5, value: -7 });
    expect(file.metadata.get("test.scale")).toEqual({ type: 6, value: 0.5 });
    expect(file.metadata.get("test.big")).toEqual({ type: 10, value: 2n ** 40n });
    expect(file.metadata.get("test.flag")).toEqual({ type: 7, value: true });
    expect(file.metadata.get("test.words")).toEqual({
      type: 9,
      value: { itemType: 8, items: ["a", "Ġb", "日本"] },
    });
    expect(file.metadata.get("test.kinds")).toEqual({ type: 9, value: { itemType: 5, items: [1, -3, 6] } });

    expect([...file.tensors.keys()]).toEqual([...tensors.keys()]);
    // ggml lists the innermost dim first: a [3, 5] matrix is (5, 3).
    expect(file.tensors.get("matrix.weight")!.dims).toEqual([5, 3]);
    expect(file.tensors.get("cube")!.dims).toEqual([4, 1, 2]);
    expect(file.dataStart % 32).toBe(0);
    for (const [name, tensor] of tensors) {
      const info = file.tensors.get(name)!;
      expect(info.type).toBe(0);
      expect((info.fileOffset - file.dataStart) % 32).toBe(0);
      expect(ggufTensorValues(bytes, info)).toEqual(tensor.data);
    }
    // 60 bytes padded to 64, 12 padded to 32, then 32 with no padding after the last tensor.
    expect(bytes.length).toBe(file.dataStart + 64 + 32 + 32);
  });

  it("honours a larger general.alignment", () => {
    const wide = new Map(metadata).set("general.alignment", { type: "uint32", value: 64 });
    const bytes = serializeGguf(wide, tensors);
    const file = readGguf(bytes);
    expect(file.alignment).toBe(64);
    expect(file.dataStart % 64).toBe(0);
    for (const info of file.tensors.values()) expect((info.fileOffset - file.dataStart) % 64).toBe(0);
    expect(ggufTensorValues(bytes, file.tensors.get("cube")!)).toEqual(tensors.get("cube")!.data);
  });

  it("streams to a file byte for byte as serializeGguf, and refuses to replace one unless asked", async () => {
    const path = join(scratch, "streamed.gguf");
    const reads: string[] = [];
    const sources = new Map(
      [...tensors].map(([name, { shape, data }]) => [
        name,
        {
          shape,
          read: async () => {
            reads.push(name);
            return data;
          },
        },
      ]),
    );
    const { byteLength } = await writeGgufFile(path, metadata, sources);
    const expected = serializeGguf(metadata, tensors);
    expect(new Uint8Array(readFileSync(path))).toEqual(expected);
    expect(byteLength).toBe(expected.length);
    expect(reads).toEqual([...tensors.keys()]);
    await expect(writeGgufFile(path, metadata, tensors)).rejects.toThrow(GgufError);
    await writeGgufFile(path, metadata, tensors, { overwrite: true });
  });

  it("removes the partial file when a tensor cannot be read", async () => {
    const path = join(scratch, "failed.gguf");
    const failing = new Map<string, { shape: number[]; read: () => Promise<Float32Array> }>([
      ["first", { shape: [2], read: async () => Float32Array.of(1, 2) }],
      [
        "second",
        {
          shape: [2],
          read: async () => {
            throw new Error("device lost");
          },
        },
      ],
    ]);
    await expect(writeGgufFile(path, metadata, failing)).rejects.toThrow(
      /reading tensor "second" failed \(device lost\)/,
    );
    expect(existsSync(path)).toBe(false);
  });

  it("refuses what llama.cpp could not read", () => {
    const one = { x: { shape: [1], data: Float32Array.of(0) } };
    const withEntry = (key: string, value: GgufValue) => new Map([[key, value]]);
    expect(() => planGguf(withEntry("Bad Key", { type: "bool", value: true }), one)).toThrow(
      /lower_snake_case/,
    );
    expect(() => planGguf(withEntry("a.n", { type: "uint32", value: -1 }), one)).toThrow(/not a uint32/);
    expect(() => planGguf(withEntry("a.n", { type: "int32", value: 2 ** 31 }), one)).toThrow(/not a int32/);
    expect(() => planGguf(withEntry("general.alignment", { type: "uint32", value: 12 }), one)).toThrow(
      /multiple of 8/,
    );
    expect(() => planGguf(new Map(), { x: { shape: [0] } })).toThrow(/positive integers/);
    expect(() => planGguf(new Map(), { x: { shape: [1, 1, 1, 1, 1] } })).toThrow(/1 to 4 dims/);
    expect(() => planGguf(new Map(), { ["n".repeat(64)]: { shape: [1] } })).toThrow(/at most 63 bytes/);
    expect(() => serializeGguf(new Map(), { x: { shape: [3], data: Float32Array.of(1) } })).toThrow(
      /1 values/,
    );
  });
});

describe("Qwen2 as llama.cpp's qwen2 architecture", () => {
  it("maps Hugging Face names to llama.cpp's", () => {
    expect(qwen2GgufTensorName("model.embed_tokens.weight")).toBe("token_embd.weight");
    expect(qwen2GgufTensorName("model.norm.weight")).toBe("output_norm.weight");
    expect(qwen2GgufTensorName("lm_head.weight")).toBe("output.weight");
    expect(qwen2GgufTensorName("model.layers.11.self_attn.k_proj.bias")).toBe("blk.11.attn_k.bias");
    expect(qwen2GgufTensorName("model.layers.0.self_attn.o_proj.weight")).toBe("blk.0.attn_output.weight");
    expect(qwen2GgufTensorName("model.layers.2.post_attention_layernorm.weight")).toBe(
      "blk.2.ffn_norm.weight",
    );
    expect(qwen2GgufTensorName("model.layers.3.mlp.down_proj.weight")).toBe("blk.3.ffn_down.weight");
    expect(() => qwen2GgufTensorName("score.weight")).toThrow(GgufError);
    expect(() => qwen2GgufTensorName("model.layers.0.self_attn.o_proj.bias")).toThrow(GgufError);
  });

  it("writes the hyperparameters with the types llama.cpp reads and the tokenizer as gpt2 BPE", () => {
    const entries = qwen2GgufMetadata(embeddedConfig, {
      tokenizer: embeddedTokenizer,
      tokenizerConfig: embeddedTokenizerConfig,
    });
    const value = (key: string) => entries.get(key);
    expect(value("general.architecture")).toEqual({ type: "string", value: "qwen2" });
    expect(value("qwen2.context_length")).toEqual({ type: "uint32", value: 4096 });
    expect(value("qwen2.embedding_length")).toEqual({ type: "uint32", value: 128 });
    expect(value("qwen2.block_count")).toEqual({ type: "uint32", value: 4 });
    expect(value("qwen2.feed_forward_length")).toEqual({ type: "uint32", value: 344 });
    expect(value("qwen2.attention.head_count")).toEqual({ type: "uint32", value: 4 });
    expect(value("qwen2.attention.head_count_kv")).toEqual({ type: "uint32", value: 2 });
    expect(value("qwen2.rope.freq_base")).toEqual({ type: "float32", value: 10000 });
    expect(value("qwen2.attention.layer_norm_rms_epsilon")).toEqual({ type: "float32", value: 1e-6 });
    expect(value("tokenizer.ggml.model")).toEqual({ type: "string", value: "gpt2" });
    expect(value("tokenizer.ggml.pre")).toEqual({ type: "string", value: "qwen2" });
    expect(value("tokenizer.ggml.eos_token_id")).toEqual({ type: "uint32", value: 868 });
    expect(value("tokenizer.ggml.add_bos_token")).toEqual({ type: "bool", value: false });
    expect(value("tokenizer.chat_template")?.value).toBe(embeddedTokenizerConfig.chat_template);

    const tokens = value("tokenizer.ggml.tokens")!.value as string[];
    const types = value("tokenizer.ggml.token_type")!.value as Int32Array;
    expect(tokens).toHaveLength(embeddedConfig.vocabSize);
    expect(types).toHaveLength(embeddedConfig.vocabSize);
    for (const [token, id] of Object.entries(embeddedTokenizer.model.vocab as Record<string, number>)) {
      expect(tokens[id]).toBe(token);
      expect(types[id]).toBe(1);
    }
    expect([tokens[867], types[867]]).toEqual(["<|im_start|>", 3]); // special: control
    expect([tokens[869], types[869]]).toEqual(["<think>", 4]); // added, not special: user-defined
    const merges = value("tokenizer.ggml.merges")!.value as string[];
    expect(merges).toHaveLength(embeddedTokenizer.model.merges.length);
    expect(merges[0]).toBe(embeddedTokenizer.model.merges[0].join(" "));
  });

  it("names unused embedding rows, and refuses tokenizers llama.cpp's gpt2 vocabulary cannot hold", () => {
    const roomier = { ...embeddedConfig, vocabSize: embeddedConfig.vocabSize + 3 };
    const entries = qwen2GgufMetadata(roomier, { tokenizer: embeddedTokenizer });
    const tokens = entries.get("tokenizer.ggml.tokens")!.value as string[];
    expect(tokens.slice(-3)).toEqual(["[PAD873]", "[PAD874]", "[PAD875]"]);
    expect([...(entries.get("tokenizer.ggml.token_type")!.value as Int32Array).slice(-3)]).toEqual([5, 5, 5]);
    expect(entries.has("tokenizer.chat_template")).toBe(false);

    const smaller = { ...embeddedConfig, vocabSize: 800 };
    expect(() => qwen2GgufMetadata(smaller, { tokenizer: embeddedTokenizer })).toThrow(
      /outside the model's vocabulary of 800/,
    );
    const unigram = { model: { type: "Unigram", vocab: [] } };
    expect(() => qwen2GgufMetadata(embeddedConfig, { tokenizer: unigram })).toThrow(/byte-level BPE/);
    const spaced = { ...embeddedTokenizer, model: { ...embeddedTokenizer.model, merges: [["a b", "c"]] } };
    expect(() => qwen2GgufMetadata(embeddedConfig, { tokenizer: spaced })).toThrow(/space-free/);
  });

  it("exports a model's weights under llama.cpp's names, untied head included", async () => {
    const config = { ...embeddedConfig, numHiddenLayers: 2, tieWordEmbeddings: false };
    const model = Qwen2Model.random(config, 7, createCpuBackend());
    const path = join(scratch, "untied.gguf");
    await exportQwen2Gguf(model, config, path, { tokenizer: embeddedTokenizer, name: "tiny" });
    const bytes = new Uint8Array(readFileSync(path));
    const file = readGguf(bytes);
    const shapes = qwen2ParameterShapes(config);
    expect([...file.tensors.keys()]).toEqual(shapes.map(([name]) => qwen2GgufTensorName(name)));
    expect(file.tensors.get("output.weight")!.dims).toEqual([128, embeddedConfig.vocabSize]);
    expect(file.tensors.get("blk.1.ffn_down.weight")!.dims).toEqual([344, 128]);
    expect(file.metadata.get("general.name")?.value).toBe("tiny");
    const state = await model.stateDict();
    for (const [name] of shapes) {
      expect(ggufTensorValues(bytes, file.tensors.get(qwen2GgufTensorName(name))!)).toEqual(state.get(name));
    }
    expect(qwen2GgufTensors(state).size).toBe(shapes.length);

    model.attachLora({ rank: 2, alpha: 4 });
    await expect(
      exportQwen2Gguf(model, config, join(scratch, "lora.gguf"), { tokenizer: embeddedTokenizer }),
    ).rejects.toThrow(/mergeLora/);
    model.dispose();
  });
});
