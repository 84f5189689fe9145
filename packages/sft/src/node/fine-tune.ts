/**
 * Supervised fine-tuning of a Qwen2 policy on SFT chats, fully or with LoRA adapters, with the same
 * training loop the embedded model's warm start uses (loss on the assistant tokens only, each chat
 * tokenised exactly as a rollout is). Saves a Hugging Face folder (full, or LoRA merged) or a PEFT-layout
 * adapter.
 */
import { type LoraAdapters, QWEN2_LINEAR_MODULES, type Qwen2Config, type Qwen2Model } from "@ragen/models";
import { saveQwen2 } from "@ragen/models/node";
import type { Tokenizer } from "@ragen/tokenizer";
import type { SftConversation } from "../sft-data.js";
import { tokenizeConversations, warmStart } from "../warm-start.js";

export type LoraTarget = (typeof QWEN2_LINEAR_MODULES)[number];

/** A loaded model with what saving it takes (a trainer's `LoadedPolicy` is one). */
export interface FineTunedPolicy {
  model: Qwen2Model;
  config: Qwen2Config;
  tokenizer: Tokenizer;
  /** tokenizer.json and tokenizer_config.json as read, written beside the saved weights. */
  tokenizerFiles: { tokenizer: unknown; tokenizerConfig: Record<string, unknown> | undefined };
}

export interface FineTuneOptions {
  /** "full": every weight trains; "lora": only low-rank adapters on the linear layers. */
  mode: "full" | "lora";
  steps: number;
  batchSize: number;
  lr: number;
  decay?: "none" | "linear";
  seed: number;
  lora?: { rank: number; alpha: number; targets?: readonly LoraTarget[] };
  onStep?: (step: number, loss: number) => void | Promise<void>;
}

export interface FineTuneResult {
  /** Mean loss per assistant token, per step. */
  losses: number[];
  /** The trained adapters (mode "lora"), still attached to the model. */
  adapters: LoraAdapters | undefined;
}

/** Trains `policy.model` in place on the chats; with mode "lora" the adapters stay attached. */
export async function fineTune(
  policy: FineTunedPolicy,
  chats: readonly SftConversation[],
  options: FineTuneOptions,
): Promise<FineTuneResult> {
  let adapters: LoraAdapters | undefined;
  if (options.mode === "lora") {
    const lora = options.lora ?? { rank: 8, alpha: 16 };
    adapters = policy.model.attachLora({
      rank: lora.rank,
      alpha: lora.alpha,
      targets: lora.targets ?? QWEN2_LINEAR_MODULES,
      seed: options.seed,
    });
  }
  const sequences = tokenizeConversations(policy.tokenizer, chats);
  const losses = await warmStart(policy.model, sequences, policy.tokenizer.padTokenId ?? 0, {
    steps: options.steps,
    batchSize: options.batchSize,
    lr: options.lr,
    decay: options.decay ?? "none",
    seed: options.seed,
    ...(options.onStep ? { onStep: options.onStep } : {}),
  });
  return { losses, adapters };
}

/**
 * Saves the fine-tuned policy as a Hugging Face folder, atomically; `adapters` (attached LoRA) are merged
 * into the weights first.
 */
export async function saveMergedPolicy(
  policy: FineTunedPolicy,
  out: string,
  adapters: LoraAdapters | undefined,
): Promise<void> {
  if (adapters) policy.model.mergeLora();
  await saveQwen2(policy.model, policy.config, out, {
    tokenizer: policy.tokenizerFiles.tokenizer,
    ...(policy.tokenizerFiles.tokenizerConfig
      ? { tokenizerConfig: policy.tokenizerFiles.tokenizerConfig }
      : {}),
    overwrite: true,
  });
}
