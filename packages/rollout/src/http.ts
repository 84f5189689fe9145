/**
 * The HTTP plumbing the remote policies share: one request with a deadline, a cap on the body's size,
 * and an outside signal that cancels it. Failures come back as one typed error whose `kind` says which
 * of those ended it, so each caller maps them onto its own errors and retry rules.
 */
import { readBodyWithin } from "@ragen/envs";

/** timeout: the deadline passed; network: no answer (refused, reset, DNS); too-large: the body passed the cap; cancelled: the outside signal. */
export type HttpFailureKind = "timeout" | "network" | "too-large" | "cancelled";

export class HttpRequestFailure extends Error {
  override readonly name = "HttpRequestFailure";
  constructor(
    message: string,
    readonly kind: HttpFailureKind,
    /** HTTP status, when the server had answered before the failure. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface HttpRequest {
  method: "GET" | "POST";
  url: string;
  /** Sent as JSON. */
  body?: unknown;
  apiKey?: string;
  /** Covers the whole exchange, the body's reading included. */
  timeoutMs: number;
  /** The most bytes the body may have; a longer one is read no further. */
  maxResponseBytes: number;
  signal?: AbortSignal;
  fetch?: typeof fetch;
}

export interface HttpResponse {
  status: number;
  ok: boolean;
  text: string;
}

/** The first characters of an error body that messages quote: enough to name the problem, never a whole page. */
export const MAX_ERROR_BODY_CHARS = 300;

/** Sends `request` and reads its body as text; throws HttpRequestFailure on anything but an HTTP answer. */
export async function requestText(request: HttpRequest): Promise<HttpResponse> {
  const { method, url, timeoutMs, signal } = request;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const stop = () => controller.abort();
  signal?.addEventListener("abort", stop);
  try {
    if (signal?.aborted) throw new HttpRequestFailure(`${method} ${url} cancelled`, "cancelled");
    const response = await (request.fetch ?? fetch)(url, {
      method,
      headers: {
        ...(request.body === undefined ? {} : { "content-type": "application/json" }),
        ...(request.apiKey ? { authorization: `Bearer ${request.apiKey}` } : {}),
      },
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: controller.signal,
    });
    const text = await readBounded(response, controller.signal, request);
    return { status: response.status, ok: response.ok, text };
  } catch (error) {
    if (error instanceof HttpRequestFailure && error.kind !== "network") throw error;
    if (signal?.aborted) throw new HttpRequestFailure(`${method} ${url} cancelled`, "cancelled");
    if (timedOut) throw new HttpRequestFailure(`${method} ${url} timed out after ${timeoutMs} ms`, "timeout");
    throw new HttpRequestFailure(`${method} ${url} failed: ${describeFailure(error)}`, "network");
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
  }
}

/** The body as text, read as a stream and given up past maxResponseBytes. */
function readBounded(response: Response, signal: AbortSignal, request: HttpRequest): Promise<string> {
  const limit = request.maxResponseBytes;
  return readBodyWithin(
    response,
    limit,
    signal,
    () =>
      new HttpRequestFailure(
        `${request.method} ${request.url} returned a body longer than maxResponseBytes (${limit} bytes); stopped reading it`,
        "too-large",
        response.status,
      ),
  );
}

/** fetch's own message ("fetch failed") hides the reason; the cause names it (ECONNREFUSED, ENOTFOUND...). */
export function describeFailure(error: unknown): string {
  const message = (error as Error).message;
  const cause = (error as { cause?: unknown }).cause;
  const reason = cause instanceof Error ? cause.message || (cause as { code?: string }).code : undefined;
  return reason && reason !== message ? `${message} (${reason})` : message;
}

/**
 * What an error body says: the message of an OpenAI-style `{"error": {"message"}}`, vLLM's older
 * `{"object": "error", "message"}` or a `{"detail"}`, else the text itself; cut to MAX_ERROR_BODY_CHARS.
 */
export function errorBodyMessage(text: string): string {
  let said: unknown;
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
    const error = json.error;
    said = typeof error === "object" && error !== null ? (error as Record<string, unknown>).message : error;
    said ??= json.message ?? json.detail;
  } catch {
    // Not JSON: the text is the message.
  }
  const message = typeof said === "string" && said.length > 0 ? said : text;
  return message.slice(0, MAX_ERROR_BODY_CHARS);
}

/** Waits `ms`, or less when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done);
  });
}
