/**
 * What the token-in, token-out remote policies share: one request per prompt, routed by a ReplicaPool,
 * with a deadline, retries with exponential backoff on timeouts, network errors, 429 and 5xx (elsewhere
 * when another replica is up), and the first failure failing the batch. A retry resends the whole
 * prompt — it carries the episode's history as ids — so an episode moves replicas without losing any.
 */
import type { Tokenizer } from "@ragen/tokenizer";
import { errorBodyMessage, HttpRequestFailure, requestText, sleep } from "../http.js";
import { DEFAULT_MAX_RESPONSE_BYTES } from "../openai-chat-policy.js";
import type { Policy, PolicyOutput, PolicyPrompt, PolicySampling } from "../policy.js";
import { RemotePolicyError, UnknownAdapterError } from "./errors.js";
import { ReplicaPool, type ReplicaPoolOptions } from "./replica-pool.js";

export interface RemotePolicyOptions {
  /** The servers: their root URLs (a pool is made with `pool` options), or a pool shared with others. */
  replicas: readonly string[] | ReplicaPool;
  /** Options of the pool made from `replicas` URLs. */
  pool?: Omit<ReplicaPoolOptions, "urls" | "fetch" | "apiKey">;
  /** The ids that end a response (kept in it): by default the tokenizer's <|im_end|> and eos. */
  stopTokenIds?: readonly number[];
  tokenizer?: Pick<Tokenizer, "imEndId" | "eosTokenId">;
  /** The LoRA adapter requests use (its served name); undefined: the base model. See `useAdapter`. */
  adapter?: string;
  /** min_p sent to the server (default 0: off, as this project's sampler has none). */
  minP?: number;
  apiKey?: string;
  /** Per request, the body's reading included (default 120 s). */
  timeoutMs?: number;
  /** Further tries after a retryable failure (default 4). Other errors fail at once. */
  maxRetries?: number;
  /** Wait before retry n (from 0) is this times 2^n, at most maxRetryDelayMs (default 250 ms, 8 s). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** The most bytes a response body may have (default 8 MiB). */
  maxResponseBytes?: number;
  fetch?: typeof fetch;
}

/** A request for one prompt: the path under the replica's root and the JSON body. */
export interface RemoteRequest {
  path: string;
  body: Record<string, unknown>;
}

export abstract class RemoteTokenPolicy implements Policy {
  readonly pool: ReplicaPool;
  readonly stopTokenIds: readonly number[];
  private adapterName: string | undefined;
  private readonly ownsPool: boolean;

  constructor(protected readonly options: RemotePolicyOptions) {
    if (options.replicas instanceof ReplicaPool) {
      this.pool = options.replicas;
      this.ownsPool = false;
    } else {
      this.pool = new ReplicaPool({
        ...options.pool,
        urls: options.replicas,
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      this.ownsPool = true;
    }
    const fromTokenizer = [options.tokenizer?.imEndId, options.tokenizer?.eosTokenId];
    this.stopTokenIds = [...new Set(options.stopTokenIds ?? fromTokenizer)].filter(
      (id): id is number => id !== undefined,
    );
    if (this.stopTokenIds.length === 0)
      throw new RangeError("a remote policy needs stopTokenIds or a tokenizer with <|im_end|> or eos");
    this.adapterName = options.adapter;
  }

  /** The adapter requests use now (undefined: the base model). */
  get adapter(): string | undefined {
    return this.adapterName;
  }

  /** Samples with `adapter` (a name the servers have loaded, e.g. AdapterPublisher.publish's) from now on. */
  useAdapter(adapter: string | undefined): void {
    this.adapterName = adapter;
  }

  /** The body of one prompt's request; `index` is its place in the batch (for per-prompt seeds). */
  protected abstract request(prompt: PolicyPrompt, sampling: PolicySampling, index: number): RemoteRequest;

  /** The sampled ids and log-probs in a successful reply; throws RemotePolicyError (not retryable) if malformed. */
  protected abstract parse(reply: unknown, url: string): PolicyOutput;

  async generate(prompts: readonly PolicyPrompt[], sampling: PolicySampling): Promise<PolicyOutput[]> {
    // The first failure fails the batch: the other requests (and their retry waits) are aborted. One
    // controller per request, so a large batch does not pile its listeners onto one signal.
    const requests = prompts.map(() => new AbortController());
    return Promise.all(
      prompts.map(async (prompt, index) => {
        try {
          return await this.send(prompt, sampling, index, requests[index]!.signal);
        } catch (error) {
          for (const request of requests) request.abort();
          throw error;
        }
      }),
    );
  }

  /** Forgets episodes' replicas: a rollout's end leaves no history worth a warm cache. */
  rolloutBoundary(): void {
    this.pool.forgetEpisodes();
  }

  /** Stops the pool's health probes if this policy made the pool. */
  close(): void {
    if (this.ownsPool) this.pool.close();
  }

  private async send(
    prompt: PolicyPrompt,
    sampling: PolicySampling,
    index: number,
    batch: AbortSignal,
  ): Promise<PolicyOutput> {
    const { path, body } = this.request(prompt, sampling, index);
    const maxRetries = this.options.maxRetries ?? 4;
    const failedOn = new Set<string>();
    for (let attempt = 0; ; attempt++) {
      let error: RemotePolicyError;
      try {
        const lease = await this.pool.acquire({
          ...(prompt.episodeId === undefined ? {} : { episodeId: prompt.episodeId }),
          avoid: failedOn,
          signal: batch,
        });
        try {
          return await this.post(lease.url, path, body, batch);
        } finally {
          lease.release();
        }
      } catch (caught) {
        if (!(caught instanceof RemotePolicyError)) throw caught;
        error = caught;
      }
      if (batch.aborted) throw cancelled();
      if (!error.retryable || attempt >= maxRetries) throw error;
      if (error.replica) failedOn.add(error.replica);
      const base = this.options.retryDelayMs ?? 250;
      await sleep(Math.min(base * 2 ** attempt, this.options.maxRetryDelayMs ?? 8000), batch);
      if (batch.aborted) throw cancelled();
    }
  }

  private async post(replica: string, path: string, body: object, batch: AbortSignal): Promise<PolicyOutput> {
    const url = `${replica}${path}`;
    let status: number;
    let text: string;
    try {
      ({ status, text } = await requestText({
        method: "POST",
        url,
        body,
        timeoutMs: this.options.timeoutMs ?? 120_000,
        maxResponseBytes: this.options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
        signal: batch,
        ...(this.options.apiKey ? { apiKey: this.options.apiKey } : {}),
        ...(this.options.fetch ? { fetch: this.options.fetch } : {}),
      }));
    } catch (error) {
      if (!(error instanceof HttpRequestFailure)) throw error;
      if (error.kind === "cancelled") throw cancelled();
      if (error.kind === "too-large")
        throw new RemotePolicyError(error.message, error.status, false, replica);
      // No answer, or none in time: the replica is down or stuck; probes bring it back.
      this.pool.markDown(replica, error.message);
      throw new RemotePolicyError(error.message, undefined, true, replica);
    }
    if (status < 200 || status >= 300) {
      const said = errorBodyMessage(text);
      const adapter = this.adapterName;
      if (
        adapter !== undefined &&
        (status === 404 || ((status === 400 || status === 422) && said.includes(adapter)))
      )
        throw new UnknownAdapterError(adapter, replica, status, said);
      const retryable = status === 429 || status >= 500;
      // 429 is load, not failure; a 5xx takes the replica out until it answers its health check.
      if (status >= 500) this.pool.markDown(replica, `HTTP ${status}: ${said}`);
      throw new RemotePolicyError(
        `POST ${url} failed with HTTP ${status}: ${said}`,
        status,
        retryable,
        replica,
      );
    }
    let reply: unknown;
    try {
      reply = JSON.parse(text);
    } catch {
      throw new RemotePolicyError(
        `POST ${url} returned a body that is not JSON: ${text.slice(0, 300)}`,
        status,
        false,
        replica,
      );
    }
    return this.parse(reply, url);
  }

  /** top_p, top_k and min_p as sent: the user's, else values that switch each cut off. */
  protected cuts(sampling: PolicySampling): { topP: number; topK: number; minP: number } {
    return {
      topP: sampling.topP ?? 1,
      // vLLM and SGLang both read -1 as "no top-k"; this project's sampler reads 0 so.
      topK: sampling.topK !== undefined && sampling.topK > 0 ? sampling.topK : -1,
      minP: this.options.minP ?? 0,
    };
  }

  /** A stop the reply reports but left out of its ids is put back (log-prob NaN), as the local policy keeps it. */
  protected withStop(ids: number[], logProbs: number[], stoppedOn: unknown): PolicyOutput {
    if (typeof stoppedOn === "number" && this.stopTokenIds.includes(stoppedOn) && ids.at(-1) !== stoppedOn) {
      ids.push(stoppedOn);
      logProbs.push(Number.NaN);
    }
    return { tokens: Int32Array.from(ids), logProbs: Float32Array.from(logProbs) };
  }
}

function cancelled(): RemotePolicyError {
  return new RemotePolicyError("cancelled: another request of the batch failed", undefined, false);
}

/** A malformed reply's error: what was missing, where. */
export function malformed(url: string, what: string): RemotePolicyError {
  return new RemotePolicyError(`POST ${url} returned ${what}`, 200, false, url);
}
