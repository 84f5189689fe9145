import { Tokenizer as HuggingFaceTokenizer } from "@huggingface/tokenizers";
import { describe, expect, it } from "vitest";
import { QWEN2_SPLIT_PATTERN, TokenizerError, trainBpeTokenizer } from "../src/index.js";
import { learnMerges } from "../src/trainer/learn-merges.js";
import { agentTrajectories } from "./support/agent-corpus.js";
import { HAND_PICKED, randomTexts, seededRandom } from "./support/corpus.js";
import { englishAndCode } from "./support/qwen-files.js";

const trajectories = agentTrajectories(400, 11);
// Trajectories plus prose, code and a multilingual mix, so that the vocabulary fills up.
const mixedCorpus = [
  ...trajectories,
  ...englishAndCode(120_000).split(/(?<=\n\n)/),
  ...randomTexts(1500, 3, 120),
];
const trained = trainBpeTokenizer(mixedCorpus, { vocabSize: 1024, addedTokens: ["<think>", "</think>"] });

const sameIds = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((id, i) => id === b[i]);

describe("trainBpeTokenizer", () => {
  it("fills the requested vocabulary: 256 bytes, merges, then special and added tokens", () => {
    const { tokenizer } = trained;
    expect(tokenizer.vocabSize).toBe(1024);
    expect(trained.learnedMerges).toBe(1024 - 256 - 5);
    expect(tokenizer.tokenToId("<|endoftext|>")).toBe(1019);
    expect(tokenizer.tokenToId("<|im_start|>")).toBe(1020);
    expect(tokenizer.tokenToId("<|im_end|>")).toBe(1021);
    expect(tokenizer.tokenToId("<think>")).toBe(1022);
    expect(tokenizer.isSpecial(1021)).toBe(true);
    expect(tokenizer.isSpecial(1022)).toBe(false);
    expect(tokenizer.eosTokenId).toBe(1021);
    expect(tokenizer.padTokenId).toBe(1019);
    // The first 256 ids are the bytes in Qwen's order.
    expect(tokenizer.idToToken(0)).toBe("!");
    expect(tokenizer.idToToken(188)).toBe("\u0100");
  });

  it("writes a standard tokenizer.json and tokenizer_config.json", () => {
    const json = trained.tokenizerJson;
    const preTokenizer = json.pre_tokenizer as unknown as { pretokenizers: { type: string }[] };
    expect(json.model.type).toBe("BPE");
    expect(Object.keys(json.model.vocab)).toHaveLength(1024 - 5);
    expect(json.model.merges.length).toBeGreaterThanOrEqual(trained.learnedMerges);
    expect(json.model.merges.every((merge: unknown) => Array.isArray(merge) && merge.length === 2)).toBe(
      true,
    );
    expect(json.normalizer).toEqual({ type: "NFC" });
    expect(preTokenizer.pretokenizers[0]).toEqual({
      type: "Split",
      pattern: { Regex: QWEN2_SPLIT_PATTERN },
      behavior: "Isolated",
      invert: false,
    });
    expect(preTokenizer.pretokenizers[1]!.type).toBe("ByteLevel");
    expect(json.decoder?.type).toBe("ByteLevel");
    expect(json.added_tokens.map((token: { content: string }) => token.content)).toEqual([
      "<|endoftext|>",
      "<|im_start|>",
      "<|im_end|>",
      "<think>",
      "</think>",
    ]);
    const config = trained.tokenizerConfig;
    expect(config.eos_token).toBe("<|im_end|>");
    expect(config.pad_token).toBe("<|endoftext|>");
    expect(config.tokenizer_class).toBe("Qwen2Tokenizer");
    expect((config.added_tokens_decoder as Record<string, { content: string }>)["1020"]!.content).toBe(
      "<|im_start|>",
    );
    // Files must survive a JSON round trip unchanged.
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
  });

  it("gives the same ids in @huggingface/tokenizers as here", () => {
    const reference = new HuggingFaceTokenizer(
      JSON.parse(JSON.stringify(trained.tokenizerJson)),
      JSON.parse(JSON.stringify(trained.tokenizerConfig)),
    );
    const texts = [...mixedCorpus.slice(0, 600), ...HAND_PICKED, ...randomTexts(1500, 99, 150)];
    const mismatches = texts.filter(
      (text) => !sameIds(trained.tokenizer.encode(text), reference.encode(text).ids),
    );
    expect(mismatches.map((text) => JSON.stringify(text).slice(0, 100))).toEqual([]);
    // Every vocabulary entry, encoded on its own, too (whole-piece lookups vs merges).
    for (let id = 256; id < trained.tokenizer.vocabSize; id++) {
      const text = trained.tokenizer.decode([id]);
      expect(trained.tokenizer.encode(text)).toEqual(reference.encode(text).ids);
    }
  });

  it("round-trips text through encode and decode", () => {
    for (const text of [...HAND_PICKED, ...trajectories.slice(0, 50)]) {
      expect(trained.tokenizer.decode(trained.tokenizer.encode(text))).toBe(text.normalize("NFC"));
    }
  });

  it("compresses the text it was trained on", () => {
    const text = trajectories.slice(0, 20).join("");
    const ids = trained.tokenizer.encode(text);
    expect(ids.length).toBeLessThan(new TextEncoder().encode(text).length / 3);
    expect(trained.tokenizer.encode("<answer>Left || Up</answer>").length).toBeLessThanOrEqual(8);
  });

  it("never learns merges across special tokens", () => {
    const vocab = Object.keys(trained.tokenizerJson.model.vocab);
    expect(vocab.some((token) => token.includes("<|im_start|>") || token.includes("im_end|>"))).toBe(false);
  });

  it("is deterministic: the same texts in another order give identical files", () => {
    const random = seededRandom(5);
    const shuffled = [...trajectories].sort(() => random() - 0.5);
    const a = trainBpeTokenizer(trajectories, { vocabSize: 400 });
    const b = trainBpeTokenizer(shuffled, { vocabSize: 400 });
    expect(JSON.stringify(b.tokenizerJson)).toBe(JSON.stringify(a.tokenizerJson));
    expect(JSON.stringify(b.tokenizerConfig)).toBe(JSON.stringify(a.tokenizerConfig));
  });

  it("stops early when no pair is frequent enough", () => {
    const small = trainBpeTokenizer(["aaab aaab"], { vocabSize: 2048, minFrequency: 2 });
    expect(small.learnedMerges).toBeLessThan(10);
    expect(small.tokenizer.vocabSize).toBe(256 + small.learnedMerges + 3);
    expect(small.tokenizer.decode(small.tokenizer.encode("aaab aaab"))).toBe("aaab aaab");
  });

  it("keeps separateCharacters in tokens of their own: one token per grid cell", () => {
    const grids = Array.from({ length: 300 }, (_, i) => {
      const cells = Array.from({ length: 16 }, (_, c) => "_OPG√"[(i * 7 + c * c + (i >> 2)) % 5]!);
      return `State:\n${[0, 4, 8, 12].map((r) => cells.slice(r, r + 4).join("")).join("\n")}\nPlayer and Goal.`;
    });
    const cellTokens = (t: { encode(text: string): number[]; decode(ids: number[]): string }, grid: string) =>
      t.encode(grid).map((id) => t.decode([id]).replace(/[^_OPG√]/g, ""));
    const merged = trainBpeTokenizer(grids, { vocabSize: 400 });
    expect(cellTokens(merged.tokenizer, grids[0]!).some((cells) => cells.length > 1)).toBe(true);

    const separate = trainBpeTokenizer(grids, { vocabSize: 400, separateCharacters: "_OPG√" });
    for (const grid of grids.slice(0, 50)) {
      expect(cellTokens(separate.tokenizer, grid).every((cells) => cells.length <= 1)).toBe(true);
      expect(separate.tokenizer.decode(separate.tokenizer.encode(grid))).toBe(grid);
    }
    // Words still merge, and the multi-byte √ is still one token.
    expect(separate.tokenizer.encode(" Goal").length).toBe(1);
    expect(separate.tokenizer.encode("√").length).toBe(1);
    const reference = new HuggingFaceTokenizer(
      JSON.parse(JSON.stringify(separate.tokenizerJson)),
      JSON.parse(JSON.stringify(separate.tokenizerConfig)),
    );
    for (const grid of grids.slice(0, 50))
      expect(separate.tokenizer.encode(grid)).toEqual(reference.encode(grid).ids);
  });

  it("keeps each piece of a custom splitPattern together, so a frequent phrase becomes one token", () => {
    const texts = Array.from(
      { length: 400 },
      (_, i) => `Player: (${i % 4}, ${(i >> 2) % 4})\nGoal: (${(i >> 1) % 4}, ${(i * 3) % 4}) at step ${i}.`,
    );
    const splitPattern = ` ?\\(\\d, \\d\\)|${QWEN2_SPLIT_PATTERN}`;
    const trained = trainBpeTokenizer(texts, { vocabSize: 400, splitPattern });
    const plain = trainBpeTokenizer(texts, { vocabSize: 400 });
    for (let row = 0; row < 4; row++)
      for (let col = 0; col < 4; col++) {
        expect(trained.tokenizer.encode(` (${row}, ${col})`).length).toBe(1);
        // Qwen's pattern splits digits and punctuation apart, so the default never merges them.
        expect(plain.tokenizer.encode(` (${row}, ${col})`).length).toBeGreaterThan(1);
      }
    const reference = new HuggingFaceTokenizer(
      JSON.parse(JSON.stringify(trained.tokenizerJson)),
      JSON.parse(JSON.stringify(trained.tokenizerConfig)),
    );
    for (const text of texts.slice(0, 50)) {
      expect(trained.tokenizer.encode(text)).toEqual(reference.encode(text).ids);
      expect(trained.tokenizer.decode(trained.tokenizer.encode(text))).toBe(text);
    }
    expect(() => trainBpeTokenizer(texts, { vocabSize: 400, splitPattern: "(?<name>x)" })).toThrow(
      /splitPattern/,
    );
  });

  it("rejects impossible options", () => {
    expect(() => trainBpeTokenizer([], { vocabSize: 100 })).toThrow(TokenizerError);
    expect(() => trainBpeTokenizer([], { vocabSize: 300, eosToken: "</s>" })).toThrow(/eosToken "<\/s>"/);
    expect(() => trainBpeTokenizer([], { vocabSize: 300, addedTokens: ["<|im_end|>"] })).toThrow(/distinct/);
  });
});

describe("learnMerges", () => {
  // The textbook algorithm: recount every pair after each merge.
  function naiveMerges(counts: Map<string, number>, maxMerges: number): [number, number][] {
    const { tokens } = learnMerges(new Map(), 0, 2); // just the 256 byte tokens, in id order
    const idOfByte = new Map(tokens.map((bytes, id) => [bytes[0]!, id]));
    let words = [...counts].map(([text, count]) => ({
      symbols: [...new TextEncoder().encode(text)].map((byte) => idOfByte.get(byte)!),
      count,
    }));
    const merges: [number, number][] = [];
    for (let next = 256; merges.length < maxMerges; next++) {
      const pairs = new Map<string, number>();
      for (const { symbols, count } of words) {
        for (let i = 0; i + 1 < symbols.length; i++) {
          const key = `${symbols[i]},${symbols[i + 1]}`;
          pairs.set(key, (pairs.get(key) ?? 0) + count);
        }
      }
      let best: [number, number] | null = null;
      let bestCount = 1;
      for (const [key, count] of pairs) {
        const [left, right] = key.split(",").map(Number) as [number, number];
        const better =
          count > bestCount ||
          (count === bestCount && best !== null && (left < best[0] || (left === best[0] && right < best[1])));
        if (better) {
          best = [left, right];
          bestCount = count;
        }
      }
      if (best === null) break;
      merges.push(best);
      const [left, right] = best;
      words = words.map(({ symbols, count }) => {
        const out: number[] = [];
        for (let i = 0; i < symbols.length; i++) {
          if (symbols[i] === left && symbols[i + 1] === right) {
            out.push(next);
            i++;
          } else out.push(symbols[i]!);
        }
        return { symbols: out, count };
      });
    }
    return merges;
  }

  it("learns the same merges as recounting every pair after each merge", () => {
    const counts = new Map<string, number>();
    const pattern = /\S+|\s+/gu;
    for (const text of [
      ...trajectories.slice(0, 40),
      "aaaaaaa bbbb aaaa abab ababab",
      ...HAND_PICKED.slice(0, 8),
    ]) {
      for (const [piece] of text.matchAll(pattern)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
    }
    expect(learnMerges(counts, 150, 2).merges).toEqual(naiveMerges(counts, 150));
  });
});
