/**
 * A policy served by vLLM's OpenAI-compatible `POST /v1/completions`, token in, token out: the prompt
 * goes as its exact ids and the sampled ids come back as ids, never re-tokenised text.
 *
 * The vLLM fields this relies on:
 * - request `prompt: number[]` (token-id prompts; in vLLM's completions API since its first releases),
 *   `max_tokens`, `temperature`, `top_p`, `top_k` (-1: off), `min_p`, `seed`, `stop_token_ids`, and
 *   `logprobs: 0` (the sampled token's log-prob only, no alternatives);
 * - request `return_token_ids: true` -> response `choices[0].token_ids`, the sampled ids (vLLM PR
 *   #22587, released in v0.10.2);
 * - request `return_tokens_as_token_ids: true` -> `choices[0].logprobs.tokens` as "token_id:<id>"
 *   strings (first the `--return-tokens-as-token-ids` server flag, PR #6626 of July 2024, v0.5.x; the
 *   per-request field is in the request schema of 2025 releases such as v0.10): the ids' fallback on
 *   servers without `return_token_ids`, and a cross-check where both come;
 * - response `choices[0].logprobs.token_logprobs`, `finish_reason` and `stop_reason` (the stop id).
 *
 * Log-probs: vLLM reports by default (`--logprobs-mode raw_logprobs`, v0.10+) the log-softmax of the
 * raw logits, before temperature. This project's samplers keep log softmax(logits / T); run vLLM with
 * `--logprobs-mode processed_logprobs` so they agree at any temperature (at T = 1 with no top-p/top-k
 * the two modes are equal). The processed mode applies top-p/top-k too, so top_p=1, top_k=-1, min_p=0
 * are sent unless the sampling asks for a cut: only then are the log-probs the full softmax's.
 */
import { type PolicyOutput, type PolicyPrompt, type PolicySampling, promptSeed } from "../policy.js";
import {
  malformed,
  type RemotePolicyOptions,
  type RemoteRequest,
  RemoteTokenPolicy,
} from "./remote-policy.js";

export interface VllmCompletionsPolicyOptions extends RemotePolicyOptions {
  /** The base model's served name (`vllm serve <model>` or its --served-model-name). */
  model: string;
}

const TOKEN_ID_PREFIX = "token_id:";

export class VllmCompletionsPolicy extends RemoteTokenPolicy {
  constructor(private readonly vllm: VllmCompletionsPolicyOptions) {
    super(vllm);
  }

  protected request(prompt: PolicyPrompt, sampling: PolicySampling, index: number): RemoteRequest {
    const { topP, topK, minP } = this.cuts(sampling);
    return {
      path: "/v1/completions",
      body: {
        // vLLM picks a LoRA adapter by its name in `model`.
        model: this.adapter ?? this.vllm.model,
        prompt: Array.from(prompt.tokens),
        max_tokens: sampling.maxNewTokens,
        temperature: sampling.temperature,
        top_p: topP,
        top_k: topK,
        min_p: minP,
        ...(sampling.seed === undefined ? {} : { seed: promptSeed(sampling.seed, index) }),
        stop_token_ids: [...this.stopTokenIds],
        logprobs: 0,
        return_token_ids: true,
        return_tokens_as_token_ids: true,
      },
    };
  }

  protected parse(reply: unknown, url: string): PolicyOutput {
    const choice = (reply as { choices?: unknown[] } | null)?.choices?.[0] as
      | {
          token_ids?: unknown;
          logprobs?: { tokens?: unknown; token_logprobs?: unknown } | null;
          finish_reason?: unknown;
          stop_reason?: unknown;
        }
      | undefined;
    if (!choice) throw malformed(url, "no choices[0]");
    const named = tokenIdStrings(choice.logprobs?.tokens);
    const listed = Array.isArray(choice.token_ids) ? choice.token_ids : undefined;
    const ids = listed ?? named;
    if (!ids?.every((id) => Number.isInteger(id) && id >= 0))
      throw malformed(
        url,
        "no sampled token ids (choices[0].token_ids or logprobs.tokens as token_id:<id>): vLLM >= 0.10.2 sends them",
      );
    if (listed && named && (named.length !== listed.length || named.some((id, i) => id !== listed[i])))
      throw malformed(url, "choices[0].token_ids that disagree with its logprobs.tokens");
    const logProbs = Array.isArray(choice.logprobs?.token_logprobs)
      ? (choice.logprobs.token_logprobs as unknown[]).map((value) =>
          typeof value === "number" ? value : Number.NaN,
        )
      : ids.map(() => Number.NaN);
    if (logProbs.length !== ids.length)
      throw malformed(url, `${logProbs.length} log-probs for ${ids.length} tokens`);
    return this.withStop(
      [...ids] as number[],
      logProbs,
      choice.finish_reason === "stop" ? choice.stop_reason : undefined,
    );
  }
}

/** "token_id:42" strings as ids; undefined if any is not of that form. */
function tokenIdStrings(tokens: unknown): number[] | undefined {
  if (!Array.isArray(tokens)) return undefined;
  const ids: number[] = [];
  for (const token of tokens) {
    if (typeof token !== "string" || !token.startsWith(TOKEN_ID_PREFIX)) return undefined;
    const id = Number(token.slice(TOKEN_ID_PREFIX.length));
    if (!Number.isInteger(id)) return undefined;
    ids.push(id);
  }
  return ids;
}
