/**
 * `ragen train seeds=0,1`: one run per seed in outDir/seed-<N> and the summary across them. The sweep is
 * killed with SIGKILL during its second seed and the same command run again: the finished seed is left
 * alone, the interrupted one resumes from its checkpoint, and the summary covers both. Run once more, the
 * finished sweep trains nothing, even with a finished seed's checkpoint deleted.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseMetricsJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "ragen-sweep-"));
const modelDir = join(root, "model");
const outDir = join(root, "sweep");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const quiet = async <T>(fn: () => Promise<T>): Promise<{ result: T; printed: string }> => {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    const result = await fn();
    return { result, printed: log.mock.calls.map((call) => call.join(" ")).join("\n") };
  } finally {
    log.mockRestore();
    stderr.mockRestore();
  }
};

const args = [
  "train",
  ...SMOKE_RUN_SETTINGS,
  "envs=Bandit",
  `model=${modelDir}`,
  "steps=3",
  "validation.every=2",
  "checkpointEvery=1",
  `outDir=${outDir}`,
  "seeds=0,1",
];

const metricsFile = (seed: number) => join(outDir, `seed-${seed}`, "metrics.jsonl");
const lines = (seed: number) => readFileSync(metricsFile(seed), "utf8").trim().split("\n");
const sweep = () => JSON.parse(readFileSync(join(outDir, "sweep.json"), "utf8"));

/** Complete rows logged in a seed's folder (a half-written last line does not count). */
function loggedSteps(seed: number): number {
  if (!existsSync(metricsFile(seed))) return 0;
  return readFileSync(metricsFile(seed), "utf8")
    .split("\n")
    .filter((line) => line.endsWith("}")).length;
}

/** Starts the sweep as a child process and kills it with SIGKILL once `moment` holds. */
async function killWhen(moment: () => boolean): Promise<void> {
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  while (child.exitCode === null && !moment()) await new Promise((r) => setTimeout(r, 5));
  child.kill("SIGKILL");
  const { code, signal } = await exit;
  // A sweep that ended by itself before the moment came would test nothing.
  expect(signal, `the sweep ended on its own (code ${code}): ${stderr}`).toBe("SIGKILL");
}

beforeAll(async () => {
  await saveTinyModel(modelDir, { envTags: ["Bandit"] });
});

describe("ragen train seeds=...", () => {
  it("runs each seed into its own folder, summarises them after each, and a killed sweep resumes", async () => {
    // Seed 1 has logged steps 0-2, so its step-1 checkpoint is saved; step 3 is still to come.
    await killWhen(() => loggedSteps(1) >= 3);
    // The summary was written after seed 0, before seed 1 started.
    expect(sweep().seeds).toEqual([0]);
    const seed0Before = readFileSync(metricsFile(0), "utf8");
    const seed0Modified = statSync(metricsFile(0)).mtimeMs;
    const [, stepOneBefore] = lines(1);

    const { result, printed } = await quiet(() => runRagen(args));
    expect(result).toBe(0);
    // Seed 0 untouched; seed 1 kept its checkpointed rows (a restart would rewrite them) and finished.
    expect(readFileSync(metricsFile(0), "utf8")).toBe(seed0Before);
    expect(statSync(metricsFile(0)).mtimeMs).toBe(seed0Modified);
    expect(lines(1)[1]).toBe(stepOneBefore);
    expect(parseMetricsJsonl(readFileSync(metricsFile(1), "utf8")).map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect(printed).toMatch(/seed 1 \(2 of 2\)/);

    const summary = sweep();
    expect(summary.seeds).toEqual([0, 1]);
    const bandit = summary.envs.find((e: { envTag: string }) => e.envTag === "Bandit");
    for (const seed of [0, 1]) {
      const rows = parseMetricsJsonl(readFileSync(metricsFile(seed), "utf8"));
      const validations = rows.filter((r) => "val-env/Bandit/success" in r.metrics);
      expect(validations.map((r) => r.step)).toEqual([0, 2, 3]);
      const result = bandit.seeds.find((r: { seed: number }) => r.seed === seed);
      expect(result).toMatchObject({
        finished: true,
        endStep: 3,
        start: validations[0]!.metrics["val-env/Bandit/success"],
        end: validations.at(-1)!.metrics["val-env/Bandit/success"],
      });
      const config = JSON.parse(readFileSync(join(outDir, `seed-${seed}`, "config.json"), "utf8"));
      expect(config.settings).toMatchObject({ seed, seeds: null });
    }
    expect(bandit.finished).toBe(2);
    const ends = bandit.seeds.map((r: { end: number }) => r.end);
    expect(bandit.end.mean).toBeCloseTo((ends[0] + ends[1]) / 2, 12);
    const markdown = readFileSync(join(outDir, "sweep.md"), "utf8");
    expect(markdown).toMatch(/### Bandit[\s\S]*\| 0 \|[\s\S]*\| 1 \|[\s\S]*mean ± SE/);
    const report = readFileSync(join(outDir, "report.html"), "utf8");
    expect(report).toContain('id="sweep-Bandit"');
    expect(report).toContain('data-series="seed 0"');
    expect(report).toContain('data-series="seed 1"');

    // A finished sweep run again leaves every seed alone, checkpoints deleted to save disk or not.
    const seed1Before = readFileSync(metricsFile(1), "utf8");
    const summaryBefore = readFileSync(join(outDir, "seed-1", "summary.json"), "utf8");
    rmSync(join(outDir, "seed-0", "checkpoint"), { recursive: true });
    const again = await quiet(() => runRagen(args));
    expect(again.result).toBe(0);
    expect(
      again.printed.match(/finished earlier \(3 steps, \d+ generated tokens\); left as it is/g),
    ).toHaveLength(2);
    expect(readFileSync(metricsFile(0), "utf8")).toBe(seed0Before);
    expect(readFileSync(metricsFile(1), "utf8")).toBe(seed1Before);
    expect(readFileSync(join(outDir, "seed-1", "summary.json"), "utf8")).toBe(summaryBefore);
    expect(sweep()).toEqual(summary);
  }, 300_000);

  it("refuses seed and seeds together with exit code 2", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect((await quiet(() => runRagen([...args, "seed=3"]))).result).toBe(2);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/seeds[\s\S]*keep one of them/));
    } finally {
      errors.mockRestore();
    }
  });
});
