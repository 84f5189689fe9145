/**
 * `ragen serve-env <env|preset> [port=8000] [host=127.0.0.1] [maxSessions=256] [key=value ...]`: one env
 * of @ragen/envs behind HTTP in the OpenEnv shape, so training on another machine (or in another
 * process) plays its episodes here through `OpenEnvClient`.
 *
 * Routes (bodies and replies are JSON; errors are `{"detail": "..."}` as FastAPI and OpenEnv send them):
 * - `POST /reset` `{"seed"?: N, "session_id"?: "..."}`: without a session_id, opens a session (one env
 *   instance of its own) and returns its id as `session_id`; with one, resets that session's env. The
 *   reply: `{"observation": {"text", "instructions", "actions"}, "reward": null, "done": false, "session_id"}`.
 *   A missing seed is 0. 400 bad JSON, 404 unknown session, 422 a seed that is not an integer >= 0,
 *   503 every session taken.
 * - `POST /step` `{"session_id": "...", "action": {"message": "Left"}, "request_id"?: "..."}` ->
 *   `{"observation": {"text", "info"}, "reward": r, "done": d}`. A step whose request_id is the session's
 *   last one gets that step's reply again (a client's retry after a lost reply), not a second step.
 * - `GET /state?session_id=...` -> `{"episode_id", "step_count", "seed", "done", "render"}`.
 * - `POST /close` `{"session_id": "..."}` ends a session. `GET /health` -> `{"status": "healthy"}`;
 *   `GET /metadata` names the env, its config, instructions and actions.
 * The session id may also come in an `X-Session-Id` header. There is no authentication: bind it to
 * 127.0.0.1 (the default) or a trusted private network only.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createEnv, type Env, getEnvSpec, listEnvs, listPresets, parseOverrides } from "@ragen/envs";
import { UsageError } from "./usage.js";

export const SERVE_ENV_USAGE =
  "usage: ragen serve-env <env|preset> [port=8000] [host=127.0.0.1] [maxSessions=256] [key=value ...]";

export interface EnvServerOptions {
  /** A preset tag (`FrozenLake`, `Bandit`, ...) or a registered env name. */
  env: string;
  /** Env config overrides, as `createEnv` takes them. */
  config?: object;
  /** Default 8000; 0 takes any free port. */
  port?: number;
  /** Default 127.0.0.1: reachable from this machine only. */
  host?: string;
  /** Sessions open at once (default 256); one more waits for an idle one to expire. */
  maxSessions?: number;
  /** The largest request body (default 64 KiB); a larger one gets 413. */
  maxBodyBytes?: number;
  /** A session unused this long may be closed to make room for a new one (default 30 minutes). */
  sessionIdleMs?: number;
}

export const ENV_SERVER_DEFAULTS = {
  port: 8000,
  host: "127.0.0.1",
  maxSessions: 256,
  maxBodyBytes: 64 * 1024,
  sessionIdleMs: 30 * 60 * 1000,
} as const;

export interface RunningEnvServer {
  /** The root URL it listens on, e.g. "http://127.0.0.1:8000". */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Sessions open now. */
  readonly sessions: number;
  /** Stops listening and drops every connection and session. */
  close(): Promise<void>;
}

interface Session {
  env: Env;
  seed: number;
  episode: number;
  steps: number;
  lastUsed: number;
  lastStep?: { requestId: string; reply: object };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Serves `options.env` over HTTP (see this file's comment for the routes); resolves once it listens.
 * Throws UnknownEnvError or EnvConfigError at once for a bad env or config.
 */
export async function startEnvServer(options: EnvServerOptions): Promise<RunningEnvServer> {
  const settings = { ...ENV_SERVER_DEFAULTS, ...definedOnly(options) };
  const config = options.config ?? {};
  // Built once up front, so a bad name or config fails here rather than at the first reset.
  const probe = createEnv(options.env, config);
  const sessions = new Map<string, Session>();

  const openSession = (): [string, Session] => {
    if (sessions.size >= settings.maxSessions) {
      const now = Date.now();
      for (const [id, session] of sessions)
        if (now - session.lastUsed >= settings.sessionIdleMs) sessions.delete(id);
    }
    if (sessions.size >= settings.maxSessions)
      throw new HttpError(
        503,
        `all ${settings.maxSessions} sessions are in use; close one (POST /close) or wait for one to idle out`,
      );
    const id = randomUUID();
    const session: Session = {
      env: createEnv(options.env, config),
      seed: 0,
      episode: 0,
      steps: 0,
      lastUsed: Date.now(),
    };
    sessions.set(id, session);
    return [id, session];
  };

  const findSession = (id: string | undefined, route: string): [string, Session] => {
    if (id === undefined) throw new HttpError(400, `${route} needs a session_id (POST /reset opens one)`);
    const session = sessions.get(id);
    if (!session) throw new HttpError(404, `unknown session ${JSON.stringify(id)}`);
    session.lastUsed = Date.now();
    return [id, session];
  };

  const routes: Record<string, Record<string, (request: RouteRequest) => object>> = {
    "/health": { GET: () => ({ status: "healthy" }) },
    "/metadata": {
      GET: () => ({
        name: options.env,
        description: getEnvSpec(options.env).description,
        env: probe.name,
        config: probe.config,
        instructions: probe.instructions,
        actions: probe.actions,
        max_sessions: settings.maxSessions,
      }),
    },
    "/reset": {
      POST: ({ body, sessionId }) => {
        const seed = body.seed ?? 0;
        if (!Number.isSafeInteger(seed) || (seed as number) < 0)
          throw new HttpError(422, `seed must be an integer >= 0, got ${JSON.stringify(seed)}`);
        const [id, session] = sessionId === undefined ? openSession() : findSession(sessionId, "POST /reset");
        session.seed = seed as number;
        session.episode++;
        session.steps = 0;
        session.lastStep = undefined;
        const text = session.env.reset(session.seed);
        return {
          observation: { text, instructions: session.env.instructions, actions: session.env.actions },
          reward: null,
          done: session.env.done,
          session_id: id,
        };
      },
    },
    "/step": {
      POST: ({ body, sessionId }) => {
        const [, session] = findSession(sessionId, "POST /step");
        const requestId = typeof body.request_id === "string" ? body.request_id : undefined;
        if (requestId !== undefined && session.lastStep?.requestId === requestId)
          return session.lastStep.reply;
        if (!("action" in body))
          throw new HttpError(
            422,
            'POST /step needs an "action" object, e.g. {"action": {"message": "Left"}}',
          );
        // Whatever the action holds goes to the env, which treats anything malformed as an invalid no-op.
        const action = isRecord(body.action) ? body.action.message : body.action;
        const result = session.env.step(action as string);
        session.steps++;
        const reply = {
          observation: { text: result.observation, info: result.info },
          reward: result.reward,
          done: result.done,
        };
        if (requestId !== undefined) session.lastStep = { requestId, reply };
        return reply;
      },
    },
    "/state": {
      GET: ({ sessionId }) => {
        const [id, session] = findSession(sessionId, "GET /state");
        return {
          episode_id: `${id}:${session.episode}`,
          step_count: session.steps,
          seed: session.seed,
          done: session.env.done,
          render: session.env.render(),
        };
      },
    },
    "/close": {
      POST: ({ sessionId }) => {
        const [id] = findSession(sessionId, "POST /close");
        sessions.delete(id);
        return { closed: true };
      },
    },
  };

  const server = createServer((request, response) => {
    handle(request, response, routes, settings.maxBodyBytes).catch(() => {
      // The reply could not be written (the client went away); nothing is left to tell it.
      response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.port, settings.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const hostInUrl = settings.host.includes(":") ? `[${settings.host}]` : settings.host;
  return {
    url: `http://${hostInUrl}:${port}`,
    host: settings.host,
    port,
    get sessions() {
      return sessions.size;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        sessions.clear();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

interface RouteRequest {
  body: Record<string, unknown>;
  sessionId: string | undefined;
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  routes: Record<string, Record<string, (request: RouteRequest) => object>>,
  maxBodyBytes: number,
): Promise<void> {
  const url = new URL(request.url ?? "/", "http://localhost");
  try {
    const route = routes[url.pathname];
    if (!route) throw new HttpError(404, `no route ${url.pathname}`);
    const method = request.method ?? "GET";
    const handler = route[method];
    if (!handler) {
      response.setHeader("allow", Object.keys(route).join(", "));
      throw new HttpError(
        405,
        `${method} ${url.pathname} is not allowed; use ${Object.keys(route).join(" or ")}`,
      );
    }
    const body = method === "POST" ? parseBody(await readBody(request, maxBodyBytes)) : {};
    const header = request.headers["x-session-id"];
    const fromRequest =
      method === "POST" ? body.session_id : (url.searchParams.get("session_id") ?? undefined);
    if (fromRequest !== undefined && typeof fromRequest !== "string")
      throw new HttpError(422, `session_id must be a string, got ${JSON.stringify(fromRequest)}`);
    const sessionId = fromRequest ?? (typeof header === "string" ? header : undefined);
    let reply: object;
    try {
      reply = handler({ body, sessionId });
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw new HttpError(500, `the env failed: ${(error as Error).message}`);
    }
    send(response, 200, reply);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    if (error.status === 413) response.setHeader("connection", "close");
    send(response, error.status, { detail: error.message });
  }
}

function send(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

/** The body as text; 413 past `limit` bytes, read no further. */
async function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = () => new HttpError(413, `request body larger than ${limit} bytes`);
  if (Number(request.headers["content-length"] ?? 0) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A JSON object body; an empty body is {} (OpenEnv's reset takes none). */
function parseBody(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `request body is not JSON: ${(error as Error).message}`);
  }
  if (!isRecord(value)) throw new HttpError(422, "request body must be a JSON object");
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function definedOnly<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}

const SERVER_KEYS = ["port", "host", "maxSessions"] as const;

/** The command: parses the line, serves until SIGINT or SIGTERM (or until `stop` aborts). */
export async function serveEnvCommand(
  args: readonly string[],
  { stop }: { stop?: AbortSignal } = {},
): Promise<void> {
  let parsed: ReturnType<typeof parseServeArgs>;
  try {
    parsed = parseServeArgs(args);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${SERVE_ENV_USAGE}`);
  }
  const names = [...listEnvs(), ...Object.keys(listPresets())];
  if (parsed.values.help) {
    console.log(serveEnvHelp(names));
    return;
  }
  const [name, ...pairs] = parsed.positionals;
  if (name === undefined)
    throw new UsageError(`which env?\n${SERVE_ENV_USAGE}\n\nenvs and presets: ${names.join(", ")}`);
  const options = serverOptions(name, pairs);
  let server: RunningEnvServer;
  try {
    server = await startEnvServer(options);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL")
      throw new UsageError(
        `cannot listen on ${options.host ?? ENV_SERVER_DEFAULTS.host}:${options.port}: ${code}`,
      );
    throw error;
  }
  console.log(
    `ragen serve-env: ${name} on ${server.url} (OpenEnv HTTP: POST /reset, POST /step, GET /state, GET /health; at most ${options.maxSessions ?? ENV_SERVER_DEFAULTS.maxSessions} sessions). Ctrl-C stops it.`,
  );
  if (!["127.0.0.1", "localhost", "::1"].includes(server.host))
    console.log(
      `warning: ${server.host} is reachable from other machines and the server has no authentication; use it on a trusted private network only.`,
    );
  await new Promise<void>((resolve) => {
    const end = () => {
      process.off("SIGINT", end);
      process.off("SIGTERM", end);
      stop?.removeEventListener("abort", end);
      server.close().then(resolve, resolve);
    };
    process.on("SIGINT", end);
    process.on("SIGTERM", end);
    stop?.addEventListener("abort", end);
    if (stop?.aborted) end();
  });
}

function parseServeArgs(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    options: { help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: true,
  });
}

/** Splits the key=value pairs into the server's options and the env's config. */
export function serverOptions(env: string, pairs: readonly string[]): EnvServerOptions {
  const values = parseOverrides(pairs);
  const options: EnvServerOptions = { env, port: ENV_SERVER_DEFAULTS.port };
  const integer = (key: string, min: number, max: number): number => {
    const value = values[key];
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max)
      throw new UsageError(`${key} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return value as number;
  };
  if ("port" in values) options.port = integer("port", 0, 65_535);
  if ("maxSessions" in values) options.maxSessions = integer("maxSessions", 1, 1_000_000);
  if ("host" in values) {
    if (typeof values.host !== "string" || values.host === "")
      throw new UsageError(`host must be a host name or address, got ${JSON.stringify(values.host)}`);
    options.host = values.host;
  }
  for (const key of SERVER_KEYS) delete values[key];
  options.config = values;
  try {
    createEnv(env, values);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return options;
}

function serveEnvHelp(names: readonly string[]): string {
  return `${SERVE_ENV_USAGE}

Serves one env or preset over HTTP in the OpenEnv shape, one env instance per session, so that a
training run elsewhere plays its episodes here (set envServers.<Tag>.url in its config).

  port=N          port to listen on (default ${ENV_SERVER_DEFAULTS.port}; 0: any free port)
  host=ADDRESS    address to bind (default ${ENV_SERVER_DEFAULTS.host}: this machine only)
  maxSessions=N   sessions open at once (default ${ENV_SERVER_DEFAULTS.maxSessions})
  key=value       the env's config, as for ragen play (e.g. size=6 p=0.9)

Routes: POST /reset {"seed": N} opens a session and returns its "session_id"; POST /step
{"session_id", "action": {"message": "Left"}}; GET /state?session_id=...; POST /close {"session_id"};
GET /health; GET /metadata. There is no authentication: keep it on 127.0.0.1 or a trusted network.

envs and presets: ${names.join(", ")}`;
}
