import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIChatPolicy, OpenAIPolicyError } from "../src/openai-chat-policy.js";
import { envTokenizer } from "./fixtures.js";

const tokenizer = envTokenizer();
let server: Server | undefined;

async function fakeServer(
  handle: (body: unknown, res: ServerResponse, req: IncomingMessage) => void,
): Promise<string> {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => handle(raw ? JSON.parse(raw) : undefined, res, req));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1/`;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

const prompt = {
  tokens: Int32Array.of(1),
  messages: [{ role: "user", content: "Turn 1:\nState:\nP_G" }],
  responsePrefix: "<think>",
};

describe("OpenAIChatPolicy", () => {
  it("posts the messages and sampling settings and returns the reply as ids", async () => {
    const seen: unknown[] = [];
    const baseUrl = await fakeServer((body, res, req) => {
      seen.push({ body, url: req.url, auth: req.headers.authorization });
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          choices: [
            { message: { content: "<think> go </think><answer>Right</answer>" }, finish_reason: "stop" },
          ],
        }),
      );
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "tiny", tokenizer, apiKey: "k" });
    const [out] = await policy.generate([prompt], { maxNewTokens: 20, temperature: 0.5, seed: 3 });
    expect(seen[0]).toMatchObject({
      url: "/v1/chat/completions",
      auth: "Bearer k",
      body: { model: "tiny", messages: prompt.messages, max_tokens: 20, temperature: 0.5, seed: 3 },
    });
    // The reply's own "<think>" is the prefix the rollout adds back; the stop shows as <|im_end|>.
    expect(tokenizer.decode(out!.tokens)).toBe(" go </think><answer>Right</answer><|im_end|>");
    expect(out!.logProbs.length).toBe(out!.tokens.length);
    expect(Number.isNaN(out!.logProbs[0])).toBe(true);
  });

  it("retries server errors, then reports the status and a bounded body", async () => {
    let requests = 0;
    const baseUrl = await fakeServer((_body, res) => {
      requests++;
      res.statusCode = 503;
      res.end("overloaded ".repeat(200));
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer, maxRetries: 2, retryDelayMs: 1 });
    const error = await policy.generate([prompt], { maxNewTokens: 4, temperature: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAIPolicyError);
    expect((error as OpenAIPolicyError).status).toBe(503);
    expect((error as Error).message).toMatch(/HTTP 503/);
    expect((error as Error).message.length).toBeLessThan(500);
    expect(requests).toBe(3);
  });

  it("does not retry a client error", async () => {
    let requests = 0;
    const baseUrl = await fakeServer((_body, res) => {
      requests++;
      res.statusCode = 400;
      res.end('{"error":"bad model"}');
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer, retryDelayMs: 1 });
    await expect(policy.generate([prompt], { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(
      /HTTP 400.*bad model/,
    );
    expect(requests).toBe(1);
  });

  it("times out a server that never answers", async () => {
    const baseUrl = await fakeServer(() => {});
    const policy = new OpenAIChatPolicy({
      baseUrl,
      model: "m",
      tokenizer,
      timeoutMs: 100,
      maxRetries: 1,
      retryDelayMs: 1,
    });
    const started = Date.now();
    await expect(policy.generate([prompt], { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(
      /timed out after 100 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("sums the usage servers report and counts the replies that had none", async () => {
    let requests = 0;
    const baseUrl = await fakeServer((_body, res) => {
      requests++;
      const usage =
        requests === 2 ? {} : { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } };
      res.end(
        JSON.stringify({
          choices: [{ message: { content: "<think></think><answer>Up</answer>" }, finish_reason: "stop" }],
          ...usage,
        }),
      );
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer, concurrency: 1 });
    expect(policy.usage.requests).toBe(0);
    await policy.generate([prompt, prompt, prompt], { maxNewTokens: 4, temperature: 1 });
    expect(policy.usage).toEqual({
      requests: 3,
      requestsWithUsage: 2,
      promptTokens: 20,
      completionTokens: 8,
      totalTokens: 28,
    });
  });

  it("names the reason a server cannot be reached", async () => {
    const closed = await fakeServer(() => {});
    // Closed now; afterEach's second close just reports that it was not running.
    await new Promise((resolve) => server!.close(resolve));
    const policy = new OpenAIChatPolicy({ baseUrl: closed, model: "m", tokenizer, maxRetries: 0 });
    const error = await policy.generate([prompt], { maxNewTokens: 4, temperature: 1 }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAIPolicyError);
    expect((error as Error).message).toMatch(/chat\/completions failed: .*ECONNREFUSED/);
    expect((error as OpenAIPolicyError).status).toBeUndefined();
  });

  it("rejects a reply without content", async () => {
    const baseUrl = await fakeServer((_body, res) => res.end(JSON.stringify({ choices: [] })));
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer });
    await expect(policy.generate([prompt], { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(
      /message.content/,
    );
  });
});

describe("OpenAIChatPolicy on hostile servers", () => {
  it("stops reading an endless body at maxResponseBytes and closes the connection", async () => {
    let written = 0;
    let closed = false;
    const baseUrl = await fakeServer((_body, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(64 * 1024, "a");
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once("drain", pump);
      };
      res.on("close", () => (closed = true));
      pump();
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer, maxResponseBytes: 1 << 20 });
    const started = Date.now();
    const failure = policy.generate([prompt], { maxNewTokens: 4, temperature: 1 });
    await expect(failure).rejects.toThrow(/longer than maxResponseBytes \(1048576 bytes\)/);
    await expect(failure).rejects.toMatchObject({ retryable: false });
    expect(Date.now() - started).toBeLessThan(5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(true);
    expect(written).toBeLessThan(64 << 20);
  });

  it("refuses a body whose declared length is over the limit without reading it", async () => {
    const baseUrl = await fakeServer((_body, res) => {
      res.writeHead(200, { "content-length": String(10_000_000) });
      res.write("{");
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer });
    await expect(policy.generate([prompt], { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(
      /longer than maxResponseBytes \(8388608 bytes\)/,
    );
  });

  it("stops the other requests of the batch on the first fatal error", async () => {
    let received = 0;
    const open = new Set<ServerResponse>();
    const baseUrl = await fakeServer((_body, res) => {
      received++;
      if (received === 1) {
        res.writeHead(400).end("bad request");
        return;
      }
      // Every other request hangs until its client gives up.
      open.add(res);
      res.on("close", () => open.delete(res));
    });
    const policy = new OpenAIChatPolicy({ baseUrl, model: "m", tokenizer, concurrency: 3 });
    const prompts = Array.from({ length: 20 }, () => prompt);
    await expect(policy.generate(prompts, { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(/HTTP 400/);
    // Only the requests already in flight reach the server, and the client drops the hanging ones.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const settled = received;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received).toBe(settled);
    expect(received).toBeLessThanOrEqual(3);
    expect(open.size).toBe(0);
  });

  it("sends no retry after the batch has failed", async () => {
    let received = 0;
    const baseUrl = await fakeServer((_body, res) => {
      received++;
      // The first request fails for good once the second has failed retryably.
      if (received === 2) res.writeHead(503).end("busy");
      else setTimeout(() => res.writeHead(401).end("no"), 20);
    });
    const policy = new OpenAIChatPolicy({
      baseUrl,
      model: "m",
      tokenizer,
      concurrency: 2,
      maxRetries: 5,
      retryDelayMs: 100,
    });
    await expect(policy.generate([prompt, prompt], { maxNewTokens: 4, temperature: 1 })).rejects.toThrow(
      /HTTP 401/,
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(received).toBe(2);
  });
});
