// A stand-in for an OpenAI-compatible server: POST /v1/chat/completions answers with scripted text, so
// the evaluation can be tried and tested without a model. The script reads the env from the prompt:
// Countdown is solved, Bandit pulls the arm whose name comes first in the alphabet (the high arm in
// Bandit and BanditTest, the low one in BanditReversed), FrozenLake always answers
// "Down || Right", and anything else gets a reply without tags (a format error).
//
//   tsx scripts/fake-openai-server.ts [port]     (default 8011; then --base-url http://127.0.0.1:8011/v1)

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { solveCountdown } from "@ragen/envs";

export interface ChatRequest {
  model: string;
  messages: { role: string; content: string }[];
  max_tokens?: number;
  temperature?: number;
  seed?: number;
  authorization?: string;
}

export interface FakeServerOptions {
  /** The reply text for a request (default: scriptedAnswer). */
  answer?: (request: ChatRequest) => string;
  /** Wait this long before each reply, so requests overlap. */
  delayMs?: number;
  /** Add a usage object to replies (default true). */
  reportUsage?: boolean;
  /** Take over the reply (bad statuses, broken bodies); return true when it did. */
  override?: (request: ChatRequest, res: ServerResponse) => boolean;
}

export interface FakeServer {
  /** Where /chat/completions hangs off, e.g. http://127.0.0.1:8011/v1 */
  baseUrl: string;
  requests: ChatRequest[];
  /** The most requests that were being answered at once. */
  maxInFlight: number;
  /** The usage the server reported, summed. */
  reported: { promptTokens: number; completionTokens: number };
  close(): Promise<void>;
}

/** A rough count, the same on both sides of a test: four characters to a token. */
const tokenCount = (text: string) => Math.ceil(text.length / 4);

export function scriptedAnswer(request: ChatRequest): string {
  const firstUser = request.messages.find((m) => m.role === "user")?.content ?? "";
  const lastUser = request.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
  const puzzle = [...lastUser.matchAll(/Target: (\d+), nums: \[([\d, ]+)\]/g)].at(-1);
  if (puzzle) {
    const numbers = puzzle[2]!.split(",").map((n) => Number(n.trim()));
    const expression = solveCountdown(numbers, Number(puzzle[1]));
    return `<think>Combine the numbers.</think><answer>${expression ?? numbers.join(" + ")}</answer>`;
  }
  const arms = /The arms are named (\S+) and (\S+);/.exec(firstUser);
  if (arms) {
    const [arm] = [arms[1]!, arms[2]!].sort();
    return `<think>${arm} sounds like the better bet.</think><answer>${arm}</answer>`;
  }
  if (firstUser.includes("FrozenLake"))
    return "<think>The goal is usually down and to the right.</think><answer>Down || Right</answer>";
  return "I would move towards the goal.";
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      raw += chunk;
    });
    req.on("end", () => resolve(raw));
    req.on("error", reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(body));
}

export async function startFakeOpenAIServer(options: FakeServerOptions = {}, port = 0): Promise<FakeServer> {
  const answer = options.answer ?? scriptedAnswer;
  let inFlight = 0;
  let created = 0;
  const state: Omit<FakeServer, "baseUrl" | "close"> = {
    requests: [],
    maxInFlight: 0,
    reported: { promptTokens: 0, completionTokens: 0 },
  };
  const server = createServer(async (req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      sendJson(res, 404, {
        error: { message: `no route ${req.method} ${req.url}`, type: "invalid_request_error" },
      });
      return;
    }
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    try {
      const request = {
        ...(JSON.parse(await readBody(req)) as ChatRequest),
        authorization: req.headers.authorization,
      };
      state.requests.push(request);
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (options.override?.(request, res)) return;
      const content = answer(request);
      const usage = {
        prompt_tokens: tokenCount(request.messages.map((m) => m.content).join("")),
        completion_tokens: tokenCount(content),
      };
      if (options.reportUsage !== false) {
        state.reported.promptTokens += usage.prompt_tokens;
        state.reported.completionTokens += usage.completion_tokens;
      }
      sendJson(res, 200, {
        id: `chatcmpl-${++created}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        ...(options.reportUsage === false
          ? {}
          : { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }),
      });
    } catch (error) {
      sendJson(res, 400, { error: { message: (error as Error).message, type: "invalid_request_error" } });
    } finally {
      inFlight--;
    }
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return Object.assign(state, {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

if (process.argv[1] === import.meta.filename) {
  const port = Number(process.argv[2] ?? 8011);
  startFakeOpenAIServer({}, port).then(
    (server) => console.log(`Scripted OpenAI-compatible server at ${server.baseUrl} (Ctrl-C stops it)`),
    (error) => {
      console.error(`error: ${(error as Error).message}`);
      process.exit(1);
    },
  );
}
