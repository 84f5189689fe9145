/**
 * JSON over HTTP for the env clients, with only the global `fetch` (Node 20+, browsers): a timeout per
 * request, retries with exponential backoff where a retry can help, a cap on the reply's size, and
 * errors that name the URL, the endpoint and what went wrong.
 */

/** What went wrong with a request to an env server. */
export type RemoteEnvErrorKind =
  /** No reply within `timeoutMs`. */
  | "timeout"
  /** The connection failed (refused, reset, DNS). */
  | "network"
  /** The server answered with an HTTP error status. */
  | "http"
  /** The reply is not JSON. */
  | "bad-json"
  /** The reply is JSON but lacks a field the protocol needs, or has it with the wrong type. */
  | "bad-reply"
  /** The reply is longer than `maxResponseBytes`. */
  | "too-large"
  /** The server answered 200 with an error of its own (AgentGym servers report `{"error": ...}`). */
  | "server";

export class RemoteEnvError extends Error {
  override readonly name = "RemoteEnvError";
  constructor(
    message: string,
    readonly kind: RemoteEnvErrorKind,
    /** The request's URL, query included. */
    readonly url: string,
    /** The endpoint as `METHOD /path`, e.g. `POST /step`. */
    readonly endpoint: string,
    /** HTTP status, when the server answered. */
    readonly status?: number,
    /** Tries made, the failing one included. */
    readonly attempts = 1,
  ) {
    super(message);
  }

  /** Timeouts, network errors, 429 and 5xx may pass; a retry cannot fix the others. */
  get retryable(): boolean {
    return (
      this.kind === "timeout" ||
      this.kind === "network" ||
      (this.kind === "http" && this.status !== undefined && (this.status === 429 || this.status >= 500))
    );
  }
}

/** How a client talks to its server; every field but `url` has a default. */
export interface HttpOptions {
  /** The server's root, e.g. "http://127.0.0.1:8000"; the endpoints hang off it. */
  url: string;
  /** Per request, reading the reply included (default 30 s). */
  timeoutMs?: number;
  /** Further tries after a timeout, a network error, 429 or 5xx (default 3). Other errors fail at once. */
  maxRetries?: number;
  /** The wait before the first retry, doubled before each next one (default 200 ms, at most 10 s). */
  retryDelayMs?: number;
  /** The most bytes a reply may have (default 4 MiB); a longer one fails, read no further. */
  maxResponseBytes?: number;
  /** Headers sent with every request (authentication, tracing). */
  headers?: Record<string, string>;
  /** For tests or custom transports; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export const REMOTE_ENV_DEFAULTS = {
  timeoutMs: 30_000,
  maxRetries: 3,
  retryDelayMs: 200,
  maxResponseBytes: 4 * 1024 * 1024,
} as const;

const MAX_RETRY_DELAY_MS = 10_000;
const EXCERPT_CHARS = 200;

/** One call: a method, a path under the server's root, and a JSON body or query parameters. */
export interface JsonRequest {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  query?: Record<string, string | number>;
}

/** Sends `request` (retrying as HttpOptions says) and resolves to the reply's parsed JSON. */
export async function requestJson(options: HttpOptions, request: JsonRequest): Promise<unknown> {
  const maxRetries = options.maxRetries ?? REMOTE_ENV_DEFAULTS.maxRetries;
  const baseDelay = options.retryDelayMs ?? REMOTE_ENV_DEFAULTS.retryDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await requestOnce(options, request, attempt);
    } catch (error) {
      if (!(error instanceof RemoteEnvError) || !error.retryable || attempt > maxRetries) throw error;
      await sleep(Math.min(baseDelay * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS));
    }
  }
}

/** The full URL of `request` on the server at `root`. */
export function requestUrl(root: string, request: Pick<JsonRequest, "path" | "query">): string {
  const base = `${root.replace(/\/+$/, "")}${request.path}`;
  const query = Object.entries(request.query ?? {});
  if (query.length === 0) return base;
  return `${base}?${query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join("&")}`;
}

async function requestOnce(options: HttpOptions, request: JsonRequest, attempt: number): Promise<unknown> {
  const url = requestUrl(options.url, request);
  const endpoint = `${request.method} ${request.path}`;
  const fail = (message: string, kind: RemoteEnvErrorKind, status?: number) =>
    new RemoteEnvError(`${endpoint} ${url}: ${message}`, kind, url, endpoint, status, attempt);
  const timeoutMs = options.timeoutMs ?? REMOTE_ENV_DEFAULTS.timeoutMs;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, {
        method: request.method,
        headers: {
          accept: "application/json",
          ...(request.body === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
        },
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted) throw fail(`no reply within ${timeoutMs} ms`, "timeout");
      throw fail(`request failed: ${describeFailure(error)}`, "network");
    }
    const limit = options.maxResponseBytes ?? REMOTE_ENV_DEFAULTS.maxResponseBytes;
    let text: string;
    try {
      text = await readBodyWithin(response, limit, controller.signal, () => TOO_LARGE);
    } catch (error) {
      if (error === TOO_LARGE)
        throw fail(`reply longer than maxResponseBytes (${limit} bytes); stopped reading it`, "too-large");
      if (controller.signal.aborted) throw fail(`no complete reply within ${timeoutMs} ms`, "timeout");
      throw fail(`reading the reply failed: ${describeFailure(error)}`, "network");
    }
    if (!response.ok) throw fail(`HTTP ${response.status}: ${excerpt(text)}`, "http", response.status);
    try {
      return JSON.parse(text);
    } catch {
      throw fail(`reply is not JSON: ${excerpt(text)}`, "bad-json", response.status);
    }
  } finally {
    clearTimeout(timer);
  }
}

const TOO_LARGE = Symbol("too large");

/**
 * The body as text, read as a stream and given up past `limit` bytes (throwing `tooLarge()`), so an
 * endless or runaway reply cannot fill memory. Shared with the remote policies of @ragen/rollout.
 */
export async function readBodyWithin(
  response: Response,
  limit: number,
  signal: AbortSignal,
  tooLarge: () => unknown,
): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) throw tooLarge();
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

/** A short, one-line excerpt of a reply for an error message. */
export function excerpt(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  if (line === "") return "(empty body)";
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS)}...` : line;
}

/** fetch's own message ("fetch failed") hides the reason; its cause names it (ECONNREFUSED, ...). */
function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: unknown }).cause;
  const reason = cause instanceof Error ? cause.message || (cause as { code?: string }).code : undefined;
  return reason && reason !== message ? `${message} (${reason})` : message;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
