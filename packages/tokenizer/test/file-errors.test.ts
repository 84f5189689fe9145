import { describe, expect, it } from "vitest";
import { isUnsafeForTerminal } from "../src/errors.js";
import { Tokenizer, TokenizerError, TokenizerFileError } from "../src/index.js";
import { trainTinyTokenizer } from "./support/tiny-tokenizer.js";

const trained = trainTinyTokenizer();
const json = () => structuredClone(trained.tokenizerJson);

function loadError(tokenizerJson: unknown, tokenizerConfig?: unknown): TokenizerFileError {
  try {
    Tokenizer.fromFiles(tokenizerJson as object, tokenizerConfig as object | undefined);
  } catch (error) {
    expect(error).toBeInstanceOf(TokenizerFileError);
    return error as TokenizerFileError;
  }
  throw new Error("expected the files to be rejected");
}

describe("bad tokenizer files get errors naming the file and the problem", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["text that is not JSON", () => "{ not json", /is not valid JSON/],
    ["a JSON array", () => "[]", /must hold a JSON object/],
    ["no model", () => ({ ...json(), model: undefined }), /has no "model" object/],
    [
      "a Unigram model",
      () => ({ ...json(), model: { ...json().model, type: "Unigram" } }),
      /model\.type is "Unigram"/,
    ],
    [
      "a vocab id that is not a number",
      () => {
        const file = json();
        (file.model.vocab as Record<string, unknown>).a = "x";
        return file;
      },
      /model\.vocab\["a"\] is not a token id/,
    ],
    [
      "a merge of unknown tokens",
      () => {
        const file = json();
        (file.model.merges as [string, string][]).push(["zzz", "qqq"]);
        return file;
      },
      /model\.merges\[\d+\] \("zzz qqq"\): "zzz" is not in model\.vocab/,
    ],
    [
      "a missing byte token",
      () => {
        const file = json();
        delete file.model.vocab["\u0100"];
        return file;
      },
      /lacks the single-byte tokens of bytes 0 /,
    ],
    [
      "BPE dropout",
      () => ({ ...json(), model: { ...json().model, dropout: 0.1 } }),
      /model\.dropout is not supported/,
    ],
    [
      "a WordPiece-style pre-tokenizer",
      () => ({ ...json(), pre_tokenizer: { type: "Whitespace" } }),
      /pre_tokenizer: step type "Whitespace"/,
    ],
    [
      "a Split with an unusable regex",
      () => {
        const file = json();
        const steps = (file.pre_tokenizer as unknown as { pretokenizers: { pattern: { Regex: string } }[] })
          .pretokenizers;
        steps[0]!.pattern.Regex = "(?x)a";
        return file;
      },
      /pre_tokenizer pattern "\(\?x\)a" cannot be used/,
    ],
    [
      "add_prefix_space",
      () => ({ ...json(), pre_tokenizer: { type: "ByteLevel", add_prefix_space: true } }),
      /add_prefix_space: true/,
    ],
    [
      "a Lowercase normalizer",
      () => ({ ...json(), normalizer: { type: "Lowercase" } }),
      /normalizer "Lowercase" is not supported/,
    ],
    [
      "a WordPiece decoder",
      () => ({ ...json(), decoder: { type: "WordPiece" } }),
      /decoder "WordPiece" is not supported/,
    ],
    [
      "a BOS-adding post-processor",
      () => ({ ...json(), post_processor: { type: "TemplateProcessing" } }),
      /post_processor "TemplateProcessing"/,
    ],
    [
      "an added token without content",
      () => ({ ...json(), added_tokens: [{ id: 3 }] }),
      /added_tokens\[0\] needs a string "content"/,
    ],
  ];

  for (const [what, file, problem] of cases) {
    it(`rejects ${what}`, () => {
      const error = loadError(file());
      expect(error.file).toBe("tokenizer.json");
      expect(error.problem).toMatch(problem);
      expect(error.message).toBe(`tokenizer.json: ${error.problem}`);
    });
  }

  it("names tokenizer_config.json for problems there", () => {
    expect(loadError(trained.tokenizerJson, "nope").file).toBe("tokenizer_config.json");
    expect(loadError(trained.tokenizerJson, { eos_token: 5 }).problem).toMatch(/eos_token must be a string/);
    expect(loadError(trained.tokenizerJson, { chat_template: 42 }).problem).toMatch(/chat_template must be/);
  });

  it("accepts eos/pad written as AddedToken objects in older configs", () => {
    const tokenizer = Tokenizer.fromFiles(trained.tokenizerJson, {
      eos_token: { __type: "AddedToken", content: "<|endoftext|>" },
    });
    expect(tokenizer.eosTokenId).toBe(tokenizer.tokenToId("<|endoftext|>"));
  });

  it("rejects unknown ids when decoding", () => {
    expect(() => trained.tokenizer.decode([1, 99_999])).toThrow(TokenizerError);
    expect(() => trained.tokenizer.decode([1.5])).toThrow(/unknown token id 1\.5/);
  });

  it("leaves unknown ids out when told to (a model's padding rows, sampled)", () => {
    const known = trained.tokenizer.decode([1, 2]);
    expect(trained.tokenizer.decode([1, 99_999, 2, -1], { skipUnknownIds: true })).toBe(known);
  });
});

describe("bad input is quoted escaped and cut short, never echoed raw to the terminal", () => {
  const printable = (text: string) => ![...text].some((c) => isUnsafeForTerminal(c.charCodeAt(0)));

  it("garbage tokenizer.json", () => {
    const garbage = `\u001b[2J\u001b]0;owned\u0007${"\u0000\u009b\u202e".repeat(5000)}`;
    const error = loadError(garbage);
    expect(error.message).toMatch(/^tokenizer\.json: is not valid JSON/);
    expect(error.message).toContain("\\u001b[2J");
    expect(printable(error.message)).toBe(true);
    expect(error.message.length).toBeLessThan(600);
  });

  it("a field holding control bytes and bidirectional overrides", () => {
    const type = `\u009b31m\u202e${"x".repeat(5000)}`;
    const error = loadError({ ...json(), model: { ...json().model, type } });
    expect(error.message).toMatch(/^tokenizer\.json: /);
    expect(printable(error.message)).toBe(true);
    expect(error.message.length).toBeLessThan(600);
  });
});
