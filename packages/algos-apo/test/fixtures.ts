import { createEnv } from "@ragen/envs";
import { Qwen2Model, type Qwen2Shape } from "@ragen/models";
import {
  instructionText,
  type Policy,
  type PolicyOutput,
  type PolicyPrompt,
  type PolicySampling,
  SYSTEM_PROMPT,
  type Trajectory,
  turnText,
} from "@ragen/rollout";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { type Tokenizer, trainBpeTokenizer } from "@ragen/tokenizer";

export const cpu = createCpuBackend();

const FORMAT = { enableThinking: true, maxActionsPerTurn: 1, maxResponseLength: 8 };

/** A small BPE vocabulary trained on the texts a Bandit rollout shows. */
export function banditTokenizer(vocabSize = 320): Tokenizer {
  const env = createEnv("Bandit");
  const corpus = [SYSTEM_PROMPT];
  for (let seed = 0; seed < 8; seed++) {
    const observation = env.reset(seed);
    corpus.push(instructionText(env.instructions, env.actions, 1), turnText(1, observation, 1, FORMAT));
    corpus.push(` ${env.actions![seed % 2]} pays more </think> <answer> ${env.actions![seed % 2]} </answer>`);
  }
  return trainBpeTokenizer(corpus, {
    vocabSize,
    addedTokens: ["<think>", "</think>", "<answer>", "</answer>"],
  }).tokenizer;
}

/** A random Qwen2 small enough that a CPU rollout and update take well under a second. */
export function tinyModel(vocabSize: number, seed: number): Qwen2Model {
  const shape: Qwen2Shape = {
    vocabSize,
    hiddenSize: 16,
    intermediateSize: 32,
    numHiddenLayers: 1,
    numAttentionHeads: 2,
    numKeyValueHeads: 1,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings: true,
    initializerRange: 0.1,
  };
  return Qwen2Model.random(shape, seed, cpu);
}

/** A second model with the same weights: the frozen reference of an actor. */
export async function frozenCopy(model: Qwen2Model): Promise<Qwen2Model> {
  return Qwen2Model.fromWeights(model.config, await model.stateDict(), cpu);
}

/**
 * Answers Bandit prompts from a script without a model: prompt p of a call picks `arms(p)`, by name.
 * Counts the prompts it saw, so a test can tell whether anything was sampled.
 */
export class ArmPolicy implements Policy {
  prompts = 0;
  calls = 0;
  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly arm: (prompt: number) => "Dragon" | "Phoenix",
  ) {}

  async generate(prompts: readonly PolicyPrompt[], _sampling: PolicySampling): Promise<PolicyOutput[]> {
    this.calls++;
    this.prompts += prompts.length;
    return prompts.map((_, p) => {
      const arm = this.arm(p);
      const ids = [
        ...this.tokenizer.encode(` ${arm} </think> <answer> ${arm} </answer>`),
        this.tokenizer.imEndId!,
      ];
      return { tokens: Int32Array.from(ids), logProbs: new Float32Array(ids.length).fill(-1) };
    });
  }
}

/** A trajectory with the given tokens and mask; everything else neutral. */
export function trajectory(
  fields: Pick<Trajectory, "tokens" | "lossMask" | "reward"> & Partial<Trajectory>,
): Trajectory {
  return {
    index: 0,
    groupId: 0,
    tag: "Test",
    seed: 0,
    oldLogProbs: new Float32Array(fields.tokens.length),
    tokenRewards: new Float32Array(fields.tokens.length),
    turns: [],
    success: fields.reward > 0,
    numActions: 1,
    actionIsValid: 1,
    actionIsEffective: 1,
    responseLength: fields.lossMask.reduce((a, b) => a + b, 0),
    finishReason: "done",
    ...fields,
  };
}
