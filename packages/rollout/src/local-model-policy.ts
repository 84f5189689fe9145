import { generate, PrefixCache, type Qwen2Model } from "@ragen/models";
import type { Tokenizer } from "@ragen/tokenizer";
import {
  type Policy,
  type PolicyOutput,
  type PolicyPrompt,
  type PolicySampling,
  promptSeed,
} from "./policy.js";

export interface LocalModelPolicyOptions {
  /** Reuse each turn's cached prompt prefix from the previous turn (default true). */
  prefixCaching?: boolean;
  /** Prompt i of a turn draws from its own random stream, seed + i (default false). */
  seedPerPrompt?: boolean;
  /** The most prompt tokens one prefill pass runs (generate's prefillTokens; default 8,192). */
  prefillTokens?: number;
}

/**
 * A Qwen2 model on this machine, sampled with batched KV-cache generation; stops at <|im_end|> or eos.
 * Within a rollout it caches prompt prefixes (each turn's prompt extends the last one), so a turn runs the
 * model on the new tokens only; the cache is dropped at every rollout boundary, when weights may change.
 *
 * A batch draws from one random stream seeded by the turn's seed, or, with `seedPerPrompt`, prompt i
 * draws from its own stream seeded seed + i: what an inference server does with VllmCompletionsPolicy's
 * per-request seeds, so a run sampled here and one sampled on this project's server agree token for token.
 */
export class LocalModelPolicy implements Policy {
  readonly stopTokenIds: readonly number[];
  readonly prefixCache: PrefixCache | undefined;
  readonly seedPerPrompt: boolean;
  readonly prefillTokens: number | undefined;

  constructor(
    readonly model: Qwen2Model,
    tokenizer: Pick<Tokenizer, "imEndId" | "eosTokenId">,
    options: LocalModelPolicyOptions = {},
  ) {
    this.prefixCache = options.prefixCaching === false ? undefined : new PrefixCache();
    this.seedPerPrompt = options.seedPerPrompt ?? false;
    this.prefillTokens = options.prefillTokens;
    this.stopTokenIds = [...new Set([tokenizer.imEndId, tokenizer.eosTokenId])].filter(
      (id): id is number => id !== undefined,
    );
  }

  async generate(prompts: readonly PolicyPrompt[], sampling: PolicySampling): Promise<PolicyOutput[]> {
    const generations = await generate(
      this.model,
      prompts.map((p) => p.tokens),
      {
        maxNewTokens: sampling.maxNewTokens,
        temperature: sampling.temperature,
        ...(sampling.topP === undefined ? {} : { topP: sampling.topP }),
        ...(sampling.topK === undefined ? {} : { topK: sampling.topK }),
        ...(sampling.seed === undefined
          ? {}
          : this.seedPerPrompt
            ? { rowSeeds: prompts.map((_, i) => promptSeed(sampling.seed!, i)) }
            : { seed: sampling.seed }),
        stopTokenIds: this.stopTokenIds,
        ...(this.prefixCache ? { prefixCache: this.prefixCache } : {}),
        ...(this.prefillTokens === undefined ? {} : { prefillTokens: this.prefillTokens }),
      },
    );
    return generations.map(({ tokens, logProbs }) => ({ tokens, logProbs }));
  }

  rolloutBoundary(): void {
    this.prefixCache?.clear();
  }
}
