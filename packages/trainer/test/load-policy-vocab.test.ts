import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { EMBEDDED_MODEL_DIR } from "../src/embedded-model.js";
import { loadPolicy } from "../src/node/load-policy.js";

const scratch = mkdtempSync(join(tmpdir(), "ragen-load-policy-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const backend = createCpuBackend();

describe("loadPolicy checks the tokenizer against the model's vocabulary", () => {
  it("loads the embedded model", async () => {
    const policy = await loadPolicy("embedded", backend);
    expect(policy.tokenizer.vocabSize).toBeLessThanOrEqual(policy.config.vocabSize);
  });

  it("refuses a tokenizer with a special token past the vocabulary, naming both files", async () => {
    const folder = join(scratch, "too-many-tokens");
    cpSync(EMBEDDED_MODEL_DIR, folder, { recursive: true });
    const tokenizerPath = join(folder, "tokenizer.json");
    const tokenizer = JSON.parse(readFileSync(tokenizerPath, "utf8"));
    const vocabSize = JSON.parse(readFileSync(join(folder, "config.json"), "utf8")).vocab_size as number;
    tokenizer.added_tokens.push({
      id: vocabSize + 4,
      content: "<|extra|>",
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    });
    writeFileSync(tokenizerPath, JSON.stringify(tokenizer));
    await expect(loadPolicy(folder, backend)).rejects.toThrow(
      `${tokenizerPath} has token ids up to ${vocabSize + 4} ("<|extra|>" ${vocabSize + 4}), but ${join(folder, "config.json")} has vocab_size ${vocabSize}`,
    );
  });
});
