/**
 * This project's model behind the HTTP API vLLM serves, token in, token out, so the remote policies of
 * @ragen/rollout (and vLLM clients) drive it as they drive vLLM: `POST /v1/completions` with token-id
 * prompts, the sampled ids and log-probs from this project's sampler (`generate` of @ragen/models, the
 * same as LocalModelPolicy), `GET /v1/models`, `GET /health`, and the LoRA admin endpoints
 * `POST /v1/load_lora_adapter` / `/v1/unload_lora_adapter` for PEFT adapter folders this project writes.
 *
 * The model runs one batch at a time: concurrent requests with the same adapter and sampling settings
 * share a batch, and each prompt draws from its own random stream (a request's seed, + i for its i-th
 * prompt; an unseeded request takes the server's next seed), so a seed decides its tokens whatever else
 * shares the batch. The adapter a batch names is attached to the model before it runs (one at a time;
 * switching swaps them).
 * The admin endpoints change what the server runs and check no credentials: bind to loopback or a
 * private network only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { generate, type LoraOptions, type Qwen2Model } from "@ragen/models";
import { ADAPTER_WEIGHTS_FILE, readAdapterConfig, readLoraAdapterWeights } from "@ragen/models/node";
import { promptSeed } from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";

/** A padded vocabulary lets the model sample ids the tokenizer has no text for: they decode to none. */
const UNKNOWN_AS_NOTHING = { skipUnknownIds: true };

export interface PolicyServerOptions {
  model: Qwen2Model;
  tokenizer: Pick<Tokenizer, "decode" | "eosTokenId">;
  /** The name requests give for the base model (vLLM's served model name). */
  modelName: string;
  /** Default 127.0.0.1: the admin endpoints must not face an open network. */
  host?: string;
  /** Default 8000; 0 takes a free port (see `PolicyServer.port`). */
  port?: number;
  /** Prompt plus new tokens, at most (the model's max_position_embeddings); longer requests get a 400. */
  maxModelLength?: number;
  /** Prompts in one batch, at most (default 16). */
  maxBatch?: number;
  /** The largest request body read (default 16 MiB). */
  maxBodyBytes?: number;
  /** Seeds unseeded requests: each draws the next seed from here (default 0). */
  seed?: number;
}

export interface PolicyServer {
  /** e.g. "http://127.0.0.1:8000". */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** The loaded adapters' names. */
  adapters(): string[];
  close(): Promise<void>;
}

interface LoadedAdapter {
  path: string;
  options: LoraOptions;
  weights: Map<string, Float32Array>;
  created: number;
}

interface Sampling {
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  stops: number[];
  seed: number | undefined;
}

interface Job {
  adapter: string | undefined;
  sampling: Sampling;
  prompts: Int32Array[];
  resolve(result: { tokens: Int32Array; logProbs: Float32Array; finishReason: "stop" | "length" }[]): void;
  reject(error: unknown): void;
}

/** An error answered with its HTTP status and vLLM's error JSON. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = "BadRequestError",
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export async function startPolicyServer(options: PolicyServerOptions): Promise<PolicyServer> {
  const { model, tokenizer, modelName } = options;
  const host = options.host ?? "127.0.0.1";
  const maxBatch = options.maxBatch ?? 16;
  const maxBodyBytes = options.maxBodyBytes ?? 16 * 1024 * 1024;
  const created = Math.floor(Date.now() / 1000);
  const adapters = new Map<string, LoadedAdapter>();
  let attached: string | undefined;
  let nextSeed = options.seed ?? 0;

  // Everything that touches the model runs in this chain, one step at a time.
  let modelQueue: Promise<unknown> = Promise.resolve();
  const onModel = <T>(work: () => Promise<T> | T): Promise<T> => {
    const run = modelQueue.then(work);
    modelQueue = run.catch(() => {});
    return run;
  };

  const attach = (name: string | undefined) => {
    if (attached === name) return;
    if (model.adapters) model.detachLora();
    attached = undefined;
    if (name === undefined) return;
    const adapter = adapters.get(name);
    if (!adapter) throw new HttpError(404, `The model \`${name}\` does not exist.`, "NotFoundError", "model");
    const lora = model.attachLora(adapter.options);
    try {
      lora.load(adapter.weights, `${adapter.path}/${ADAPTER_WEIGHTS_FILE}`);
    } catch (error) {
      model.detachLora();
      throw error;
    }
    attached = name;
  };

  const pending: Job[] = [];
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    try {
      while (pending.length > 0) {
        const first = pending.shift()!;
        const batch = [first];
        // Jobs of the same adapter and settings share the batch; each row keeps its own stream.
        const key = batchKey(first);
        for (let i = 0; i < pending.length; ) {
          const rows = batch.reduce((n, job) => n + job.prompts.length, 0);
          const job = pending[i]!;
          if (batchKey(job) === key && rows + job.prompts.length <= maxBatch) {
            batch.push(job);
            pending.splice(i, 1);
          } else i++;
        }
        try {
          const generations = await onModel(async () => {
            attach(first.adapter);
            const { sampling } = first;
            return generate(
              model,
              batch.flatMap((job) => job.prompts),
              {
                maxNewTokens: sampling.maxTokens,
                temperature: sampling.temperature,
                topP: sampling.topP,
                topK: sampling.topK,
                stopTokenIds: sampling.stops,
                rowSeeds: batch.flatMap((job) => {
                  let seed = job.sampling.seed;
                  if (seed === undefined) {
                    // Unseeded requests' rows never share a stream with each other.
                    seed = nextSeed;
                    nextSeed += job.prompts.length;
                  }
                  return job.prompts.map((_, i) => promptSeed(seed, i));
                }),
              },
            );
          });
          let row = 0;
          for (const job of batch) {
            job.resolve(generations.slice(row, row + job.prompts.length));
            row += job.prompts.length;
          }
        } catch (error) {
          for (const job of batch) job.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  };

  const complete = (adapter: string | undefined, sampling: Sampling, prompts: Int32Array[]) =>
    new Promise<{ tokens: Int32Array; logProbs: Float32Array; finishReason: "stop" | "length" }[]>(
      (resolve, reject) => {
        pending.push({ adapter, sampling, prompts, resolve, reject });
        void drain();
      },
    );

  async function completions(body: Record<string, unknown>): Promise<unknown> {
    const requested = body.model ?? modelName;
    if (typeof requested !== "string")
      throw new HttpError(400, "model must be a string", "BadRequestError", "model");
    if (requested !== modelName && !adapters.has(requested))
      throw new HttpError(404, `The model \`${requested}\` does not exist.`, "NotFoundError", "model");
    const adapter = requested === modelName ? undefined : requested;
    const prompts = tokenPrompts(body.prompt, model.config.vocabSize);
    if (body.stream === true)
      throw new HttpError(400, "stream is not supported", "BadRequestError", "stream");
    if (body.echo === true) throw new HttpError(400, "echo is not supported", "BadRequestError", "echo");
    if ((body.n ?? 1) !== 1) throw new HttpError(400, "only n=1 is supported", "BadRequestError", "n");
    const maxTokens = integerField(body, "max_tokens", 16, 1);
    const temperature = numberField(body, "temperature", 1, (t) => t >= 0);
    const topP = numberField(body, "top_p", 1, (p) => p > 0 && p <= 1);
    const topK = integerField(body, "top_k", -1, -1);
    if ((body.min_p ?? 0) !== 0)
      throw new HttpError(
        400,
        "min_p is not supported (this sampler has no min-p cut): send 0",
        "BadRequestError",
        "min_p",
      );
    const logprobs = body.logprobs ?? null;
    if (logprobs !== null && logprobs !== 0)
      throw new HttpError(
        400,
        "only logprobs: 0 is supported (the sampled token's log-prob, no alternatives)",
        "BadRequestError",
        "logprobs",
      );
    const seed = body.seed === undefined || body.seed === null ? undefined : integerField(body, "seed", 0);
    const stopIds = body.stop_token_ids ?? [];
    if (!Array.isArray(stopIds) || !stopIds.every((id) => Number.isInteger(id)))
      throw new HttpError(
        400,
        "stop_token_ids must be a list of token ids",
        "BadRequestError",
        "stop_token_ids",
      );
    // As vLLM, the model's eos ends a response too unless ignore_eos.
    const stops = [
      ...new Set([
        ...(stopIds as number[]),
        ...(body.ignore_eos === true || tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId]),
      ]),
    ];
    const longest = Math.max(...prompts.map((p) => p.length));
    if (options.maxModelLength !== undefined && longest + maxTokens > options.maxModelLength)
      throw new HttpError(
        400,
        `This model's maximum context length is ${options.maxModelLength} tokens; the prompt has ${longest} and max_tokens is ${maxTokens}`,
      );
    const generations = await complete(
      adapter,
      { maxTokens, temperature, topP, topK: Math.max(topK, 0), stops, seed },
      prompts,
    );
    const asIds = body.return_tokens_as_token_ids === true;
    const withIds = body.return_token_ids === true;
    let completionTokens = 0;
    const choices = generations.map((generation, index) => {
      const ids = Array.from(generation.tokens);
      completionTokens += ids.length;
      const stoppedOn = generation.finishReason === "stop" ? ids.at(-1) : undefined;
      const textIds = stoppedOn === undefined ? ids : ids.slice(0, -1);
      const pieces = ids.map((id) => (asIds ? `token_id:${id}` : tokenizer.decode([id], UNKNOWN_AS_NOTHING)));
      const offsets: number[] = [];
      let offset = 0;
      for (const piece of pieces) {
        offsets.push(offset);
        offset += asIds ? 0 : piece.length;
      }
      return {
        index,
        text: tokenizer.decode(textIds, UNKNOWN_AS_NOTHING),
        logprobs:
          logprobs === null
            ? null
            : {
                text_offset: offsets,
                token_logprobs: Array.from(generation.logProbs),
                tokens: pieces,
                top_logprobs: pieces.map((piece, i) => ({ [piece]: generation.logProbs[i]! })),
              },
        finish_reason: generation.finishReason,
        // vLLM names the stop id here when it came from stop_token_ids, and leaves it null for eos.
        stop_reason: stoppedOn !== undefined && (stopIds as number[]).includes(stoppedOn) ? stoppedOn : null,
        ...(withIds ? { token_ids: ids, prompt_token_ids: Array.from(prompts[index]!) } : {}),
      };
    });
    const promptTokens = prompts.reduce((n, p) => n + p.length, 0);
    return {
      id: `cmpl-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`,
      object: "text_completion",
      created: Math.floor(Date.now() / 1000),
      model: requested,
      choices,
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    };
  }

  async function loadAdapter(body: Record<string, unknown>): Promise<string> {
    const name = body.lora_name;
    const path = body.lora_path;
    if (typeof name !== "string" || name.length === 0 || typeof path !== "string" || path.length === 0)
      throw new HttpError(400, "lora_name and lora_path are required");
    if (name === modelName) throw new HttpError(400, `"${name}" is the base model's name`);
    if (adapters.has(name)) throw new HttpError(400, `The lora adapter '${name}' has already been loaded.`);
    let adapter: LoadedAdapter;
    try {
      const config = readAdapterConfig(path);
      adapter = {
        path,
        options: { rank: config.rank, alpha: config.alpha, targets: config.targets },
        weights: readLoraAdapterWeights(path),
        created: Math.floor(Date.now() / 1000),
      };
    } catch (error) {
      throw new HttpError(400, `Loading lora ${name} failed: ${(error as Error).message}`);
    }
    adapters.set(name, adapter);
    // Attaching it once checks that its tensors fit this model; one that does not is not kept.
    await onModel(() => {
      try {
        attach(name);
      } catch (error) {
        adapters.delete(name);
        attach(undefined);
        throw new HttpError(400, `Loading lora ${name} failed: ${(error as Error).message}`);
      }
    });
    return `Success: LoRA adapter '${name}' added successfully.`;
  }

  async function unloadAdapter(body: Record<string, unknown>): Promise<string> {
    const name = body.lora_name;
    if (typeof name !== "string" || !adapters.has(name))
      throw new HttpError(
        404,
        `The lora adapter '${String(name)}' cannot be found.`,
        "NotFoundError",
        "lora_name",
      );
    adapters.delete(name);
    await onModel(() => {
      if (attached === name) attach(undefined);
    });
    return `Success: LoRA adapter '${name}' removed successfully.`;
  }

  const models = () => ({
    object: "list",
    data: [
      {
        id: modelName,
        object: "model",
        created,
        owned_by: "ragen",
        root: modelName,
        parent: null,
        ...(options.maxModelLength === undefined ? {} : { max_model_len: options.maxModelLength }),
      },
      ...[...adapters].map(([id, adapter]) => ({
        id,
        object: "model",
        created: adapter.created,
        owned_by: "ragen",
        root: adapter.path,
        parent: modelName,
      })),
    ],
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const path = (req.url ?? "/").split("?")[0];
      const route = `${req.method} ${path}`;
      if (route === "GET /health") return send(res, 200, "");
      if (route === "GET /v1/models") return send(res, 200, models());
      const post: Record<string, (body: Record<string, unknown>) => Promise<unknown>> = {
        "/v1/completions": completions,
        "/v1/load_lora_adapter": loadAdapter,
        "/v1/unload_lora_adapter": unloadAdapter,
      };
      const handler = post[path ?? ""];
      if (!handler) throw new HttpError(404, `${route} is not served here`, "NotFoundError");
      if (req.method !== "POST") throw new HttpError(405, `${route}: use POST`, "MethodNotAllowed");
      return send(res, 200, await handler(await readJson(req, maxBodyBytes)));
    } catch (error) {
      const known = error instanceof HttpError;
      const status = known ? error.status : 500;
      send(res, status, {
        error: {
          message: (error as Error).message,
          type: known ? error.type : "InternalServerError",
          param: known ? error.param : null,
          code: status,
        },
      });
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8000, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    host,
    port,
    adapters: () => [...adapters.keys()],
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function batchKey(job: Job): string {
  const { maxTokens, temperature, topP, topK, stops } = job.sampling;
  return JSON.stringify([job.adapter ?? null, maxTokens, temperature, topP, topK, stops]);
}

/** `prompt` as token-id rows: one list of ids, or a list of them; text is refused (ids in, ids out). */
function tokenPrompts(prompt: unknown, vocabSize: number): Int32Array[] {
  const rows = Array.isArray(prompt) && prompt.length > 0 && Array.isArray(prompt[0]) ? prompt : [prompt];
  return rows.map((row) => {
    if (!Array.isArray(row) || row.length === 0)
      throw new HttpError(
        400,
        "prompt must be token ids (a non-empty list of integers, or a list of such lists): this server takes no text",
        "BadRequestError",
        "prompt",
      );
    const bad = row.find((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize);
    if (bad !== undefined)
      throw new HttpError(
        400,
        `prompt has ${JSON.stringify(bad)}, not a token id below ${vocabSize}`,
        "BadRequestError",
        "prompt",
      );
    return Int32Array.from(row as number[]);
  });
}

function numberField(
  body: Record<string, unknown>,
  field: string,
  fallback: number,
  ok: (value: number) => boolean,
): number {
  const value = body[field] ?? fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || !ok(value))
    throw new HttpError(
      400,
      `${field} has the invalid value ${JSON.stringify(value)}`,
      "BadRequestError",
      field,
    );
  return value;
}

function integerField(body: Record<string, unknown>, field: string, fallback: number, min?: number): number {
  const value = numberField(
    body,
    field,
    fallback,
    (v) => Number.isInteger(v) && (min === undefined || v >= min),
  );
  return value;
}

async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).byteLength;
    if (total > limit) throw new HttpError(413, `the request body is over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "the request body is not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new HttpError(400, "the request body must be a JSON object");
  return body as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, {
    "content-type": typeof body === "string" ? "text/plain; charset=utf-8" : "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}
