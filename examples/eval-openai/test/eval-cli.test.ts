import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FakeServer, startFakeOpenAIServer } from "../scripts/fake-openai-server.js";
import { loadEvalTokenizer, runEvalCli } from "../src/main.js";

let workDir: string;
let server: FakeServer | undefined;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), "ragen-eval-openai-"));
  await loadEvalTokenizer("cl100k_base"); // built once here, so the timings below are the evaluation's
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface CliRun {
  code: number;
  out: string;
  err: string;
  outDir: string;
}

let runs = 0;
async function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const outDir = join(workDir, `run-${++runs}`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await runEvalCli(
    [...args, "--tokenizer", "cl100k_base", "--out", outDir, "--retries", "0"],
    env,
    workDir,
    { out: (line) => out.push(line), err: (line) => err.push(line) },
  );
  return { code, out: out.join("\n"), err: err.join("\n"), outDir };
}

const readJsonLines = (path: string) =>
  readFileSync(path, "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));

/** The table row of one env, as its cells. */
function row(table: string, env: string): string[] {
  const line = table.split("\n").find((l) => l.startsWith(`| ${env} `));
  if (line === undefined) throw new Error(`no row for ${env} in\n${table}`);
  return line
    .split("|")
    .slice(1, -1)
    .map((cell) => cell.trim());
}

describe("eval-openai against a scripted OpenAI-compatible server", () => {
  it("evaluates three envs, reports success, format errors and usage, and writes the files", async () => {
    server = await startFakeOpenAIServer({ delayMs: 50 });
    const run = await cli(
      [
        "--model",
        "scripted-7b",
        "--envs",
        "Bandit,Countdown,SimpleSokoban",
        "--seeds",
        "4",
        "--concurrency",
        "2",
      ],
      { OPENAI_BASE_URL: server.baseUrl, OPENAI_API_KEY: "sk-test-key" },
    );
    expect(run.err).not.toMatch(/error/);
    expect(run.code).toBe(0);

    // The script solves Countdown, pulls Dragon (the high arm), and answers Sokoban without tags.
    expect(row(run.out, "Bandit").slice(0, 7)).toEqual([
      "Bandit",
      "4",
      "100.0% ± 0.0",
      "100.0%",
      expect.any(String),
      "0.0%",
      "0.0%",
    ]);
    expect(row(run.out, "Countdown").slice(0, 7)).toEqual([
      "Countdown",
      "4",
      "100.0% ± 0.0",
      "100.0%",
      "1.000",
      "0.0%",
      "0.0%",
    ]);
    // Five turns of -0.1 format penalty, no action taken.
    expect(row(run.out, "SimpleSokoban").slice(0, 9)).toEqual([
      "SimpleSokoban",
      "4",
      "0.0% ± 0.0",
      "100.0%",
      "-0.500",
      "100.0%",
      "100.0%",
      "5.00",
      "0.00",
    ]);

    // 4 Bandit + 4 Countdown + 4 x 5 Sokoban requests, at most 2 at a time, as configured.
    expect(server.requests).toHaveLength(28);
    expect(server.maxInFlight).toBe(2);
    for (const request of server.requests) {
      expect(request).toMatchObject({ model: "scripted-7b", max_tokens: 512, temperature: 0 });
      expect(request.authorization).toBe("Bearer sk-test-key");
      expect(request.messages[0]).toEqual({ role: "system", content: "You're a helpful assistant." });
    }

    const summary = JSON.parse(readFileSync(join(run.outDir, "summary.json"), "utf8"));
    const usage = summary.envs.map(
      (e: { usage: { promptTokens: number; completionTokens: number } }) => e.usage,
    );
    expect(usage.reduce((sum: number, u: { promptTokens: number }) => sum + u.promptTokens, 0)).toBe(
      server.reported.promptTokens,
    );
    expect(usage.reduce((sum: number, u: { completionTokens: number }) => sum + u.completionTokens, 0)).toBe(
      server.reported.completionTokens,
    );
    expect(row(run.out, "Countdown")[11]).toBe(usage[1].completionTokens.toLocaleString("en-US"));
    expect(summary).toMatchObject({ model: "scripted-7b", baseUrl: server.baseUrl });
    expect(summary.envs.map((e: { seeds: number[] }) => e.seeds)).toEqual([
      [123, 124, 125, 126],
      [123, 124, 125, 126],
      [123, 124, 125, 126],
    ]);

    const trajectories = readJsonLines(join(run.outDir, "trajectories.jsonl"));
    expect(trajectories).toHaveLength(12);
    const countdown = trajectories.find((t) => t.env === "Countdown");
    expect(countdown).toMatchObject({ model: "scripted-7b", success: true, reward: 1, finishReason: "done" });
    expect(countdown.turns[0]).toMatchObject({ formatOk: true, formatPenalized: false });
    expect(countdown.turns[0].observation).toMatch(/^Target: \d+, nums: \[/);
    expect(countdown.turns[0].response).toMatch(
      /^<think>Combine the numbers\.<\/think><answer>.+<\/answer>$/,
    );
    const sokoban = trajectories.filter((t) => t.env === "SimpleSokoban");
    expect(
      sokoban.every(
        (t) => t.turns.length === 5 && t.turns.every((turn: { formatOk: boolean }) => !turn.formatOk),
      ),
    ).toBe(true);

    const markdown = readFileSync(join(run.outDir, "summary.md"), "utf8");
    expect(markdown).toContain("# scripted-7b on RAGEN's environments");
    expect(markdown).toContain("| env | episodes | success | oracle | mean reward | format errors |");
    expect(markdown).toMatch(/\| Countdown \| 4 \| 100\.0% ± 0\.0 \|/);
    // The key went out in the header only, never into a file.
    for (const file of ["summary.json", "summary.md", "trajectories.jsonl"])
      expect(readFileSync(join(run.outDir, file), "utf8")).not.toContain("sk-test-key");
  });

  it("says so when the server reports no usage", async () => {
    server = await startFakeOpenAIServer({ reportUsage: false });
    const run = await cli([
      "--model",
      "m",
      "--base-url",
      server.baseUrl,
      "--envs",
      "Countdown",
      "--seeds",
      "2",
    ]);
    expect(run.code).toBe(0);
    expect(row(run.out, "Countdown").slice(10)).toEqual(["not reported", "not reported"]);
    expect(run.out).toContain("(the server reported no token usage)");
    const summary = JSON.parse(readFileSync(join(run.outDir, "summary.json"), "utf8"));
    expect(summary.envs[0].usage).toBeNull();
  });

  it("an unreachable server: exit 1, the reason and the URL, no files", async () => {
    const closed = await startFakeOpenAIServer();
    await closed.close();
    const run = await cli(["--model", "m", "--base-url", closed.baseUrl, "--envs", "Bandit", "--seeds", "2"]);
    expect(run.code).toBe(1);
    expect(run.err).toContain(`${closed.baseUrl}/chat/completions failed`);
    expect(run.err).toMatch(/ECONNREFUSED/);
    expect(run.err).toContain(`No reply from ${closed.baseUrl}: is the server running`);
    expect(existsSync(run.outDir)).toBe(false);
  });

  it("a reply that is not JSON stops the run; the envs before it are kept", async () => {
    server = await startFakeOpenAIServer({
      override: (request, res) => {
        if (!request.messages[1]?.content.includes("Countdown")) return false;
        res.setHeader("content-type", "text/html");
        res.end("<html>Welcome to nginx!</html>");
        return true;
      },
    });
    const run = await cli([
      "--model",
      "m",
      "--base-url",
      server.baseUrl,
      "--envs",
      "Bandit,Countdown",
      "--seeds",
      "2",
    ]);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(
      /error: Countdown: POST .* returned a body that is not JSON: <html>Welcome to nginx/,
    );
    expect(run.err).toContain(`is ${server.baseUrl} an OpenAI-compatible endpoint?`);
    expect(row(run.out, "Bandit")[2]).toBe("100.0% ± 0.0");
    expect(run.out).not.toContain("| Countdown");
    expect(readJsonLines(join(run.outDir, "trajectories.jsonl")).map((t) => t.env)).toEqual([
      "Bandit",
      "Bandit",
    ]);
    expect(readFileSync(join(run.outDir, "summary.md"), "utf8")).toContain(
      "Stopped early at Countdown: POST",
    );
  });

  it("a refused key: exit 1 with the hint, and no retry", async () => {
    server = await startFakeOpenAIServer({
      override: (_request, res) => {
        res.statusCode = 401;
        res.end('{"error":{"message":"Incorrect API key provided"}}');
        return true;
      },
    });
    const run = await cli(["--model", "m", "--base-url", server.baseUrl, "--envs", "Bandit", "--seeds", "1"]);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/HTTP 401: .*Incorrect API key provided/);
    expect(run.err).toContain("set OPENAI_API_KEY (or --api-key)");
    expect(server.requests).toHaveLength(1);
  });

  it("bad flags: exit 2 with the problem and no request", async () => {
    const run = await cli(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--envs", "Bandit,Sokobn"]);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(/unknown env preset "Sokobn"; known: FrozenLake, /);
    expect(run.err).toContain("--help");
  });
});
