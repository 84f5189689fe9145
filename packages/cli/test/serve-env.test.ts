import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkRemoteEnv, createEnv, OpenEnvClient, RemoteEnvError } from "@ragen/envs";
import { parseMetricsJsonl } from "@ragen/logging";
import { trainBpeTokenizer } from "@ragen/tokenizer";
import {
  resolveSettings,
  SMOKE_RUN_SETTINGS,
  trainingGroups,
  validate,
  validationManager,
} from "@ragen/trainer";
import { resolveRunSettings, trainInFolder } from "@ragen/trainer/node";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";
import { type RunningEnvServer, serveEnvCommand, startEnvServer } from "../src/commands/serve-env.js";

const running: RunningEnvServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
  vi.restoreAllMocks();
});

async function serve(env: string, options: Partial<Parameters<typeof startEnvServer>[0]> = {}) {
  const server = await startEnvServer({ env, port: 0, ...options });
  running.push(server);
  return server;
}

async function post(url: string, body: string | object, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** Actions for `tag`: every named action, then malformed ones, then names again (after the end too). */
function actionScript(tag: string): string[] {
  const names = createEnv(tag).actions ?? [];
  return [...names, "Jump", "", "<answer>Left</answer>", "x".repeat(300), ...names, ...[...names].reverse()];
}

describe("ragen serve-env's server driven by OpenEnvClient", () => {
  for (const tag of ["FrozenLake", "Bandit"]) {
    it(`plays ${tag} exactly as the env plays in process: observations, rewards, done and info`, async () => {
      const server = await serve(tag);
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = new OpenEnvClient({ url: server.url, timeoutMs: 5000 });
      const local = createEnv(tag);
      let steps = 0;
      for (const seed of [0, 5, 123, 10_001]) {
        expect(await client.reset(seed)).toBe(local.reset(seed));
        expect(client.done).toBe(false);
        for (const action of actionScript(tag)) {
          const expected = local.step(action);
          expect(await client.step(action)).toEqual(expected);
          expect(client.done).toBe(local.done);
          steps++;
        }
        expect(await client.render()).toBe(local.render());
      }
      expect(steps).toBeGreaterThan(10);
      // What prompts need comes with the first reset's reply.
      expect(client.instructions).toBe(local.instructions);
      expect(client.actions).toEqual(local.actions);
      // One client, one session, however many episodes.
      expect(server.sessions).toBe(1);
      await client.close();
      expect(server.sessions).toBe(0);
    });
  }

  it("answers GET /health and /metadata, and keeps sessions apart", async () => {
    const server = await serve("FrozenLake", { config: { size: 5 } });
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: "healthy" });
    const metadata = (await (await fetch(`${server.url}/metadata`)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      name: "FrozenLake",
      env: "frozenlake",
      instructions: createEnv("FrozenLake").instructions,
    });
    expect((metadata.config as { size: number }).size).toBe(5);
    const [a, b] = [new OpenEnvClient({ url: server.url }), new OpenEnvClient({ url: server.url })];
    expect(await a.reset(1)).toBe(createEnv("FrozenLake", { size: 5 }).reset(1));
    await b.reset(2);
    expect(a.sessionId).not.toBe(b.sessionId);
    expect(server.sessions).toBe(2);
    const local = createEnv("FrozenLake", { size: 5 });
    local.reset(1);
    await b.step("Left");
    expect(await a.render()).toBe(local.render());
  });
});

describe("the Env contract over HTTP", () => {
  for (const tag of ["FrozenLake", "Bandit", "SimpleSokoban", "Countdown", "WebShop"]) {
    it(`ragen serve-env ${tag} through OpenEnvClient passes the conformance checker, and no session is left`, async () => {
      const server = await serve(tag);
      const local = createEnv(tag);
      const report = await checkRemoteEnv(
        () =>
          new OpenEnvClient({
            url: server.url,
            name: local.name,
            config: local.config as object,
            instructions: local.instructions,
            actions: local.actions,
          }),
        { name: local.name, seeds: [0, 42] },
      );
      expect(report.problems).toEqual([]);
      expect(report.steps).toBeGreaterThan(50);
      expect(server.sessions).toBe(0);
    }, 60_000);
  }
});

describe("ragen serve-env's errors", () => {
  it("400 for bad JSON, 422 for a bad seed or no action, 404 for an unknown session, 413 for a big body", async () => {
    const server = await serve("FrozenLake", { maxBodyBytes: 1024 });
    const badJson = await post(`${server.url}/reset`, '{"seed": 1');
    expect(badJson.status).toBe(400);
    expect(badJson.json.detail).toMatch(/^request body is not JSON/);
    for (const seed of [-1, 1.5, "7", true]) {
      const bad = await post(`${server.url}/reset`, { seed });
      expect(bad.status, String(seed)).toBe(422);
      expect(bad.json.detail).toBe(`seed must be an integer >= 0, got ${JSON.stringify(seed)}`);
    }
    expect(server.sessions).toBe(0);
    const unknown = await post(`${server.url}/step`, { session_id: "nope", action: { message: "Left" } });
    expect(unknown).toEqual({ status: 404, json: { detail: 'unknown session "nope"' } });
    expect((await post(`${server.url}/step`, { action: { message: "Left" } })).status).toBe(400);
    const opened = await post(`${server.url}/reset`, { seed: 3 });
    expect(opened.status).toBe(200);
    const noAction = await post(`${server.url}/step`, { session_id: opened.json.session_id });
    expect(noAction.status).toBe(422);
    const big = await post(`${server.url}/step`, {
      session_id: opened.json.session_id,
      action: "x".repeat(2000),
    });
    expect(big.status).toBe(413);
    expect((await fetch(`${server.url}/nowhere`)).status).toBe(404);
    const wrongMethod = await fetch(`${server.url}/reset`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
  });

  it("gives a client a typed 404 on a step in a closed session, not retried", async () => {
    const server = await serve("Bandit");
    const client = new OpenEnvClient({ url: server.url, retryDelayMs: 1 });
    await client.reset(0);
    const session = client.sessionId!;
    await post(`${server.url}/close`, { session_id: session });
    const error = await client.step("Dragon").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteEnvError);
    expect(error).toMatchObject({ kind: "http", status: 404, endpoint: "POST /step", attempts: 1 });
    expect((error as Error).message).toBe(
      `POST /step ${server.url}/step: HTTP 404: {"detail":"unknown session \\"${session}\\""}`,
    );
    // A reset opens a new session in its place.
    expect(await client.reset(0)).toBe(createEnv("Bandit").reset(0));
    expect(client.sessionId).not.toBe(session);
  });

  it("caps the sessions (503), answers a repeated request_id once, and takes X-Session-Id", async () => {
    const server = await serve("FrozenLakeDeterministic", { maxSessions: 2 });
    const first = await post(`${server.url}/reset`, { seed: 10000 });
    expect((await post(`${server.url}/reset`, {})).status).toBe(200);
    const full = await post(`${server.url}/reset`, { seed: 1 });
    expect(full.status).toBe(503);
    expect(full.json.detail).toMatch(/all 2 sessions are in use/);
    const session = first.json.session_id as string;
    const step = { session_id: session, action: { message: "Right" }, request_id: "r1" };
    const once = await post(`${server.url}/step`, step);
    const again = await post(`${server.url}/step`, step);
    expect(again).toEqual(once);
    const state = (await (
      await fetch(`${server.url}/state`, { headers: { "x-session-id": session } })
    ).json()) as Record<string, unknown>;
    expect(state).toMatchObject({ step_count: 1, seed: 10000, done: false });
    const local = createEnv("FrozenLakeDeterministic");
    local.reset(10000);
    local.step("Right");
    expect(state.render).toBe(local.render());
  });
});

describe("ragen serve-env, the command", () => {
  it("prints its URL, serves on 127.0.0.1 until stopped, and refuses bad command lines with exit code 2", async () => {
    const logs = vi.spyOn(console, "log").mockImplementation(() => {});
    vi.spyOn(console, "error").mockImplementation(() => {});
    const stop = new AbortController();
    const serving = serveEnvCommand(["Bandit", "port=0", "hiArmName=Griffin"], { stop: stop.signal });
    await vi.waitFor(() => expect(logs).toHaveBeenCalled());
    const line = String(logs.mock.calls[0]![0]);
    const url = /on (http:\/\/127\.0\.0\.1:\d+) /.exec(line)?.[1];
    expect(url, line).toBeDefined();
    const client = new OpenEnvClient({ url: url! });
    await client.reset(4);
    expect(client.actions).toContain("Griffin");
    stop.abort();
    await serving;
    await expect(fetch(`${url}/health`)).rejects.toThrow();

    expect(await runRagen(["serve-env", "--help"])).toBe(0);
    expect(logs.mock.calls.at(-1)![0]).toMatch(/^usage: ragen serve-env <env\|preset> \[port=8000\]/);
    expect(await runRagen(["--help"])).toBe(0);
    expect(logs.mock.calls.at(-1)![0]).toMatch(/^ {2}serve-env +serve an env/m);
    for (const line of [
      [],
      ["Chess"],
      ["FrozenLake", "port=99999"],
      ["FrozenLake", "size=-3"],
      ["Bandit", "--port", "1"],
    ])
      expect(await runRagen(["serve-env", ...line]), line.join(" ")).toBe(2);
  });
});

describe("envServers in a training run's settings", () => {
  /** A tiny vocabulary for the scripted answers; the envs' own text falls back to bytes. */
  const tokenizer = trainBpeTokenizer(
    ["<think> go </think> <answer> Left || Down </answer>", "Dragon Phoenix Right Up"],
    { vocabSize: 300, addedTokens: ["<think>", "</think>", "<answer>", "</answer>"] },
  ).tokenizer;
  const ANSWERS = ["Left || Down", "Dragon", "Right", "Phoenix || Up", "Down || Down"];
  /** Answers by call and prompt, so both runs get the same responses in the same places. */
  const policy = () => {
    let call = 0;
    return {
      async generate(prompts: readonly unknown[]) {
        const turn = call++;
        return prompts.map((_, p) => {
          const ids = tokenizer.encode(
            ` go </think> <answer> ${ANSWERS[(turn + p) % ANSWERS.length]} </answer>`,
          );
          ids.push(tokenizer.imEndId!);
          return { tokens: Int32Array.from(ids), logProbs: new Float32Array(ids.length).fill(-1) };
        });
      },
    };
  };

  it("plays a tag on its server and the others in process, with the same trajectories as all in process", async () => {
    const server = await serve("FrozenLake");
    const base = [
      "envs=FrozenLake,Bandit",
      "validation.groupsPerEnv=3",
      "validation.samples=2",
      "rollout.maxTurns=3",
    ];
    const local = await resolveSettings({ overrides: base });
    const remote = await resolveSettings({ overrides: [...base, `envServers=FrozenLake=${server.url}`] });
    expect(local.settings.envServers).toBeNull();
    expect(remote.settings.envServers).toEqual({ FrozenLake: { url: server.url, protocol: "openenv" } });
    expect(trainingGroups(remote.settings).map((g) => g.server)).toEqual([
      { url: server.url, protocol: "openenv" },
      undefined,
    ]);

    const expected = await validate(
      validationManager(local.settings),
      policy(),
      tokenizer,
      local.settings,
      0,
    );
    const manager = validationManager(remote.settings);
    expect(manager.slots.map((slot) => slot.env instanceof OpenEnvClient)).toEqual([
      ...Array(6).fill(true),
      ...Array(6).fill(false),
    ]);
    const played = await validate(manager, policy(), tokenizer, remote.settings, 0);
    // Every FrozenLake env of the batch had a session of its own on the server.
    expect(server.sessions).toBe(6);
    expect(played.batch.trajectories).toEqual(expected.batch.trajectories);
    expect(played.metrics["val-env/FrozenLake/success"]).toBe(expected.metrics["val-env/FrozenLake/success"]);
    const turns = played.batch.trajectories.map((t) => t.turns.length);
    expect(Math.max(...turns.slice(0, 6))).toBeGreaterThan(1);
    await manager.close();
    expect(server.sessions).toBe(0);
  });
});

/**
 * A proxy in front of `target` that dies after forwarding `steps` POST /step requests: it stops
 * listening and cuts every connection, as a killed env server does.
 */
async function dyingProxy(target: string, steps: number) {
  let forwarded = 0;
  const upstream = new URL(target);
  const proxy = createServer((req, res) => {
    if (req.method === "POST" && req.url === "/step" && ++forwarded > steps) {
      proxy.close();
      proxy.closeAllConnections();
      req.socket.destroy();
      return;
    }
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, closed: () => !proxy.listening, close: () => proxy.close() };
}

describe("an env server killed in the middle of a training run", () => {
  it("costs the episodes it was playing, said as it happens, and the run goes on with the other env", async () => {
    const server = await serve("FrozenLakeGridCoord");
    const proxy = await dyingProxy(server.url, 3);
    const root = mkdtempSync(join(tmpdir(), "ragen-env-server-killed-"));
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const summary = await trainInFolder(
        await resolveRunSettings({
          cwd: root,
          overrides: [
            ...SMOKE_RUN_SETTINGS,
            "model=embedded",
            "envs=FrozenLakeGridCoord,Bandit",
            `envServers=FrozenLakeGridCoord=${proxy.url}`,
            // Long enough for the warm-started model's answers to name actions, so the envs are stepped.
            "rollout.maxNewTokens=48",
            "steps=2",
            "outDir=run",
          ],
        }),
      );
      expect(proxy.closed()).toBe(true);
      expect(summary.steps).toBe(2);
      const rows = parseMetricsJsonl(readFileSync(join(root, "run", "metrics.jsonl"), "utf8"));
      expect(rows.map((row) => row.step)).toEqual([0, 1, 2]);
      // FrozenLake's groups left the batches once its server was gone; Bandit's trained and validated.
      const last = rows.at(-1)!.metrics;
      expect(last["train/env_lost"]).toBe(2);
      expect(last["train/env_lost_dropped"]).toBe(2);
      expect(last["train/FrozenLakeGridCoord/success"]).toBeUndefined();
      expect(last["train/Bandit/success"]).toBeTypeOf("number");
      expect(last["val-env/env_lost"]).toBeGreaterThan(0);
      expect(last["val-env/Bandit/success"]).toBeTypeOf("number");
      expect(Number.isFinite(last["actor/pg_loss"])).toBe(true);
      const said = lines.filter((line) => line.includes("lost their env server"));
      expect(said.length).toBeGreaterThan(0);
      expect(said[0]).toMatch(
        new RegExp(
          `FrozenLakeGridCoord env \\(seed \\d+\\) lost during step \\d+: .*127\\.0\\.0\\.1:${new URL(proxy.url).port}`,
        ),
      );
    } finally {
      proxy.close();
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
