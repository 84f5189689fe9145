import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { listPresets } from "@ragen/envs";

export interface EvalOptions {
  /** The API root that /chat/completions hangs off. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Env presets to evaluate, in order. */
  envs: string[];
  /** Episodes per env: RAGEN's validation seeds 123, 124, ... */
  seeds: number;
  /** Requests in flight at once. */
  concurrency: number;
  maxTurns: number;
  maxActionsPerTurn: number;
  /** Token budget of each reply (max_tokens). */
  maxTokens: number;
  temperature: number;
  topP?: number;
  /** Sampling seed sent to servers that take one; each request derives its own. */
  seed: number;
  /** Ask for <think>…</think> before <answer> (RAGEN's enable_think). */
  think: boolean;
  timeoutMs: number;
  retries: number;
  /** "o200k_base", "cl100k_base" or a Hugging Face model folder with tokenizer.json. */
  tokenizer: string;
  /** Folder for trajectories.jsonl, summary.md and summary.json. */
  outDir: string;
}

/** A flag or environment variable the evaluation cannot run with. */
export class EvalUsageError extends Error {
  override readonly name = "EvalUsageError";
}

export const DEFAULT_ENVS = ["Bandit", "FrozenLake", "SimpleSokoban", "Countdown"];

export const USAGE = `Evaluate an OpenAI-compatible chat endpoint on RAGEN's environments.

  npm run eval-openai -- --model NAME [options]

  --base-url URL        API root with /chat/completions under it (env OPENAI_BASE_URL; default https://api.openai.com/v1)
  --model NAME          model name the server knows (env OPENAI_MODEL; required)
                        the API key comes from the env var OPENAI_API_KEY (or --api-key; none for local servers)
  --envs A,B            env presets (default ${DEFAULT_ENVS.join(",")}); any of: ${Object.keys(listPresets()).join(", ")}
  --seeds N             episodes per env, on RAGEN's validation seeds 123.. (default 16)
  --concurrency N       requests in flight at once (default 8)
  --max-turns N         turns per episode (default 5)
  --max-actions N       actions per answer (default 5)
  --max-tokens N        max_tokens of each reply (default 512)
  --temperature T       default 0
  --top-p P             not sent unless given
  --seed N              sampling seed, for servers that take one (default 0)
  --no-think            ask for <answer> only, without <think>
  --timeout S           seconds per request (default 120)
  --retries N           further tries after a timeout, network error, 429 or 5xx (default 2)
  --tokenizer T         o200k_base (default), cl100k_base, or a model folder with tokenizer.json,
                        for the token ids kept with each trajectory
  --out DIR             output folder (default runs/eval-openai)
  --help`;

type Env = Readonly<Record<string, string | undefined>>;

function integer(name: string, text: string, min: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    throw new EvalUsageError(`--${name} must be an integer >= ${min}, got "${text}"`);
  return value;
}

function number(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value < min || value > max)
    throw new EvalUsageError(`--${name} must be a number from ${min} to ${max}, got "${text}"`);
  return value;
}

function checkBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new EvalUsageError(`the base URL "${text}" is not a URL (e.g. http://127.0.0.1:8000/v1)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new EvalUsageError(`the base URL "${text}" must be http:// or https://`);
  return text;
}

/**
 * Flags first, then environment variables, then defaults. `cwd` is where the command was typed, for
 * relative --out and --tokenizer paths. Returns undefined when --help was asked for.
 */
export function parseEvalOptions(argv: readonly string[], env: Env, cwd: string): EvalOptions | undefined {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        "base-url": { type: "string" },
        model: { type: "string" },
        "api-key": { type: "string" },
        envs: { type: "string" },
        seeds: { type: "string", default: "16" },
        concurrency: { type: "string", default: "8" },
        "max-turns": { type: "string", default: "5" },
        "max-actions": { type: "string", default: "5" },
        "max-tokens": { type: "string", default: "512" },
        temperature: { type: "string", default: "0" },
        "top-p": { type: "string" },
        seed: { type: "string", default: "0" },
        "no-think": { type: "boolean", default: false },
        timeout: { type: "string", default: "120" },
        retries: { type: "string", default: "2" },
        tokenizer: { type: "string", default: "o200k_base" },
        out: { type: "string", default: "runs/eval-openai" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    throw new EvalUsageError((error as Error).message);
  }
  if (values.help) return undefined;
  const text = (name: string) => values[name] as string | undefined;

  const model = text("model") ?? env.OPENAI_MODEL;
  if (!model) throw new EvalUsageError("no model: pass --model NAME or set OPENAI_MODEL");
  const presets = listPresets();
  const envs = (text("envs") ?? DEFAULT_ENVS.join(","))
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = envs.filter((name) => presets[name] === undefined);
  if (unknown.length > 0)
    throw new EvalUsageError(
      `unknown env preset${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => `"${u}"`).join(", ")}; known: ${Object.keys(presets).join(", ")}`,
    );
  if (envs.length === 0) throw new EvalUsageError("--envs names no preset");
  if (new Set(envs).size !== envs.length) throw new EvalUsageError(`--envs names a preset twice: ${envs}`);

  const tokenizer = text("tokenizer")!;
  const apiKey = text("api-key") ?? env.OPENAI_API_KEY;
  const topP = text("top-p");
  return {
    baseUrl: checkBaseUrl(text("base-url") ?? env.OPENAI_BASE_URL ?? "https://api.openai.com/v1"),
    model,
    ...(apiKey ? { apiKey } : {}),
    envs,
    seeds: integer("seeds", text("seeds")!, 1),
    concurrency: integer("concurrency", text("concurrency")!, 1),
    maxTurns: integer("max-turns", text("max-turns")!, 1),
    maxActionsPerTurn: integer("max-actions", text("max-actions")!, 1),
    maxTokens: integer("max-tokens", text("max-tokens")!, 1),
    temperature: number("temperature", text("temperature")!, 0, 2),
    ...(topP === undefined ? {} : { topP: number("top-p", topP, 0, 1) }),
    seed: integer("seed", text("seed")!, 0),
    think: !values["no-think"],
    timeoutMs: number("timeout", text("timeout")!, 0.001, 86_400) * 1000,
    retries: integer("retries", text("retries")!, 0),
    tokenizer:
      tokenizer === "o200k_base" || tokenizer === "cl100k_base" ? tokenizer : resolve(cwd, tokenizer),
    outDir: resolve(cwd, text("out")!),
  };
}
