import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WandbSink } from "../src/index.js";
import { RUN_FILES, RunLogger } from "../src/node/index.js";

interface Recorded {
  url: string;
  auth: string | undefined;
  body: Record<string, unknown>;
}

/** A stand-in for the W&B API on 127.0.0.1 that records every request. */
async function fakeWandb(options: { failFirst?: number } = {}) {
  const requests: Recorded[] = [];
  let failuresLeft = options.failFirst ?? 0;
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = "";
      req.on("data", (chunk) => (text += chunk));
      req.on("end", () => resolve(text));
    });
  const server: Server = createServer(async (req, res) => {
    const body = JSON.parse((await read(req)) || "{}");
    requests.push({ url: req.url ?? "", auth: req.headers.authorization, body });
    if (failuresLeft > 0) {
      failuresLeft--;
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    if (req.url === "/graphql") {
      const name = (body.variables as { name: string }).name;
      res.end(
        JSON.stringify({
          data: {
            upsertBucket: {
              bucket: { id: "b1", name, project: { name: "quest", entity: { name: "alice" } } },
            },
          },
        }),
      );
    } else res.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0)) await fn();
});

describe("WandbSink.fromEnv", () => {
  it("is off without WANDB_API_KEY and reads base URL, project and run id from the environment", () => {
    expect(WandbSink.fromEnv({}, { project: "ragen" })).toBeUndefined();
    expect(WandbSink.fromEnv({ WANDB_API_KEY: "  " }, { project: "ragen" })).toBeUndefined();
    const sink = WandbSink.fromEnv(
      { WANDB_API_KEY: "k", WANDB_BASE_URL: "http://127.0.0.1:1", WANDB_RUN_ID: "run42" },
      { project: "ragen" },
    );
    expect(sink?.runId).toBe("run42");
  });
});

describe("WandbSink against a fake server", () => {
  it("creates the run with upsertBucket, then streams history rows with increasing offsets", async () => {
    const server = await fakeWandb();
    cleanups.push(server.close);
    const sink = new WandbSink({
      apiKey: "secret",
      project: "quest",
      runId: "abc123",
      baseUrl: server.url,
      config: { lr: 1e-6 },
    });
    sink.log(0, { "actor/pg_loss": 0.5 });
    sink.log(1, { "actor/pg_loss": 0.25, "critic/vf_loss": Number.NaN });
    await sink.flush();
    sink.log(2, { "actor/pg_loss": 0.125 });
    await sink.close(0);

    const [create, ...streams] = server.requests;
    expect(create!.url).toBe("/graphql");
    expect(create!.auth).toBe(`Basic ${Buffer.from("api:secret").toString("base64")}`);
    expect(create!.body.query).toMatch(/upsertBucket/);
    expect(create!.body.variables).toMatchObject({
      name: "abc123",
      project: "quest",
      config: '{"lr":{"value":0.000001}}',
    });

    for (const s of streams) expect(s.url).toBe("/files/alice/quest/abc123/file_stream");
    const history = streams.filter((s) => s.body.files);
    const offsets = history.map(
      (s) => (s.body.files as Record<string, { offset: number }>)["wandb-history.jsonl"]!.offset,
    );
    const rows = history.flatMap((s) =>
      (s.body.files as Record<string, { content: string[] }>)["wandb-history.jsonl"]!.content.map((l) =>
        JSON.parse(l),
      ),
    );
    expect(rows.map((r) => [r._step, r["actor/pg_loss"]])).toEqual([
      [0, 0.5],
      [1, 0.25],
      [2, 0.125],
    ]);
    expect(rows[1]["critic/vf_loss"]).toBeNull();
    expect(offsets[0]).toBe(0);
    expect(offsets.at(-1)).toBe(rows.length - 1);
    expect(streams.at(-1)!.body).toEqual({ complete: true, exitcode: 0 });
    expect(sink.state).toBe("closed");
  });

  it("retries a failing server a bounded number of times and then succeeds", async () => {
    const server = await fakeWandb({ failFirst: 2 });
    cleanups.push(server.close);
    const warnings: string[] = [];
    const sink = new WandbSink({
      apiKey: "k",
      project: "quest",
      runId: "r",
      baseUrl: server.url,
      retryDelayMs: 5,
      maxAttempts: 3,
      warn: (m) => warnings.push(m),
    });
    sink.log(0, { x: 1 });
    await sink.close();
    expect(server.requests.filter((r) => r.url === "/graphql")).toHaveLength(3);
    expect(warnings).toEqual([]);
  });
});

describe("WandbSink when W&B is unreachable", () => {
  it("never blocks or throws, warns once, and turns itself off", async () => {
    const port = await closedPort();
    const warnings: string[] = [];
    const sink = new WandbSink({
      apiKey: "k",
      project: "p",
      baseUrl: `http://127.0.0.1:${port}`,
      retryDelayMs: 5,
      timeoutMs: 500,
      warn: (m) => warnings.push(m),
    });
    // log() hands the row to a background queue: it returns nothing to await, and the failure is only
    // seen later, off the caller's path (no clock here: timings on a loaded machine prove nothing).
    for (let step = 0; step < 50; step++) expect(sink.log(step, { x: step })).toBeUndefined();
    expect(warnings).toEqual([]);
    await sink.close();
    for (let step = 50; step < 60; step++) sink.log(step, { x: step });
    await sink.flush();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/unreachable.*local logs continue/);
    expect(sink.state).toBe("closed");
  });

  it("does not stop a RunLogger from writing its local files", async () => {
    const port = await closedPort();
    const dir = mkdtempSync(join(tmpdir(), "ragen-wandb-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const warnings: string[] = [];
    const wandb = WandbSink.fromEnv(
      { WANDB_API_KEY: "k", WANDB_BASE_URL: `http://127.0.0.1:${port}` },
      { project: "p", retryDelayMs: 5, warn: (m) => warnings.push(m) },
    )!;
    const logger = new RunLogger(dir, { console: null, wandb });
    for (let step = 0; step < 5; step++) logger.log(step, { "actor/pg_loss": step });
    await logger.close();
    expect(readFileSync(join(dir, RUN_FILES.metrics), "utf8").trim().split("\n")).toHaveLength(5);
    expect(warnings).toHaveLength(1);
  });

  it("gives up on a server that never answers after the request timeout", async () => {
    const hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => {
      hanging.closeAllConnections();
      return new Promise((resolve) => hanging.close(resolve));
    });
    const warnings: string[] = [];
    const sink = new WandbSink({
      apiKey: "k",
      project: "p",
      baseUrl: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
      timeoutMs: 100,
      maxAttempts: 2,
      retryDelayMs: 5,
      warn: (m) => warnings.push(m),
    });
    sink.log(0, { x: 1 });
    const started = performance.now();
    await sink.close();
    expect(performance.now() - started).toBeLessThan(2000);
    expect(warnings[0]).toMatch(/TimeoutError/);
  });
});
