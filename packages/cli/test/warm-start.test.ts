import { Qwen2Model } from "@ragen/models";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { trainBpeTokenizer } from "@ragen/tokenizer";
import { describe, expect, it } from "vitest";
import { generateSftConversations, sftCorpus } from "../src/sft/sft-data.js";
import { packBatch, tokenizeConversations, warmStart } from "../src/sft/warm-start.js";

const chats = [
  ...generateSftConversations({
    envTag: "FrozenLake",
    seeds: Array.from({ length: 24 }, (_, i) => 1000 + i),
    oracleProbability: 0.6,
  }),
  ...generateSftConversations({
    envTag: "Bandit",
    seeds: Array.from({ length: 24 }, (_, i) => 1000 + i),
    oracleProbability: 0.6,
  }),
];
const { tokenizer } = trainBpeTokenizer(sftCorpus(chats), {
  vocabSize: 400,
  addedTokens: ["<think>", "</think>", "<answer>", "</answer>"],
});

describe("warm start", () => {
  it("masks exactly the assistant's tokens, which decode to the responses", () => {
    const [sequence] = tokenizeConversations(tokenizer, chats.slice(0, 1));
    const assistant = Array.from(sequence!.tokens).filter((_, i) => sequence!.lossMask[i] === 1);
    const expected = chats[0]!.turns.map((t) => `${t.response}<|im_end|>`).join("");
    expect(tokenizer.decode(Int32Array.from(assistant))).toBe(expected);
  });

  it("trains on position t only when token t + 1 is the assistant's", () => {
    const sequences = tokenizeConversations(tokenizer, chats.slice(0, 2));
    const { ids, targets, seqLen, predicted } = packBatch(sequences, 0);
    const s = sequences[0]!;
    for (let t = 0; t + 1 < s.tokens.length; t++) {
      expect(ids[t]).toBe(s.tokens[t]);
      expect(targets[t]).toBe(s.lossMask[t + 1] ? s.tokens[t + 1] : -100);
    }
    expect(predicted).toBe(sequences.reduce((n, q) => n + q.lossMask.slice(1).reduce((a, m) => a + m, 0), 0));
    expect(targets.length).toBe(2 * seqLen);
  });

  it("lowers the assistant-token loss of a tiny Qwen2", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(
      {
        vocabSize: tokenizer.vocabSize,
        hiddenSize: 48,
        intermediateSize: 96,
        numHiddenLayers: 2,
        numAttentionHeads: 4,
        numKeyValueHeads: 2,
        rmsNormEps: 1e-6,
        ropeTheta: 10000,
        tieWordEmbeddings: true,
      },
      0,
      backend,
    );
    // Bandit chats are one short turn each: enough to see learning in a unit test's time.
    const sequences = tokenizeConversations(
      tokenizer,
      chats.filter((c) => c.envTag === "Bandit"),
    );
    const losses = await warmStart(model, sequences, tokenizer.padTokenId ?? 0, {
      steps: 25,
      batchSize: 4,
      lr: 3e-3,
      seed: 0,
    });
    const first = losses.slice(0, 3).reduce((a, b) => a + b, 0) / 3;
    const last = losses.slice(-3).reduce((a, b) => a + b, 0) / 3;
    expect(last).toBeLessThan(first * 0.6);
    model.dispose();
  });
});
