/**
 * Supervised warm start of the embedded model on the SFT chats: next-token cross-entropy on the
 * assistant tokens only, with each chat tokenised exactly as a rollout would (the same Conversation
 * code builds both), so the warm-started model sees at RL time the very layout it was trained on.
 */
import type { Qwen2Model } from "@ragen/models";
import { Conversation, type PromptFormat, type TokenSequence } from "@ragen/rollout";
import { AdamW, asyncScope, backward, crossEntropy, reshape, scale, sum, tensor } from "@ragen/tensor-webgpu";
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

/** Inputs and targets of a right-padded batch; targets are -100 wherever the next token is not the model's. */
export function packBatch(
  sequences: readonly TokenSequence[],
  pad: number,
): {
  ids: Int32Array;
  targets: Int32Array;
  batch: number;
  seqLen: number;
  predicted: number;
} {
  const seqLen = Math.max(...sequences.map((s) => s.tokens.length)) - 1;
  const ids = new Int32Array(sequences.length * seqLen).fill(pad);
  const targets = new Int32Array(sequences.length * seqLen).fill(-100);
  let predicted = 0;
  sequences.forEach((s, b) => {
    for (let t = 0; t + 1 < s.tokens.length; t++) {
      ids[b * seqLen + t] = s.tokens[t]!;
      // Position t predicts token t + 1: it is trained on only when that token is the assistant's.
      if (s.lossMask[t + 1]) {
        targets[b * seqLen + t] = s.tokens[t + 1]!;
        predicted++;
      }
    }
  });
  return { ids, targets, batch: sequences.length, seqLen, predicted };
}

export interface WarmStartOptions {
  steps: number;
  batchSize: number;
  lr: number;
  /** "linear": the learning rate falls to a tenth by the last step; "none" (default): constant. */
  decay?: "none" | "linear";
  seed: number;
  /** Called after each step with the mean loss per assistant token. */
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
    const chosen = Array.from(
      { length: options.batchSize },
      (_, i) => sequences[(order + i * 7919 + options.seed) % sequences.length]!,
    );
    order += options.batchSize;
    const { ids, targets, batch, seqLen, predicted } = packBatch(chosen, pad);
    const loss = await asyncScope(async () => {
      const logits = model.logits({ ids, batch, seqLen });
      const t = tensor(targets, [batch * seqLen], { backend, dtype: "i32" });
      const perToken = crossEntropy(reshape(logits, [batch * seqLen, model.config.vocabSize]), t);
      const mean = scale(sum(perToken), 1 / Math.max(predicted, 1));
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
