/**
 * Supervised warm start of the embedded model on the SFT chats: next-token cross-entropy on the
 * assistant tokens only, with each chat tokenised exactly as a rollout would (the same Conversation
 * code builds both), so the warm-started model sees at RL time the very layout it was trained on.
 */
import type { Qwen2Model } from "@ragen/models";
import { Conversation, type PromptFormat, type TokenSequence } from "@ragen/rollout";
import { AdamW, asyncScope, backward, mul, scale, sum, tensor } from "@ragen/tensor-webgpu";
import type { Tokenizer } from "@ragen/tokenizer";
import { DEFAULT_SFT_FORMAT, type SftConversation } from "./sft-data.js";

/** Token sequences of the chats, with the loss mask on the assistant's tokens. */
export function tokenizeConversations(
  tokenizer: Tokenizer,
  conversations: readonly SftConversation[],
  format: PromptFormat = DEFAULT_SFT_FORMAT,
): TokenSequence[] {
  const end = tokenizer.imEndId;
  if (end === undefined) throw new Error("tokenizeConversations(): the tokenizer has no <|im_end|> token");
  return conversations.map((chat) => {
    const conversation = new Conversation(tokenizer, chat.instructions, format);
    for (const turn of chat.turns) {
      conversation.openTurn(turn.observation, turn.actionsLeft);
      const ids = Int32Array.from([...tokenizer.encode(turn.response ?? ""), end]);
      conversation.recordResponse(ids, new Float32Array(ids.length));
      conversation.recordReward(turn.reward ?? 0);
    }
    return conversation.sequence();
  });
}

/**
 * Per-token loss weights of a sequence: `weight` on the assistant's answer (the tokens after each
 * "<answer>" up to and including its "</answer>"), 1 on every other token. A grid env's answer is one
 * or two tokens of a forty-token response, so at weight 1 the loss says little about whether the answer
 * is right; a larger weight gives the answer the share of the loss its effect on the reward has.
 */
export function answerTokenWeights(
  tokenizer: Tokenizer,
  sequence: TokenSequence,
  weight: number,
): Float32Array {
  const open = tokenizer.encode("<answer>");
  const close = tokenizer.encode("</answer>");
  const { tokens, lossMask } = sequence;
  const startsAt = (pattern: Int32Array | readonly number[], t: number) =>
    Array.from(pattern).every((id, k) => tokens[t + k] === id);
  const weights = new Float32Array(tokens.length).fill(1);
  let inAnswer = false;
  for (let t = 0; t < tokens.length; t++) {
    if (!lossMask[t]) {
      inAnswer = false;
      continue;
    }
    if (!inAnswer && startsAt(open, t)) {
      inAnswer = true;
      t += open.length - 1;
      continue;
    }
    if (inAnswer) {
      if (startsAt(close, t)) {
        weights.fill(weight, t, t + close.length);
        t += close.length - 1;
        inAnswer = false;
      } else weights[t] = weight;
    }
  }
  return weights;
}

/**
 * Inputs and targets of a right-padded batch; targets are -100 wherever the next token is not the model's.
 * With `tokenWeights` (one array per sequence, as `answerTokenWeights` makes), `weights` holds each
 * target's loss weight and `weightSum` their total; without, every target weighs 1.
 */
export function packBatch(
  sequences: readonly TokenSequence[],
  pad: number,
  tokenWeights?: readonly Float32Array[],
): {
  ids: Int32Array;
  targets: Int32Array;
  weights: Float32Array;
  weightSum: number;
  batch: number;
  seqLen: number;
  predicted: number;
} {
  const seqLen = Math.max(...sequences.map((s) => s.tokens.length)) - 1;
  const ids = new Int32Array(sequences.length * seqLen).fill(pad);
  const targets = new Int32Array(sequences.length * seqLen).fill(-100);
  const weights = new Float32Array(sequences.length * seqLen);
  let predicted = 0;
  let weightSum = 0;
  sequences.forEach((s, b) => {
    for (let t = 0; t + 1 < s.tokens.length; t++) {
      ids[b * seqLen + t] = s.tokens[t]!;
      // Position t predicts token t + 1: it is trained on only when that token is the assistant's.
      if (s.lossMask[t + 1]) {
        targets[b * seqLen + t] = s.tokens[t + 1]!;
        const weight = tokenWeights?.[b]?.[t + 1] ?? 1;
        weights[b * seqLen + t] = weight;
        weightSum += weight;
        predicted++;
      }
    }
  });
  return { ids, targets, weights, weightSum, batch: sequences.length, seqLen, predicted };
}

export interface WarmStartOptions {
  steps: number;
  batchSize: number;
  lr: number;
  /** "linear": the learning rate falls to a tenth by the last step; "none" (default): constant. */
  decay?: "none" | "linear";
  seed: number;
  /**
   * Loss weight per token, one array per sequence (see answerTokenWeights); the step's loss is then the
   * weighted mean over assistant tokens.
   */
  tokenWeights?: readonly Float32Array[];
  /** Called after each step with the mean loss per assistant token (weighted by `tokenWeights` when given). */
  onStep?: (step: number, loss: number) => void | Promise<void>;
}

/** Train `model` on the sequences; returns the loss per step. */
export async function warmStart(
  model: Qwen2Model,
  sequences: readonly TokenSequence[],
  pad: number,
  options: WarmStartOptions,
): Promise<number[]> {
  const optimizer = new AdamW(model.parameters(), { lr: options.lr, weightDecay: 0.01, maxGradNorm: 1 });
  const backend = model.param("model.embed_tokens.weight").backend;
  const losses: number[] = [];
  let order = 0;
  for (let step = 0; step < options.steps; step++) {
    if (options.decay === "linear")
      optimizer.lr = options.lr * (1 - (0.9 * step) / Math.max(1, options.steps));
    // Batches walk the data in a fixed seeded rotation: the same seed gives the same run.
    const chosenIndices = Array.from(
      { length: options.batchSize },
      (_, i) => (order + i * 7919 + options.seed) % sequences.length,
    );
    order += options.batchSize;
    const tokenWeights = options.tokenWeights;
    const { ids, targets, weights, weightSum, batch, seqLen } = packBatch(
      chosenIndices.map((i) => sequences[i]!),
      pad,
      tokenWeights && chosenIndices.map((i) => tokenWeights[i]!),
    );
    const loss = await asyncScope(async () => {
      // Cross-entropy is −log p(target): the head runs on the assistant's tokens alone, in chunks past
      // the model's maxLogits, as the RL losses' does.
      const trained = targets.map((id) => (id >= 0 ? 1 : 0));
      const { logProbs } = model.sequenceLogProbs(
        { ids, batch, seqLen },
        targets.map((id) => Math.max(id, 0)),
        1,
        trained,
      );
      const weighted = mul(logProbs, tensor(weights, [batch, seqLen], { backend }));
      const mean = scale(sum(weighted), -1 / Math.max(weightSum, 1e-9));
      backward(mean);
      const { gradNorm, clipScale } = optimizer.step();
      optimizer.zeroGrad();
      gradNorm.dispose();
      clipScale.dispose();
      return mean.item();
    });
    losses.push(loss);
    await options.onStep?.(step, loss);
  }
  optimizer.dispose();
  return losses;
}
