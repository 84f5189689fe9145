import { Qwen2Model } from "@ragen/models";
import {
  type Backend,
  crossEntropy,
  noGrad,
  reshape,
  scope,
  tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { trainBpeTokenizer } from "@ragen/tokenizer";
import { describe, expect, it } from "vitest";
import { generateSftConversations, sftCorpus } from "../src/sft-data.js";
import { answerTokenWeights, packBatch, tokenizeConversations, warmStart } from "../src/warm-start.js";

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

/** A two-layer Qwen2 over the test vocabulary, the same weights on every call. */
function tinyModel(backend: Backend): Qwen2Model {
  return Qwen2Model.random(
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
}

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

  it("weighs exactly the answers' tokens, closing tag included, by the answer weight", () => {
    const [sequence] = tokenizeConversations(tokenizer, chats.slice(0, 1));
    const weights = answerTokenWeights(tokenizer, sequence!, 5);
    const weighted = Array.from(sequence!.tokens).filter((_, i) => weights[i] === 5);
    const expected = chats[0]!.turns
      .map((t) => `${/<answer>(.*?<\/answer>)/.exec(t.response ?? "")![1]}`)
      .join("");
    expect(tokenizer.decode(Int32Array.from(weighted))).toBe(expected);
    expect(weights.every((w) => w === 1 || w === 5)).toBe(true);
    // The rules text and observations are not the assistant's: an "<answer>" there weighs nothing more.
    sequence!.lossMask.forEach((m, i) => {
      if (!m) expect(weights[i]).toBe(1);
    });
  });

  it("packs each target's weight and their sum, 1 per target without weights", () => {
    const sequences = tokenizeConversations(tokenizer, chats.slice(0, 2));
    const plain = packBatch(sequences, 0);
    expect(plain.weightSum).toBe(plain.predicted);
    const tokenWeights = sequences.map((s) => answerTokenWeights(tokenizer, s, 3));
    const { targets, weights, weightSum, seqLen } = packBatch(sequences, 0, tokenWeights);
    let sum = 0;
    for (let b = 0; b < 2; b++)
      for (let t = 0; t < seqLen; t++) {
        const at = b * seqLen + t;
        expect(weights[at]).toBe(targets[at] === -100 ? 0 : tokenWeights[b]![t + 1]);
        sum += weights[at]!;
      }
    expect(weightSum).toBeCloseTo(sum, 6);
    expect(weightSum).toBeGreaterThan(plain.weightSum);
  });

  it("with all weights 1 takes the same steps as without weights; a larger answer weight changes the loss", async () => {
    const backend = await webGpuBackend();
    const sequences = tokenizeConversations(
      tokenizer,
      chats.filter((c) => c.envTag === "Bandit").slice(0, 8),
    );
    const run = async (tokenWeights?: Float32Array[]) => {
      const model = tinyModel(backend);
      const losses = await warmStart(model, sequences, tokenizer.padTokenId ?? 0, {
        steps: 2,
        batchSize: 4,
        lr: 3e-3,
        seed: 0,
        ...(tokenWeights ? { tokenWeights } : {}),
      });
      model.dispose();
      return losses;
    };
    const plain = await run();
    const ones = await run(sequences.map((s) => new Float32Array(s.tokens.length).fill(1)));
    for (const [i, loss] of ones.entries()) expect(loss).toBeCloseTo(plain[i]!, 4);
    // The answer's tokens cost an untrained model a different loss from the response's average token.
    const weighted = await run(sequences.map((s) => answerTokenWeights(tokenizer, s, 20)));
    expect(weighted[0]).not.toBeCloseTo(plain[0]!, 2);
  });

  it("takes as its loss the weighted mean cross-entropy of the assistant's tokens over the whole head", async () => {
    const backend = await webGpuBackend();
    const sequences = tokenizeConversations(tokenizer, chats.slice(0, 10));
    const tokenWeights = sequences.map((s) => answerTokenWeights(tokenizer, s, 5));
    const pad = tokenizer.padTokenId ?? 0;
    // The first step's batch: the seeded rotation starts at sequence 0.
    const first = [0, 1, 2].map((i) => (i * 7919) % sequences.length);
    const { ids, targets, weights, weightSum, batch, seqLen } = packBatch(
      first.map((i) => sequences[i]!),
      pad,
      first.map((i) => tokenWeights[i]!),
    );
    const model = tinyModel(backend);
    const perToken = await noGrad(() =>
      scope(() => {
        const logits = reshape(model.logits({ ids, batch, seqLen }), [batch * seqLen, tokenizer.vocabSize]);
        return crossEntropy(logits, tensor(targets, [batch * seqLen], { backend, dtype: "i32" })).keep();
      }),
    ).floats();
    const expected = perToken.reduce((total, ce, t) => total + ce * weights[t]!, 0) / weightSum;
    const [loss] = await warmStart(model, sequences, pad, {
      steps: 1,
      batchSize: 3,
      lr: 1e-3,
      seed: 0,
      tokenWeights,
    });
    expect(loss).toBeCloseTo(expected, 4);
    model.dispose();
  });

  it("lowers the assistant-token loss of a tiny Qwen2", async () => {
    const model = tinyModel(await webGpuBackend());
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
