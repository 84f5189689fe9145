/**
 * Whether a run fits its device's memory, checked at start-up from estimateTrainingMemory: a run that
 * would not fit stops before its first rollout, with the estimate and settings that would fit, rather
 * than being killed mid-step or while saving (as a full fine-tune of a 0.5B model on 24 GB was).
 */
import { usesCritic } from "@ragen/algos-ppo";
import { actionBudget, ConfigError, createEnv } from "@ragen/envs";
import {
  estimateTrainingMemory,
  type Qwen2Shape,
  type TrainingMemoryEstimate,
  type TrainingMemoryOptions,
} from "@ragen/models";
import { Conversation, instructionText, VALIDATION_SEED } from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import type { TrainingSettings } from "../settings/fields.js";

const GiB = 2 ** 30;

/** What the estimate reads of a run's settings (LoRA when the settings have it). */
export type MemorySettings = Pick<
  TrainingSettings,
  "algorithm" | "envs" | "train" | "rollout" | "starpo" | "apo"
> & {
  lora?: { rank: number; targetModules?: readonly string[]; critic?: boolean };
  precision?: TrainingSettings["precision"];
};

/** Start states whose first observations are measured (observations differ in length between seeds). */
const MEASURED_SEEDS = 4;

/**
 * The most tokens one trained sequence of these settings can hold, measured with the run's tokenizer on
 * its envs' real prompts: the first prompt, then each further turn's text with a full-length response
 * before it, up to rollout.maxTurns (or the turns the history window keeps), and never more than
 * rollout.maxSequenceLength. The action budget does not shorten it: a turn whose answer names no action
 * spends none of the budget, so a one-action env (Bandit) whose model has not learned the format yet
 * plays every turn — a random 0.5B model's Bandit episodes ran 5 turns, 1,107 tokens.
 */
export function longestSequence(settings: MemorySettings, tokenizer: Tokenizer): number {
  const { maxTurns, maxActionsPerTurn, maxNewTokens, enableThinking, historyWindow, maxSequenceLength } =
    settings.rollout;
  const format = { enableThinking, maxActionsPerTurn, maxResponseLength: maxNewTokens };
  // Any token that does not stop generation stands in for a response.
  const filler = new Int32Array(maxNewTokens).fill(tokenizer.encode("a")[0] ?? 0);
  let longest = 0;
  for (const tag of settings.envs) {
    const budget = actionBudget(tag, settings.rollout);
    const turns = Math.max(1, Math.min(maxTurns, historyWindow ?? maxTurns));
    for (let seed = VALIDATION_SEED; seed < VALIDATION_SEED + MEASURED_SEEDS; seed++) {
      const env = createEnv(tag);
      const observation = env.reset(seed);
      const chat = new Conversation(
        tokenizer,
        instructionText(env.instructions, env.actions, maxActionsPerTurn),
        format,
      );
      chat.openTurn(observation, budget);
      const first = chat.promptTokens().length;
      chat.recordResponse(filler, new Float32Array(maxNewTokens));
      chat.recordReward(0);
      chat.openTurn(observation, budget);
      const perTurn = chat.promptTokens().length - first;
      longest = Math.max(longest, first + (turns - 1) * perTurn + maxNewTokens);
    }
  }
  return Math.min(longest, maxSequenceLength);
}

/** estimateTrainingMemory's options for a run: its micro- and mini-batches, LoRA, critic and reference. */
export function trainingMemoryOptions(settings: MemorySettings, seqLen: number): TrainingMemoryOptions {
  const starpo = settings.algorithm === "starpo";
  const rollouts = settings.train.envGroups * settings.train.groupSize;
  const microBatch = starpo ? settings.starpo.microBatchSize : settings.apo.microBatchSize;
  const miniBatch = starpo ? settings.starpo.ppoMiniBatchSize : settings.apo.miniBatchSize;
  const lora = settings.lora && settings.lora.rank > 0 ? settings.lora : undefined;
  const critic = starpo && usesCritic(settings.starpo.advantageEstimator);
  return {
    // f16 weights, gradients and activations with f32 masters (the estimate counts the f32 attention
    // region, and generation on an f32 copy with an f32 KV cache).
    ...(settings.precision === "f16"
      ? { weights: "f16" as const, gradients: "f16" as const, activations: "f16" as const }
      : {}),
    microBatch: Math.min(microBatch, rollouts),
    batch: Math.max(Math.min(microBatch, rollouts), Math.min(miniBatch, rollouts)),
    seqLen,
    ...(lora
      ? { lora: { rank: lora.rank, ...(lora.targetModules ? { targets: lora.targetModules as never } : {}) } }
      : {}),
    // With LoRA the reference is the base model with its adapters off: no second copy.
    referenceModel: starpo && (settings.starpo.klCoeff > 0 || settings.starpo.klInReward) && !lora,
    critic,
    entropy: (starpo ? settings.starpo.entropyCoeff : settings.apo.entropyCoeff) > 0,
    rollout: {
      batch: rollouts,
      promptLength: Math.max(1, seqLen - settings.rollout.maxNewTokens),
      newTokens: settings.rollout.maxNewTokens,
      prefillTokens: settings.rollout.prefillTokens,
    },
  };
}

/** Changes to try, in order, when a run does not fit: each as key=value overrides and the settings they make. */
function candidateChanges(settings: MemorySettings): { overrides: string[]; settings: MemorySettings }[] {
  const out: { overrides: string[]; settings: MemorySettings }[] = [];
  const withLora = (s: MemorySettings): MemorySettings => ({
    ...s,
    lora: { ...s.lora, rank: 64, critic: true },
  });
  const withMicro = (s: MemorySettings, micro: number): MemorySettings => ({
    ...s,
    starpo: { ...s.starpo, microBatchSize: micro },
    apo: { ...s.apo, microBatchSize: micro },
  });
  const loraOff = !(settings.lora && settings.lora.rank > 0);
  const micro =
    settings.algorithm === "starpo" ? settings.starpo.microBatchSize : settings.apo.microBatchSize;
  const field = settings.algorithm === "starpo" ? "starpo.microBatchSize" : "apo.microBatchSize";
  if (loraOff) out.push({ overrides: ["lora.rank=64", "lora.critic=true"], settings: withLora(settings) });
  for (let m = Math.floor(micro / 2); m >= 1; m = Math.floor(m / 2)) {
    out.push({ overrides: [`${field}=${m}`], settings: withMicro(settings, m) });
    if (loraOff)
      out.push({
        overrides: ["lora.rank=64", "lora.critic=true", `${field}=${m}`],
        settings: withMicro(withLora(settings), m),
      });
  }
  return out;
}

const gib = (bytes: number) => `${(bytes / GiB).toFixed(1)} GiB`;

/**
 * Estimates the run's peak device memory for `config` and sequences of `seqLen` tokens; throws a
 * ConfigError naming deviceMemoryGiB, the estimate term by term, and the smallest changes that fit
 * when it exceeds `budgetBytes`. Returns the estimate.
 */
export function checkMemoryFit(
  settings: MemorySettings,
  config: Qwen2Shape,
  seqLen: number,
  budgetBytes: number,
  budgetSource: string,
): TrainingMemoryEstimate {
  const estimate = estimateTrainingMemory(config, trainingMemoryOptions(settings, seqLen));
  if (estimate.peak <= budgetBytes) return estimate;
  const b = estimate.bytes;
  const fitting = candidateChanges(settings)
    .map((change) => ({
      ...change,
      peak: estimateTrainingMemory(config, trainingMemoryOptions(change.settings, seqLen)).peak,
    }))
    .filter((change) => change.peak <= budgetBytes)
    .slice(0, 3);
  const terms = [
    `weights ${gib(b.weights)}`,
    `gradients ${gib(b.gradients)}`,
    `AdamW ${gib(b.optimizerState)}`,
    ...(b.criticState > 0 ? [`critic ${gib(b.criticState)}`] : []),
    ...(b.referenceWeights > 0 ? [`reference ${gib(b.referenceWeights)}`] : []),
    `activations ${gib(b.activations)}`,
    `logits ${gib(b.logits)}`,
  ];
  const advice =
    fitting.length > 0
      ? `settings that fit: ${fitting.map((c) => `${c.overrides.join(" ")} (${gib(c.peak)})`).join("; ")}`
      : "no single change tried (LoRA, a smaller micro-batch) fits; shorten rollout.maxNewTokens or rollout.maxTurns, or use a device with more memory";
  throw new ConfigError("settings for this device", [
    {
      field: "deviceMemoryGiB",
      message: `this run needs about ${gib(estimate.peak)} of device memory at its peak (${estimate.peak === estimate.trainingPeak ? `the update's ${estimate.trainingPeakPhase}` : "the rollout"}; sequences of up to ${seqLen} tokens: ${terms.join(", ")}), and ${budgetSource} allows ${gib(budgetBytes)}; ${advice}`,
    },
  ]);
}
