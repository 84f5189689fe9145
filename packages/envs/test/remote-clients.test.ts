import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AgentGymClient, createEnv, OpenEnvClient, RemoteEnvError } from "../src/index.js";

interface SeenRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

type Reply = { status?: number; json?: unknown; raw?: string; delayMs?: number; hang?: boolean };

interface FakeServer {
  url: string;
  requests: SeenRequest[];
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

/** A server on 127.0.0.1 that records each request and answers what `answer` says. */
async function fakeServer(answer: (request: SeenRequest, index: number) => Reply): Promise<FakeServer> {
  const requests: SeenRequest[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const url = new URL(req.url ?? "/", "http://localhost");
    const seen: SeenRequest = {
      method: req.method ?? "",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: text === "" ? undefined : JSON.parse(text),
    };
    requests.push(seen);
    const reply = answer(seen, requests.length - 1);
    if (reply.hang) return;
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (res.destroyed) return;
    res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
    res.end(reply.raw ?? JSON.stringify(reply.json));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** Fast retries, so the error tests take milliseconds. */
// Short waits between retries, but a deadline no busy test machine reaches by accident: a reply that took
// longer than it would be retried, and the requests asserted would differ. Timeouts are tested apart.
const QUICK = { timeoutMs: 10_000, maxRetries: 2, retryDelayMs: 1 };

/**
 * An AgentGym env server as agentenv-textcraft and agentenv-babyai shape it, playing FrozenLake: `id`
 * names the env, `data_idx` picks the task (the seed), replies carry no info.
 */
async function agentGymFrozenLake(): Promise<FakeServer> {
  const envs = new Map<number, ReturnType<typeof createEnv>>();
  return fakeServer(({ method, path, query, body }) => {
    const request = body as Record<string, unknown> | undefined;
    if (method === "POST" && path === "/create") {
      const id = envs.size;
      envs.set(id, createEnv("FrozenLake"));
      return { json: { id } };
    }
    if (method === "GET" && path === "/observation") return { json: envs.get(Number(query.id))!.render() };
    const env = envs.get(request?.id as number);
    if (!env) return { json: { error: `The id ${request?.id} is not valid.` } };
    if (path === "/reset") {
      const observation = env.reset(request!.data_idx as number);
      return { json: { id: request!.id, observation, reward: 0, done: false } };
    }
    if (path === "/step") {
      const result = env.step(request!.action as string);
      return { json: { observation: result.observation, reward: result.reward, done: result.done } };
    }
    if (path === "/close") {
      envs.delete(request!.id as number);
      return { json: true };
    }
    return { status: 404, json: { detail: "Not Found" } };
  });
}

describe("AgentGymClient", () => {
  it("plays an AgentGym-shaped server as the env plays in process, sending AgentGym's requests", async () => {
    const server = await agentGymFrozenLake();
    const client = new AgentGymClient({ url: server.url, ...QUICK });
    const local = createEnv("FrozenLake");
    const actions = ["Left", "Down", "Jump", "Right", "Down", "Down", "Right", "Up", "Down"];

    expect(await client.reset(7)).toBe(local.reset(7));
    for (const action of actions) {
      const expected = local.step(action);
      const result = await client.step(action);
      expect(result.observation).toBe(expected.observation);
      expect(result.reward).toBe(expected.reward);
      expect(result.done).toBe(expected.done);
      // No info from the server: the documented defaults.
      expect(result.info).toEqual({
        success: expected.done && expected.reward > 0,
        actionIsValid: true,
        actionIsEffective: true,
      });
      expect(client.done).toBe(expected.done);
      if (expected.done) break;
    }
    expect(await client.render()).toBe(local.render());
    await client.close();

    const played = server.requests.filter((r) => r.path === "/step").length;
    expect(played).toBeGreaterThan(1);
    expect(server.requests).toEqual([
      { method: "POST", path: "/create", query: {}, body: {} },
      { method: "POST", path: "/reset", query: {}, body: { id: 0, data_idx: 7 } },
      ...actions.slice(0, played).map((action) => ({
        method: "POST",
        path: "/step",
        query: {},
        body: { id: 0, action },
      })),
      { method: "GET", path: "/observation", query: { id: "0" }, body: undefined },
      { method: "POST", path: "/close", query: {}, body: { id: 0 } },
    ]);
  });

  it("speaks webshop's dialect: env_idx, session_id, a bare index, [observation, null] and state", async () => {
    const server = await fakeServer(({ path }) => {
      if (path === "/create") return { json: 3 };
      if (path === "/reset") return { json: ["WebShop [SEP] Instruction: [SEP] red shoes", null] };
      return {
        json: {
          state: "You have clicked Buy Now.",
          reward: 0.5,
          done: true,
          info: { action_is_valid: true, action_is_effective: false },
        },
      };
    });
    const client = new AgentGymClient({
      url: server.url,
      indexField: "env_idx",
      seedField: "session_id",
      ...QUICK,
    });
    expect(await client.reset(12)).toBe("WebShop [SEP] Instruction: [SEP] red shoes");
    const result = await client.step("click[buy now]");
    expect(result).toEqual({
      observation: "You have clicked Buy Now.",
      reward: 0.5,
      done: true,
      info: {
        action_is_valid: true,
        action_is_effective: false,
        success: true,
        actionIsValid: true,
        actionIsEffective: false,
      },
    });
    expect(server.requests.map((r) => r.body)).toEqual([
      {},
      { env_idx: 3, session_id: 12 },
      { env_idx: 3, action: "click[buy now]" },
    ]);
  });

  it("turns the server's in-band {error} into a RemoteEnvError of kind server, not retried", async () => {
    const server = await fakeServer(({ path }) =>
      path === "/create" ? { json: { id: 0 } } : { json: { error: "The id 0 is not valid." } },
    );
    const client = new AgentGymClient({ url: server.url, ...QUICK });
    const error = await client.reset(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteEnvError);
    expect(error).toMatchObject({ kind: "server", endpoint: "POST /reset", url: `${server.url}/reset` });
    expect((error as Error).message).toContain("The id 0 is not valid.");
    expect(server.requests.map((r) => r.path)).toEqual(["/create", "/reset"]);
  });
});

describe("OpenEnvClient", () => {
  /** An OpenEnv server of one env with no sessions, as meta-pytorch/OpenEnv's HTTPEnvServer answers. */
  const openEnvReply = (path: string): Reply =>
    path === "/reset"
      ? { json: { observation: { prompt: "start" }, reward: null, done: false } }
      : { json: { observation: { prompt: "next", info: { success: false } }, reward: 0, done: false } };

  it("sends OpenEnv's reset and step bodies and reads the TextArena-style observation", async () => {
    const server = await fakeServer(({ path }) => openEnvReply(path));
    const client = new OpenEnvClient({ url: server.url, ...QUICK });
    expect(await client.reset(5)).toBe("start");
    expect(await client.step("hello")).toEqual({
      observation: "next",
      reward: 0,
      done: false,
      info: { success: false, actionIsValid: true, actionIsEffective: true },
    });
    expect(client.sessionId).toBeUndefined();
    expect(server.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: "POST", path: "/reset", body: { seed: 5 } },
      { method: "POST", path: "/step", body: { action: { message: "hello" }, request_id: "1" } },
    ]);
  });

  it("retries a 500 and then succeeds, sending the same request again", async () => {
    const server = await fakeServer(({ path }, i) =>
      i === 1 ? { status: 500, raw: "Internal Server Error" } : openEnvReply(path),
    );
    const client = new OpenEnvClient({ url: server.url, ...QUICK });
    await client.reset(0);
    expect((await client.step("a")).observation).toBe("next");
    expect(server.requests.map((r) => [r.path, r.body])).toEqual([
      ["/reset", { seed: 0 }],
      ["/step", { action: { message: "a" }, request_id: "1" }],
      ["/step", { action: { message: "a" }, request_id: "1" }],
    ]);
  });

  it("retries 429 too, but fails at once on a 400 with the status and the body's start", async () => {
    const busy = await fakeServer(({ path }, i) =>
      i === 0 ? { status: 429, json: {} } : openEnvReply(path),
    );
    expect(await new OpenEnvClient({ url: busy.url, ...QUICK }).reset(0)).toBe("start");
    expect(busy.requests.length).toBe(2);

    const server = await fakeServer(() => ({ status: 400, json: { detail: "seed must be an integer" } }));
    const error = await new OpenEnvClient({ url: server.url, ...QUICK }).reset(1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteEnvError);
    expect(error).toMatchObject({ kind: "http", status: 400, endpoint: "POST /reset", attempts: 1 });
    expect((error as RemoteEnvError).retryable).toBe(false);
    expect((error as Error).message).toBe(
      `POST /reset ${server.url}/reset: HTTP 400: {"detail":"seed must be an integer"}`,
    );
    expect(server.requests.length).toBe(1);
  });

  it("gives up on a slow server with a timeout error after its retries", async () => {
    const server = await fakeServer(() => ({ hang: true }));
    const client = new OpenEnvClient({ url: server.url, timeoutMs: 50, maxRetries: 2, retryDelayMs: 1 });
    const error = await client.reset(3).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteEnvError);
    expect(error).toMatchObject({ kind: "timeout", endpoint: "POST /reset", attempts: 3 });
    expect((error as Error).message).toBe(`POST /reset ${server.url}/reset: no reply within 50 ms`);
    expect(server.requests.map((r) => r.body)).toEqual([{ seed: 3 }, { seed: 3 }, { seed: 3 }]);
  });

  it("names a reply that is not JSON, and one that lacks the observation, without retrying", async () => {
    const html = await fakeServer(() => ({ raw: "<html>Bad Gateway</html>" }));
    const notJson = await new OpenEnvClient({ url: html.url, ...QUICK }).reset(0).catch((e: unknown) => e);
    expect(notJson).toMatchObject({ kind: "bad-json", endpoint: "POST /reset" });
    expect((notJson as Error).message).toBe(
      `POST /reset ${html.url}/reset: reply is not JSON: <html>Bad Gateway</html>`,
    );
    expect(html.requests.length).toBe(1);

    const empty = await fakeServer(() => ({ json: { observation: { pixels: [1, 2] }, done: false } }));
    const missing = await new OpenEnvClient({ url: empty.url, ...QUICK }).reset(0).catch((e: unknown) => e);
    expect(missing).toMatchObject({ kind: "bad-reply", endpoint: "POST /reset" });
    expect((missing as Error).message).toMatch(/"observation" has no string field "text" or "prompt"/);
  });

  it("stops reading a reply longer than maxResponseBytes", async () => {
    const server = await fakeServer(() => ({ json: { observation: { text: "x".repeat(5000) } } }));
    const client = new OpenEnvClient({ url: server.url, ...QUICK, maxResponseBytes: 1000 });
    await expect(client.reset(0)).rejects.toMatchObject({ kind: "too-large", endpoint: "POST /reset" });
  });

  it("reports a server that cannot be reached as a network error, after its retries", async () => {
    const server = await fakeServer(() => ({ json: {} }));
    const url = server.url;
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const error = await new OpenEnvClient({ url, ...QUICK }).reset(0).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "network", attempts: 3, url: `${url}/reset` });
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
  });
});
