/**
 * The remote policies against fake vLLM and SGLang servers on 127.0.0.1 that answer in the documented
 * shapes: the exact bodies sent, the ids and log-probs read back, typed errors, timeouts, retries,
 * replicas that fail and come back, sticky and least-outstanding routing, and adapter publishing.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  AdapterPublishError,
  AdapterPublisher,
  type PolicyPrompt,
  RemotePolicyError,
  ReplicaPool,
  SglangGeneratePolicy,
  UnknownAdapterError,
  VllmCompletionsPolicy,
} from "../src/index.js";

interface Recorded {
  method: string;
  path: string;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are checked field by field
  body: any;
}

type Handler = (request: Recorded, response: ServerResponse) => void | Promise<void>;

interface FakeServer {
  url: string;
  port: number;
  requests: Recorded[];
  /** Requests being answered now, and the most at once. */
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
  /** Listens again on the same port (after close). */
  reopen(): Promise<void>;
}

const servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function fakeServer(handle: Handler): Promise<FakeServer> {
  const fake = { requests: [] as Recorded[], inFlight: 0, maxInFlight: 0 } as FakeServer;
  const onRequest = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const recorded = {
      method: req.method ?? "",
      path: req.url ?? "",
      body: text ? JSON.parse(text) : undefined,
    };
    fake.requests.push(recorded);
    fake.inFlight++;
    fake.maxInFlight = Math.max(fake.maxInFlight, fake.inFlight);
    try {
      await handle(recorded, res);
    } finally {
      fake.inFlight--;
    }
  };
  let server = createServer(onRequest);
  let open = false;
  const listen = (port: number) =>
    new Promise<void>((resolve) => {
      server = createServer(onRequest);
      server.listen(port, "127.0.0.1", () => {
        open = true;
        resolve();
      });
    });
  await listen(0);
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      if (!open) return resolve();
      open = false;
      server.closeAllConnections();
      server.close(() => resolve());
    });
  fake.reopen = () => listen(fake.port);
  servers.push(fake);
  return fake;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const STOP = 99;
const EOS = 98;
const tokenizer = { imEndId: STOP, eosTokenId: EOS };

/** The fake model: after a prompt ending in id n it samples n+1, n+2, then the stop id. */
function sampled(prompt: number[], maxTokens: number) {
  const last = prompt.at(-1)!;
  const ids = [last + 1, last + 2, STOP].slice(0, maxTokens);
  const logProbs = [-0.25, -0.5, -0.125].slice(0, maxTokens);
  return { ids, logProbs, stopped: ids.at(-1) === STOP };
}

/** A vLLM /v1/completions choice as vLLM >= 0.10.2 sends it with return_token_ids and token-id strings. */
function vllmReply(
  body: { prompt: number[]; max_tokens: number; model: string },
  options: { tokenIds?: boolean } = {},
) {
  const { ids, logProbs, stopped } = sampled(body.prompt, body.max_tokens);
  return {
    id: "cmpl-1",
    object: "text_completion",
    created: 1,
    model: body.model,
    choices: [
      {
        index: 0,
        text: "ignored",
        logprobs: {
          text_offset: ids.map((_, i) => i),
          token_logprobs: logProbs,
          tokens: ids.map((id) => `token_id:${id}`),
          top_logprobs: ids.map((id, i) => ({ [`token_id:${id}`]: logProbs[i] })),
        },
        finish_reason: stopped ? "stop" : "length",
        stop_reason: stopped ? STOP : null,
        ...(options.tokenIds === false ? {} : { token_ids: ids }),
        prompt_logprobs: null,
        prompt_token_ids: null,
      },
    ],
    usage: { prompt_tokens: body.prompt.length, completion_tokens: ids.length, total_tokens: 0 },
  };
}

/** A fake vLLM server with the base model "base" and the adapters in `adapters`. */
function vllmHandler(adapters = new Set<string>(), delays: { ms?: number } = {}): Handler {
  return async (request, res) => {
    if (request.method === "GET" && request.path === "/health") return void res.writeHead(200).end();
    if (request.path === "/v1/completions") {
      if (delays.ms) await wait(delays.ms);
      if (request.body.model !== "base" && !adapters.has(request.body.model))
        return json(res, 404, {
          error: {
            message: `The model \`${request.body.model}\` does not exist.`,
            type: "NotFoundError",
            param: "model",
            code: 404,
          },
        });
      return json(res, 200, vllmReply(request.body));
    }
    json(res, 404, { detail: "Not Found" });
  };
}

const prompt = (ids: number[], episodeId?: string): PolicyPrompt => ({
  tokens: Int32Array.from(ids),
  messages: [],
  responsePrefix: "<think>",
  ...(episodeId === undefined ? {} : { episodeId }),
});

const policies: { close(): void }[] = [];
afterEach(() => {
  for (const policy of policies.splice(0)) policy.close();
});
function vllm(
  replicas: string[] | ReplicaPool,
  options: Partial<ConstructorParameters<typeof VllmCompletionsPolicy>[0]> = {},
) {
  const policy = new VllmCompletionsPolicy({
    replicas,
    model: "base",
    tokenizer,
    retryDelayMs: 10,
    ...options,
  });
  policies.push(policy);
  return policy;
}

describe("VllmCompletionsPolicy", () => {
  it("sends the prompt as ids with explicit sampling fields and reads the sampled ids and log-probs", async () => {
    const server = await fakeServer(vllmHandler());
    const policy = vllm([server.url]);
    const outputs = await policy.generate([prompt([1, 2, 3]), prompt([7, 40])], {
      maxNewTokens: 3,
      temperature: 0.7,
      seed: 5,
    });
    const bodies = server.requests.map((r) => r.body).sort((a, b) => a.seed - b.seed);
    expect(server.requests.every((r) => r.method === "POST" && r.path === "/v1/completions")).toBe(true);
    expect(bodies).toEqual([
      {
        model: "base",
        prompt: [1, 2, 3],
        max_tokens: 3,
        temperature: 0.7,
        top_p: 1,
        top_k: -1,
        min_p: 0,
        seed: 5,
        stop_token_ids: [STOP, EOS],
        logprobs: 0,
        return_token_ids: true,
        return_tokens_as_token_ids: true,
      },
      expect.objectContaining({ prompt: [7, 40], seed: 6 }),
    ]);
    // The stop id is kept, as LocalModelPolicy keeps it.
    expect(outputs.map((o) => Array.from(o.tokens))).toEqual([
      [4, 5, STOP],
      [41, 42, STOP],
    ]);
    expect(Array.from(outputs[0]!.logProbs)).toEqual([-0.25, -0.5, -0.125]);
  });

  it("passes the caller's top-p and top-k through, and a length cut returns no stop id", async () => {
    const server = await fakeServer(vllmHandler());
    const [output] = await vllm([server.url], { minP: 0.05 }).generate([prompt([10])], {
      maxNewTokens: 2,
      temperature: 1,
      topP: 0.9,
      topK: 20,
    });
    expect(server.requests[0]!.body).toMatchObject({ top_p: 0.9, top_k: 20, min_p: 0.05, max_tokens: 2 });
    expect(server.requests[0]!.body).not.toHaveProperty("seed");
    expect(Array.from(output!.tokens)).toEqual([11, 12]);
  });

  it("reads the ids from token_id:<id> strings when the server sends no token_ids, and refuses ids that disagree", async () => {
    let mode: "strings" | "disagree" | "text" = "strings";
    const server = await fakeServer((request, res) => {
      const reply = vllmReply(request.body, { tokenIds: mode !== "strings" });
      const choice = reply.choices[0]! as Record<string, unknown> & { logprobs: { tokens: string[] } };
      if (mode === "disagree") choice.token_ids = [1, 2, 3];
      if (mode === "text") choice.logprobs.tokens = ["a", "b", "c"];
      if (mode === "text") delete choice.token_ids;
      json(res, 200, reply);
    });
    const policy = vllm([server.url]);
    const [output] = await policy.generate([prompt([20])], { maxNewTokens: 3, temperature: 1 });
    expect(Array.from(output!.tokens)).toEqual([21, 22, STOP]);
    mode = "disagree";
    await expect(policy.generate([prompt([20])], { maxNewTokens: 3, temperature: 1 })).rejects.toThrow(
      /disagree/,
    );
    mode = "text";
    await expect(policy.generate([prompt([20])], { maxNewTokens: 3, temperature: 1 })).rejects.toThrow(
      /no sampled token ids/,
    );
  });

  it("chooses the adapter by model name, and an unknown adapter is a typed error naming it, not retried", async () => {
    const server = await fakeServer(vllmHandler(new Set(["agent@2"])));
    const policy = vllm([server.url], { adapter: "agent@2" });
    await policy.generate([prompt([1])], { maxNewTokens: 1, temperature: 1 });
    expect(server.requests[0]!.body.model).toBe("agent@2");
    policy.useAdapter("agent@3");
    const error = await policy.generate([prompt([1])], { maxNewTokens: 1, temperature: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(UnknownAdapterError);
    expect(error.adapter).toBe("agent@3");
    expect(error.status).toBe(404);
    expect(error.message).toContain('"agent@3"');
    expect(error.message).toContain(server.url);
    expect(server.requests).toHaveLength(2);
  });

  it("gives up on a slow replica at the deadline and retries the prompt on another", async () => {
    // Deadlines with room for a busy machine: the fast replica answers well within 1 s, the slow one not in 10.
    const slow = await fakeServer(vllmHandler(new Set(), { ms: 10_000 }));
    const fast = await fakeServer(vllmHandler());
    const policy = vllm([slow.url, fast.url], { timeoutMs: 1000 });
    const started = Date.now();
    const [output] = await policy.generate([prompt([5, 6])], { maxNewTokens: 3, temperature: 1 });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(Array.from(output!.tokens)).toEqual([7, 8, STOP]);
    expect(slow.requests.filter((r) => r.path === "/v1/completions")).toHaveLength(1);
    expect(fast.requests.filter((r) => r.path === "/v1/completions").map((r) => r.body.prompt)).toEqual([
      [5, 6],
    ]);
  });

  it("retries a 503 with backoff and succeeds", async () => {
    let failures = 1;
    const server = await fakeServer((request, res) => {
      if (request.path === "/health") return void res.writeHead(200).end();
      if (failures-- > 0) return json(res, 503, { error: { message: "engine is restarting" } });
      json(res, 200, vllmReply(request.body));
    });
    const [output] = await vllm([server.url]).generate([prompt([1])], { maxNewTokens: 3, temperature: 1 });
    expect(Array.from(output!.tokens)).toEqual([2, 3, STOP]);
    expect(server.requests.filter((r) => r.path === "/v1/completions")).toHaveLength(2);
  });

  it("fails at once on a 400, and after maxRetries on a replica that keeps failing", async () => {
    let status = 400;
    const server = await fakeServer((request, res) => {
      if (request.path === "/health") return void res.writeHead(200).end();
      json(res, status, { object: "error", message: `bad request ${status}`, code: status });
    });
    const policy = vllm([server.url], { maxRetries: 2 });
    const bad = await policy.generate([prompt([1])], { maxNewTokens: 1, temperature: 1 }).catch((e) => e);
    expect(bad).toBeInstanceOf(RemotePolicyError);
    expect(bad.message).toMatch(/HTTP 400: bad request 400/);
    expect(server.requests).toHaveLength(1);
    status = 500;
    const failing = await policy.generate([prompt([1])], { maxNewTokens: 1, temperature: 1 }).catch((e) => e);
    expect(failing.message).toMatch(/HTTP 500/);
    expect(server.requests.filter((r) => r.path === "/v1/completions")).toHaveLength(1 + 3);
  });

  it("drops a replica that goes away mid-run, moves its episodes with their whole prompts, and re-admits it when it is back", async () => {
    const a = await fakeServer(vllmHandler());
    const b = await fakeServer(vllmHandler());
    const pool = new ReplicaPool({ urls: [a.url, b.url], probeIntervalMs: 50, healthTimeoutMs: 500 });
    const policy = vllm(pool);
    policies.push(pool);
    const sampling = { maxNewTokens: 2, temperature: 1 };
    await policy.generate([prompt([10], "e0"), prompt([20], "e1")], sampling);
    const onA = pool.episodeReplica("e0") === a.url ? "e0" : "e1";
    expect(new Set([pool.episodeReplica("e0"), pool.episodeReplica("e1")])).toEqual(new Set([a.url, b.url]));

    await a.close();
    const histories = { e0: [10, 11, 12, 30], e1: [20, 21, 22, 31] };
    const outputs = await policy.generate([prompt(histories.e0, "e0"), prompt(histories.e1, "e1")], sampling);
    expect(outputs.map((o) => Array.from(o.tokens))).toEqual([
      [31, 32],
      [32, 33],
    ]);
    // The moved episode's whole history went to the other replica.
    expect(b.requests.map((r) => r.body?.prompt)).toContainEqual(histories[onA]);
    expect(pool.status().find((r) => r.url === a.url)!.healthy).toBe(false);
    expect(pool.episodeReplica(onA)).toBe(b.url);

    await a.reopen();
    for (let i = 0; i < 100 && !pool.status().find((r) => r.url === a.url)!.healthy; i++) await wait(20);
    expect(pool.status().find((r) => r.url === a.url)!.healthy).toBe(true);
    const before = a.requests.filter((r) => r.path === "/v1/completions").length;
    await policy.generate([prompt([1], "n0"), prompt([2], "n1"), prompt([3], "n2")], sampling);
    expect(a.requests.filter((r) => r.path === "/v1/completions").length).toBeGreaterThan(before);
  });

  it("sends an episode's turns to its replica although the other has fewer requests in flight", async () => {
    const a = await fakeServer(vllmHandler());
    const b = await fakeServer(vllmHandler());
    const pool = new ReplicaPool({ urls: [a.url, b.url] });
    const policy = vllm(pool);
    policies.push(pool);
    const sampling = { maxNewTokens: 1, temperature: 1 };
    await policy.generate(
      [0, 1, 2, 3].map((e) => prompt([100 * (e + 1)], `ep${e}`)),
      sampling,
    );
    const home = [0, 1, 2, 3].map((e) => pool.episodeReplica(`ep${e}`));
    expect(home.filter((url) => url === a.url)).toHaveLength(2);
    // Only A's episodes take turn 2: least-outstanding alone would send one of them to B.
    const onA = [0, 1, 2, 3].filter((e) => home[e] === a.url);
    const aBefore = a.requests.length;
    await policy.generate(
      onA.map((e) => prompt([100 * (e + 1), 5, 6], `ep${e}`)),
      sampling,
    );
    expect(a.requests.length - aBefore).toBe(2);
    const served = (server: FakeServer, e: number) =>
      server.requests.filter((r) => r.body?.prompt?.[0] === 100 * (e + 1)).length;
    for (let e = 0; e < 4; e++) {
      const [own, other] = home[e] === a.url ? [a, b] : [b, a];
      expect(served(own, e)).toBe(home[e] === a.url ? 2 : 1);
      expect(served(other, e)).toBe(0);
    }
  });

  it("routes to the replica with the fewest requests in flight and keeps each under its limit", async () => {
    const gates: (() => void)[] = [];
    const gated: Handler = async (request, res) => {
      if (request.path === "/health") return void res.writeHead(200).end();
      await new Promise<void>((resolve) => gates.push(resolve));
      json(res, 200, vllmReply(request.body));
    };
    const a = await fakeServer(gated);
    const b = await fakeServer(gated);
    const pool = new ReplicaPool({ urls: [a.url, b.url], maxConcurrentPerReplica: 2 });
    const policy = vllm(pool);
    policies.push(pool);
    const sampling = { maxNewTokens: 1, temperature: 1 };
    const first = policy.generate([prompt([1])], sampling);
    for (let i = 0; i < 50 && a.requests.length + b.requests.length < 1; i++) await wait(10);
    // One in flight on A: the next goes to B.
    const second = policy.generate([prompt([2])], sampling);
    for (let i = 0; i < 50 && a.requests.length + b.requests.length < 2; i++) await wait(10);
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
    // Six more: each replica takes one more (its limit is 2), the rest wait for a slot.
    const rest = policy.generate(
      [3, 4, 5, 6, 7, 8].map((id) => prompt([id])),
      sampling,
    );
    for (let i = 0; i < 50 && a.requests.length + b.requests.length < 4; i++) await wait(10);
    await wait(50);
    expect([a.requests.length, b.requests.length]).toEqual([2, 2]);
    while (a.requests.length + b.requests.length < 8 || gates.length > 0) {
      gates.splice(0).forEach((open) => void open());
      await wait(10);
    }
    await Promise.all([first, second, rest]);
    expect(a.maxInFlight).toBeLessThanOrEqual(2);
    expect(b.maxInFlight).toBeLessThanOrEqual(2);
    expect(a.requests.length + b.requests.length).toBe(8);
  });

  it("fails with every replica named when none is healthy", async () => {
    const a = await fakeServer(vllmHandler());
    await a.close();
    const error = await vllm([a.url], { maxRetries: 1 })
      .generate([prompt([1])], { maxNewTokens: 1, temperature: 1 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(RemotePolicyError);
    expect(error.message).toContain(a.url);
  });
});

describe("SglangGeneratePolicy", () => {
  /** SGLang's /generate for one prompt: meta_info.output_token_logprobs as [logprob, id, null]. */
  const sglangHandler =
    (adapters: Set<string>, withOutputIds = true): Handler =>
    (request, res) => {
      if (request.path === "/health") return void res.writeHead(200).end();
      const { input_ids, sampling_params, lora_path } = request.body;
      if (lora_path !== undefined && !adapters.has(lora_path))
        return json(res, 400, { error: { message: `LoRA adapter ${lora_path} is not loaded` } });
      const { ids, logProbs, stopped } = sampled(input_ids, sampling_params.max_new_tokens);
      json(res, 200, {
        text: "ignored",
        ...(withOutputIds ? { output_ids: ids } : {}),
        meta_info: {
          id: "r1",
          finish_reason: stopped ? { type: "stop", matched: STOP } : { type: "length", length: ids.length },
          prompt_tokens: input_ids.length,
          completion_tokens: ids.length,
          output_token_logprobs: ids.map((id, i) => [logProbs[i], id, null]),
        },
      });
    };

  it("sends input_ids, sampling_params, return_logprob and lora_path, and reads output_token_logprobs", async () => {
    const server = await fakeServer(sglangHandler(new Set(["agent@1"])));
    const policy = new SglangGeneratePolicy({ replicas: [server.url], tokenizer, adapter: "agent@1" });
    policies.push(policy);
    const [output] = await policy.generate([prompt([3, 4])], { maxNewTokens: 3, temperature: 0.5, seed: 1 });
    expect(server.requests[0]).toEqual({
      method: "POST",
      path: "/generate",
      body: {
        input_ids: [3, 4],
        sampling_params: {
          max_new_tokens: 3,
          temperature: 0.5,
          top_p: 1,
          top_k: -1,
          min_p: 0,
          stop_token_ids: [STOP, EOS],
        },
        return_logprob: true,
        logprob_start_len: -1,
        lora_path: "agent@1",
      },
    });
    expect(Array.from(output!.tokens)).toEqual([5, 6, STOP]);
    expect(Array.from(output!.logProbs)).toEqual([-0.25, -0.5, -0.125]);
  });

  it("names an adapter the server has not loaded, and puts back a matched stop the ids left out", async () => {
    const server = await fakeServer((request, res) => {
      if (request.body.lora_path === "gone@1")
        return json(res, 400, { error: { message: "LoRA adapter gone@1 is not loaded" } });
      json(res, 200, {
        meta_info: {
          finish_reason: { type: "stop", matched: EOS },
          output_token_logprobs: [[-1, 7, null]],
        },
      });
    });
    const policy = new SglangGeneratePolicy({ replicas: [server.url], tokenizer });
    policies.push(policy);
    const [output] = await policy.generate([prompt([1])], { maxNewTokens: 4, temperature: 1 });
    expect(Array.from(output!.tokens)).toEqual([7, EOS]);
    expect(output!.logProbs[1]).toBeNaN();
    policy.useAdapter("gone@1");
    const error = await policy.generate([prompt([1])], { maxNewTokens: 4, temperature: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(UnknownAdapterError);
    expect(error.adapter).toBe("gone@1");
  });
});

describe("AdapterPublisher", () => {
  /** The admin side of a vLLM or SGLang server: load, unload, and /v1/models listing what is loaded. */
  function adminHandler(kind: "vllm" | "sglang", loaded: Set<string>, refuse?: string): Handler {
    const prefix = kind === "vllm" ? "/v1" : "";
    return (request, res) => {
      if (request.path === `${prefix}/load_lora_adapter`) {
        const { lora_name } = request.body;
        if (refuse) return json(res, 400, { error: { message: refuse } });
        if (loaded.has(lora_name))
          return json(res, 400, {
            error: { message: `The lora adapter '${lora_name}' has already been loaded.` },
          });
        loaded.add(lora_name);
        return void res.writeHead(200).end(`Success: LoRA adapter '${lora_name}' added successfully.`);
      }
      if (request.path === `${prefix}/unload_lora_adapter`) {
        if (!loaded.delete(request.body.lora_name))
          return json(res, 404, { error: { message: "The lora adapter was not found." } });
        return void res.writeHead(200).end("Success");
      }
      if (request.path === "/v1/models")
        return json(res, 200, {
          object: "list",
          data: ["base", ...loaded].map((id) => ({ id, object: "model" })),
        });
      json(res, 404, { detail: "Not Found" });
    };
  }

  it("loads each version on every replica from the templated path, checks the listing, and unloads versions past the window", async () => {
    const loadedA = new Set<string>();
    const loadedB = new Set<string>();
    const a = await fakeServer(adminHandler("vllm", loadedA));
    const b = await fakeServer(adminHandler("vllm", loadedB));
    const copies: string[] = [];
    const publisher = new AdapterPublisher({
      replicas: [a.url, b.url],
      server: "vllm",
      remotePath: "/mnt/shared/{index}/{adapter}",
      copy: async ({ localPath, remotePath }) => void copies.push(`${localPath} -> ${remotePath}`),
      keepStale: 1,
    });
    expect(await publisher.publish("agent", 1, "/runs/x/step-1")).toBe("agent@1");
    expect(a.requests.map((r) => [r.method, r.path, r.body])).toEqual([
      ["POST", "/v1/load_lora_adapter", { lora_name: "agent@1", lora_path: "/mnt/shared/0/agent@1" }],
      ["GET", "/v1/models", undefined],
    ]);
    expect(b.requests[0]!.body.lora_path).toBe("/mnt/shared/1/agent@1");
    expect(copies.sort()).toEqual([
      "/runs/x/step-1 -> /mnt/shared/0/agent@1",
      "/runs/x/step-1 -> /mnt/shared/1/agent@1",
    ]);
    await publisher.publish("agent", 2, "/runs/x/step-2");
    // A retried publish of a loaded version is accepted (the server says it is already there).
    await publisher.publish("agent", 2, "/runs/x/step-2");
    expect([...loadedA]).toEqual(["agent@1", "agent@2"]);
    await publisher.publish("agent", 3, "/runs/x/step-3");
    expect([...loadedA].sort()).toEqual(["agent@2", "agent@3"]);
    expect([...loadedB].sort()).toEqual(["agent@2", "agent@3"]);
    expect(a.requests.filter((r) => r.path === "/v1/unload_lora_adapter").map((r) => r.body)).toEqual([
      { lora_name: "agent@1" },
    ]);
    expect(publisher.loaded()).toEqual(["agent@2", "agent@3"]);
    await publisher.unload("agent@2");
    expect(publisher.loaded()).toEqual(["agent@3"]);
    expect([...loadedB]).toEqual(["agent@3"]);
  });

  it("uses SGLang's paths, and its errors name the replica and the adapter", async () => {
    const good = await fakeServer(adminHandler("sglang", new Set()));
    const bad = await fakeServer(adminHandler("sglang", new Set(), "rank 128 is above --max-lora-rank 64"));
    const ok = new AdapterPublisher({ replicas: [good.url], server: "sglang" });
    await ok.publish("agent", 0, "/shared/agent-0");
    expect(good.requests[0]).toEqual({
      method: "POST",
      path: "/load_lora_adapter",
      body: { lora_name: "agent@0", lora_path: "/shared/agent-0" },
    });
    const publisher = new AdapterPublisher({ replicas: [good.url, bad.url], server: "sglang" });
    const error = await publisher.publish("agent", 1, "/shared/agent-1").catch((e) => e);
    expect(error).toBeInstanceOf(AdapterPublishError);
    expect(error.replica).toBe(bad.url);
    expect(error.adapter).toBe("agent@1");
    expect(error.message).toContain(bad.url);
    expect(error.message).toContain('"agent@1"');
    expect(error.message).toContain("max-lora-rank");
  });

  it("unloads every version of a name the replicas list, and leaves other names alone", async () => {
    const loadedA = new Set(["agent@1", "agent@3", "other@2", "agent@x"]);
    const loadedB = new Set(["agent@2"]);
    const a = await fakeServer(adminHandler("vllm", loadedA));
    const b = await fakeServer(adminHandler("vllm", loadedB));
    const publisher = new AdapterPublisher({ replicas: [a.url, b.url], server: "vllm" });
    expect(await publisher.unloadAll("agent")).toEqual(["agent@1", "agent@2", "agent@3"]);
    expect([...loadedA].sort()).toEqual(["agent@x", "other@2"]);
    expect([...loadedB]).toEqual([]);
    expect(await publisher.unloadAll("agent")).toEqual([]);
    // A replica whose listing fails is an error naming it.
    const broken = await fakeServer((_, res) => json(res, 500, { error: { message: "down" } }));
    const error = await new AdapterPublisher({ replicas: [broken.url], server: "vllm" })
      .unloadAll("agent")
      .catch((e) => e);
    expect(error).toBeInstanceOf(AdapterPublishError);
    expect(error.message).toContain(broken.url);
  });

  it("refuses a load the server does not list afterwards", async () => {
    const server = await fakeServer((request, res) => {
      if (request.path === "/v1/models") return json(res, 200, { object: "list", data: [{ id: "base" }] });
      res.writeHead(200).end("ok");
    });
    const error = await new AdapterPublisher({ replicas: [server.url], server: "vllm" })
      .publish("agent", 4, "/shared/a")
      .catch((e) => e);
    expect(error).toBeInstanceOf(AdapterPublishError);
    expect(error.message).toMatch(/agent@4.*does not list it/);
  });
});
