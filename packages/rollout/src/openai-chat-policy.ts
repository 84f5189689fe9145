import type { Tokenizer } from "@ragen/tokenizer";
import { HttpRequestFailure, type HttpResponse, MAX_ERROR_BODY_CHARS, requestText, sleep } from "./http.js";
import {
  type Policy,
  type PolicyOutput,
  type PolicyPrompt,
  type PolicySampling,
  promptSeed,
} from "./policy.js";

export interface OpenAIChatPolicyOptions {
  /** The API root that /chat/completions hangs off, e.g. "http://127.0.0.1:8000/v1". */
  baseUrl: string;
  model: string;
  /** Turns the replies into token ids for the trajectory (use the served model's tokenizer). */
  tokenizer: Pick<Tokenizer, "encode" | "imEndId" | "eosTokenId">;
  apiKey?: string;
  /** Per request, including reading the body (default 60 s). */
  timeoutMs?: number;
  /** Further tries after a timeout, a network error, 429 or 5xx (default 2). Other errors fail at once. */
  maxRetries?: number;
  /** Wait before retry n is n times this (default 500 ms). */
  retryDelayMs?: number;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /**
   * The most bytes a response body may have (default 8 MiB); a longer one fails the request, read
   * no further, so an endless or runaway body cannot fill memory.
   */
  maxResponseBytes?: number;
  /** For tests or custom transports; defaults to the global fetch. */
  fetch?: typeof fetch;
}

/** Token counts summed over the replies whose body had a `usage` object (servers may leave it out). */
export interface OpenAIUsage {
  /** Requests that returned a reply. */
  requests: number;
  /** Of those, the ones that reported usage. */
  requestsWithUsage: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export class OpenAIPolicyError extends Error {
  override readonly name = "OpenAIPolicyError";
  constructor(
    message: string,
    /** HTTP status, when the server answered. */
    readonly status: number | undefined,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** Far above any chat completion's JSON, far below what would strain memory. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/**
 * A model behind an OpenAI-compatible chat completions endpoint (vLLM, llama.cpp server, OpenAI...).
 * It sees messages, not ids, and returns text; the text is tokenised here so a rollout can store it,
 * and its log-probs are NaN because they were not sampled here — use it to evaluate, not to train.
 */
export class OpenAIChatPolicy implements Policy {
  private readonly url: string;
  private readonly totals: OpenAIUsage = {
    requests: 0,
    requestsWithUsage: 0,
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
  };

  constructor(private readonly options: OpenAIChatPolicyOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  }

  /** What the server reported it used, summed since this policy was made (a copy). */
  get usage(): OpenAIUsage {
    return { ...this.totals };
  }

  async generate(prompts: readonly PolicyPrompt[], sampling: PolicySampling): Promise<PolicyOutput[]> {
    const results = new Array<PolicyOutput>(prompts.length);
    // The first failure fails the batch: the other workers take no new prompt and their requests
    // (and retry waits) are aborted, so nothing is still sent after generate() has rejected.
    const batch = new AbortController();
    let next = 0;
    const worker = async () => {
      while (next < prompts.length && !batch.signal.aborted) {
        const index = next++;
        try {
          results[index] = await this.complete(prompts[index]!, sampling, index, batch.signal);
        } catch (error) {
          batch.abort();
          throw error;
        }
      }
    };
    const workers = Math.max(1, Math.min(this.options.concurrency ?? 8, prompts.length));
    await Promise.all(Array.from({ length: workers }, worker));
    return results;
  }

  private async complete(
    prompt: PolicyPrompt,
    sampling: PolicySampling,
    index: number,
    batch: AbortSignal,
  ): Promise<PolicyOutput> {
    const body = {
      model: this.options.model,
      messages: prompt.messages,
      max_tokens: sampling.maxNewTokens,
      temperature: sampling.temperature,
      ...(sampling.topP === undefined ? {} : { top_p: sampling.topP }),
      ...(sampling.seed === undefined ? {} : { seed: promptSeed(sampling.seed, index) }),
    };
    const maxRetries = this.options.maxRetries ?? 2;
    for (let attempt = 0; ; attempt++) {
      try {
        const reply = await this.post(body, batch);
        const output = this.toOutput(reply, prompt.responsePrefix);
        this.countUsage(reply);
        return output;
      } catch (error) {
        const retryable = error instanceof OpenAIPolicyError && error.retryable;
        if (!retryable || attempt >= maxRetries || batch.aborted) throw error;
        await sleep((attempt + 1) * (this.options.retryDelayMs ?? 500), batch);
        if (batch.aborted) throw cancelled(this.url);
      }
    }
  }

  private async post(body: object, batch: AbortSignal): Promise<unknown> {
    let response: HttpResponse;
    try {
      response = await requestText({
        method: "POST",
        url: this.url,
        body,
        ...(this.options.apiKey ? { apiKey: this.options.apiKey } : {}),
        timeoutMs: this.options.timeoutMs ?? 60_000,
        maxResponseBytes: this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
        signal: batch,
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      });
    } catch (error) {
      if (!(error instanceof HttpRequestFailure)) throw error;
      if (error.kind === "cancelled") throw cancelled(this.url);
      // A runaway body is the server's answer, not a passing fault: retrying would read it again.
      if (error.kind === "too-large") throw new OpenAIPolicyError(error.message, error.status, false);
      throw new OpenAIPolicyError(error.message, undefined, true);
    }
    const { status, text } = response;
    if (!response.ok) {
      const retryable = status === 429 || status >= 500;
      throw new OpenAIPolicyError(
        `POST ${this.url} failed with HTTP ${status}: ${text.slice(0, MAX_ERROR_BODY_CHARS)}`,
        status,
        retryable,
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new OpenAIPolicyError(
        `POST ${this.url} returned a body that is not JSON: ${text.slice(0, MAX_ERROR_BODY_CHARS)}`,
        status,
        false,
      );
    }
  }

  private countUsage(reply: unknown): void {
    this.totals.requests++;
    const usage = (reply as { usage?: Record<string, unknown> } | null)?.usage;
    if (typeof usage !== "object" || usage === null) return;
    const count = (key: string) => {
      const value = usage[key];
      return typeof value === "number" && Number.isFinite(value) ? value : 0;
    };
    const prompt = count("prompt_tokens");
    const completion = count("completion_tokens");
    this.totals.requestsWithUsage++;
    this.totals.promptTokens += prompt;
    this.totals.completionTokens += completion;
    this.totals.totalTokens += count("total_tokens") || prompt + completion;
  }

  private toOutput(reply: unknown, prefix: string): PolicyOutput {
    const choice = (reply as { choices?: { message?: { content?: unknown }; finish_reason?: unknown }[] })
      ?.choices?.[0];
    const content = choice?.message?.content;
    if (typeof content !== "string")
      throw new OpenAIPolicyError(`POST ${this.url} returned no choices[0].message.content`, 200, false);
    // Chat APIs cannot continue a prefilled assistant turn, so the model writes the prefix itself.
    const text = content.startsWith(prefix) ? content.slice(prefix.length) : content;
    const ids = this.options.tokenizer.encode(text);
    const stop = this.options.tokenizer.imEndId ?? this.options.tokenizer.eosTokenId;
    if (choice?.finish_reason === "stop" && stop !== undefined) ids.push(stop);
    return { tokens: Int32Array.from(ids), logProbs: new Float32Array(ids.length).fill(Number.NaN) };
  }
}

/** The error of a request given up because another request of the batch failed first. */
function cancelled(url: string): OpenAIPolicyError {
  return new OpenAIPolicyError(
    `POST ${url} cancelled: another request of the batch failed`,
    undefined,
    false,
  );
}
