import type { ChatMessage } from "@ragen/tokenizer";

/** What a policy is asked to continue. */
export interface PolicyPrompt {
  /** The exact prompt ids, ending with the response prefix ("<think>" or "<answer>"). */
  tokens: Int32Array;
  /** The same chat as messages, for policies behind a chat API (the prefix is not in them). */
  messages: ChatMessage[];
  /** The text the response is expected to continue from. */
  responsePrefix: string;
  /**
   * The episode this prompt continues, when the caller tracks one: remote policies send an episode's
   * turns to the same server while it is up, so the server's prefix cache holds its history.
   */
  episodeId?: string;
}

export interface PolicySampling {
  maxNewTokens: number;
  temperature: number;
  topP?: number;
  topK?: number;
  /** Seed of this call's sampling (a rollout passes a fresh one each turn). */
  seed?: number;
}

export interface PolicyOutput {
  /** The sampled continuation, not including the prompt (a trailing stop token is kept). */
  tokens: Int32Array;
  /** The sampler's log-prob of each token; NaN where the sampler did not report one. */
  logProbs: Float32Array;
}

/** Token in, token out: a rollout keeps exactly the ids a policy returns. */
export interface Policy {
  generate(prompts: readonly PolicyPrompt[], sampling: PolicySampling): Promise<PolicyOutput[]>;
  /**
   * Called when a rollout begins and when it ends (also on failure). Between the two the policy's weights
   * do not change, so state derived from them (such as cached prompt prefixes) is valid only in between.
   */
  rolloutBoundary?(): void;
}

/**
 * The seed of prompt `index` of a turn sampled with `seed` when each prompt has a random stream of its
 * own: the seed VllmCompletionsPolicy sends with each request, and the stream LocalModelPolicy
 * (seedPerPrompt) and this project's policy server draw that prompt from. One rule for all three keeps
 * a local run and a run on the server sampling the same tokens.
 */
export function promptSeed(seed: number, index: number): number {
  return seed + index;
}
