// Evaluates an OpenAI-compatible chat endpoint on RAGEN's env presets with RAGEN's prompt format.
//
//   npm run eval-openai -- --model NAME [--base-url URL] [--envs A,B] [--seeds N] ...   (--help for all)

import { OpenAIChatPolicy, OpenAIPolicyError } from "@ragen/rollout";
import {
  loadOpenAITokenizer,
  QWEN2_5_CHAT_TEMPLATE,
  type Tokenizer,
  TokenizerError,
  TokenizerFileError,
} from "@ragen/tokenizer";
import { loadTokenizer } from "@ragen/tokenizer/node";
import { type EnvEvaluation, evaluatePreset } from "./evaluate.js";
import { type EvalOptions, EvalUsageError, parseEvalOptions, USAGE } from "./options.js";
import {
  alignedSummaryTable,
  type EnvSummary,
  type RunDescription,
  summarizeEnv,
  summaryMarkdown,
  trajectoryRecord,
} from "./summary.js";
import { writeResults } from "./write-results.js";

export interface Console {
  out(line: string): void;
  /** Progress and errors. */
  err(line: string): void;
}

const openAIEncodings = new Map<string, Promise<Tokenizer>>();

/** The trajectories keep token ids; any ChatML tokenizer will do unless the served model's is given. */
export async function loadEvalTokenizer(name: string): Promise<Tokenizer> {
  if (name === "o200k_base" || name === "cl100k_base") {
    // Seconds to build, so built once per process.
    let loading = openAIEncodings.get(name);
    if (loading === undefined) {
      loading = loadOpenAITokenizer(name, { chatTemplate: QWEN2_5_CHAT_TEMPLATE });
      openAIEncodings.set(name, loading);
    }
    return loading;
  }
  const tokenizer = await loadTokenizer(name);
  return tokenizer.hasChatTemplate ? tokenizer : loadTokenizer(name, { chatTemplate: QWEN2_5_CHAT_TEMPLATE });
}

/** What went wrong, and what to check, for a request that failed for good. */
export function explainPolicyError(error: OpenAIPolicyError, options: EvalOptions): string {
  const { baseUrl, model } = options;
  if (error.status === undefined)
    return `${error.message}\nNo reply from ${baseUrl}: is the server running, and is the base URL right (usually ending in /v1)? Set it with --base-url or OPENAI_BASE_URL.`;
  if (error.status === 401 || error.status === 403)
    return `${error.message}\nThe server refused the request: set OPENAI_API_KEY (or --api-key) to a key it accepts.`;
  if (error.status === 404)
    return `${error.message}\nNot found: check the base URL (usually ending in /v1, without /chat/completions) and that the server serves the model "${model}".`;
  if (error.status >= 200 && error.status < 300)
    return `${error.message}\nThe reply is not an OpenAI chat completion: is ${baseUrl} an OpenAI-compatible endpoint?`;
  return error.message;
}

/**
 * The whole command: parse, evaluate env by env, write trajectories.jsonl, summary.md and summary.json,
 * print the table. Returns the exit code: 0 done, 1 the endpoint failed (the envs finished before it
 * are still written), 2 bad flags.
 */
export async function runEvalCli(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
  io: Console,
): Promise<number> {
  let options: EvalOptions | undefined;
  let tokenizer: Tokenizer;
  try {
    options = parseEvalOptions(argv, env, cwd);
    if (options === undefined) {
      io.out(USAGE);
      return 0;
    }
    tokenizer = await loadEvalTokenizer(options.tokenizer);
  } catch (error) {
    const usable =
      error instanceof EvalUsageError ||
      error instanceof TokenizerFileError ||
      error instanceof TokenizerError;
    if (!usable) throw error;
    io.err(`error: ${error.message}`);
    io.err("run with --help for the options");
    return 2;
  }

  const policy = new OpenAIChatPolicy({
    baseUrl: options.baseUrl,
    model: options.model,
    tokenizer,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    timeoutMs: options.timeoutMs,
    maxRetries: options.retries,
    concurrency: options.concurrency,
  });
  const run: RunDescription = {
    model: options.model,
    baseUrl: options.baseUrl,
    settings: options,
    startedAt: new Date().toISOString(),
  };
  io.err(
    `Evaluating ${options.model} at ${options.baseUrl} on ${options.envs.join(", ")}: ` +
      `${options.seeds} episodes each, ${options.concurrency} requests at a time`,
  );

  const evaluations: EnvEvaluation[] = [];
  for (const preset of options.envs) {
    try {
      const evaluation = await evaluatePreset(preset, policy, tokenizer, options, (turn, playing) =>
        io.err(`  ${preset}: turn ${turn + 1}/${options.maxTurns} done, ${playing} episodes still playing`),
      );
      evaluations.push(evaluation);
      io.err(`  ${preset}: ${evaluation.usage.requests} requests in ${evaluation.seconds.toFixed(1)} s`);
    } catch (error) {
      if (!(error instanceof OpenAIPolicyError)) throw error;
      io.err(`error: ${preset}: ${explainPolicyError(error, options)}`);
      run.stoppedBy = { env: preset, message: error.message };
      break;
    }
  }
  if (evaluations.length === 0) return 1;

  const summaries: EnvSummary[] = evaluations.map((evaluation) => summarizeEnv(evaluation, options));
  const paths = writeResults(options.outDir, {
    trajectories: evaluations.flatMap((e) =>
      e.trajectories.map((t) => trajectoryRecord(options.model, t, options.think)),
    ),
    summaryMarkdown: summaryMarkdown(run, summaries),
    summaryJson: { ...run, settings: { ...options, apiKey: undefined }, envs: summaries },
  });
  io.out(alignedSummaryTable(summaries));
  if (summaries.every((s) => s.usage === null)) io.out("(the server reported no token usage)");
  io.out(`\nWrote ${paths.join(", ")}`);
  if (run.stoppedBy) io.err(`Stopped early at ${run.stoppedBy.env}; the envs before it are in the files.`);
  return run.stoppedBy ? 1 : 0;
}

if (process.argv[1] === import.meta.filename) {
  runEvalCli(process.argv.slice(2), process.env, process.env.INIT_CWD ?? process.cwd(), {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
