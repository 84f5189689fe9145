import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { DEFAULT_ENVS, EvalUsageError, parseEvalOptions } from "../src/options.js";
import { replyFollowsFormat } from "../src/summary.js";

const ROOT = join(import.meta.dirname, "..");

describe("parseEvalOptions", () => {
  it("reads the endpoint from the environment, with flags taking precedence", () => {
    const env = { OPENAI_BASE_URL: "http://127.0.0.1:8000/v1", OPENAI_API_KEY: "k", OPENAI_MODEL: "qwen" };
    expect(parseEvalOptions([], env, "/home/me")).toMatchObject({
      baseUrl: "http://127.0.0.1:8000/v1",
      apiKey: "k",
      model: "qwen",
      envs: DEFAULT_ENVS,
      seeds: 16,
      concurrency: 8,
      maxTurns: 5,
      maxActionsPerTurn: 5,
      maxTokens: 512,
      temperature: 0,
      think: true,
      timeoutMs: 120_000,
      retries: 2,
      tokenizer: "o200k_base",
      outDir: "/home/me/runs/eval-openai",
    });
    const flags = [
      "--base-url",
      "https://example.org/v1",
      "--model",
      "other",
      "--no-think",
      "--top-p",
      "0.9",
    ];
    expect(
      parseEvalOptions([...flags, "--out", "x", "--tokenizer", "models/q"], env, "/home/me"),
    ).toMatchObject({
      baseUrl: "https://example.org/v1",
      model: "other",
      think: false,
      topP: 0.9,
      outDir: "/home/me/x",
      tokenizer: "/home/me/models/q",
    });
    expect(parseEvalOptions(["--model", "m"], {}, "/")).toMatchObject({
      baseUrl: "https://api.openai.com/v1",
    });
    expect(parseEvalOptions(["--model", "m"], {}, "/")).not.toHaveProperty("apiKey");
  });

  it("rejects what it cannot run with, naming the flag", () => {
    const bad: [string[], RegExp][] = [
      [[], /no model: pass --model NAME or set OPENAI_MODEL/],
      [["--model", "m", "--seeds", "0"], /--seeds must be an integer >= 1, got "0"/],
      [["--model", "m", "--concurrency", "2.5"], /--concurrency must be an integer/],
      [["--model", "m", "--temperature", "3"], /--temperature must be a number from 0 to 2/],
      [["--model", "m", "--envs", "FrozenLake,Nope,Bad"], /unknown env presets "Nope", "Bad"; known: /],
      [["--model", "m", "--envs", "Bandit,Bandit"], /names a preset twice/],
      [["--model", "m", "--base-url", "localhost:8000"], /must be http:\/\/ or https:\/\//],
      [["--model", "m", "--base-url", "not a url"], /is not a URL/],
      [["--model", "m", "--sedes", "3"], /--sedes/],
    ];
    for (const [argv, message] of bad) {
      expect(() => parseEvalOptions(argv, {}, "/"), argv.join(" ")).toThrow(EvalUsageError);
      expect(() => parseEvalOptions(argv, {}, "/"), argv.join(" ")).toThrow(message);
    }
    expect(parseEvalOptions(["--help"], {}, "/")).toBeUndefined();
  });

  it("tells a reply in the tag layout from one that is not", () => {
    expect(replyFollowsFormat("<think>x</think> <answer>Up</answer>", true)).toBe(true);
    expect(replyFollowsFormat("<answer>Up</answer>", true)).toBe(false);
    expect(replyFollowsFormat("<answer>Up</answer>", false)).toBe(true);
    expect(replyFollowsFormat("Up", false)).toBe(false);
  });

  it("the command exits 2 on a bad flag", async () => {
    const error = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "--seeds", "x"],
      {
        cwd: ROOT,
        env: { ...process.env, OPENAI_MODEL: "m" },
      },
    ).catch((e) => e);
    expect(error.code).toBe(2);
    expect(error.stderr).toContain('error: --seeds must be an integer >= 1, got "x"');
  });
});
