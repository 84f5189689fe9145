/**
 * Real kills: `ragen train` runs as a child process, is killed with SIGKILL at chosen moments (mid-step,
 * mid-validation, right after a checkpoint), and the same command run again must finish the run with
 * exactly the metrics and trajectories of a run that was never killed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseMetricsJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "ragen-kill-"));
const modelDir = join(root, "model");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const settings = (outDir: string) => [
  "train",
  ...SMOKE_RUN_SETTINGS,
  "envs=Bandit",
  `model=${modelDir}`,
  "steps=4",
  "validation.every=2",
  "checkpointEvery=1",
  `outDir=${outDir}`,
];

function start(outDir: string): ChildProcess {
  return spawn(process.execPath, [bin, ...settings(outDir)], { stdio: ["ignore", "ignore", "pipe"] });
}

function finished(
  child: ChildProcess,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stderr })));
}

/** Rows of metrics.jsonl so far (a half-written last line does not count). */
function loggedSteps(outDir: string): number {
  const path = join(outDir, "metrics.jsonl");
  if (!existsSync(path)) return 0;
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.endsWith("}")).length;
}

/** Kills the run with SIGKILL once `moment` holds (polled), then returns. */
async function killWhen(outDir: string, moment: () => boolean): Promise<void> {
  const child = start(outDir);
  const exit = finished(child);
  while (child.exitCode === null && !moment()) await new Promise((r) => setTimeout(r, 5));
  child.kill("SIGKILL");
  const { signal, code, stderr } = await exit;
  // A run that ended by itself before the moment came would test nothing.
  expect(signal, `the run ended on its own (code ${code}): ${stderr}`).toBe("SIGKILL");
}

async function runToEnd(outDir: string): Promise<void> {
  const { code, stderr } = await finished(start(outDir));
  expect(code, stderr).toBe(0);
}

/** What a run learned, step by step, without the measurements of time and memory. */
function learned(outDir: string): { step: number; metrics: Record<string, number> }[] {
  const rows = parseMetricsJsonl(readFileSync(join(outDir, "metrics.jsonl"), "utf8"));
  const measured = (key: string) =>
    key.startsWith("timing_s/") || ["perf/throughput", "perf/time_per_step", "perf/max_memory"].includes(key);
  return rows.map((row) => ({
    step: row.step,
    metrics: Object.fromEntries(Object.entries(row.metrics).filter(([key]) => !measured(key))),
  }));
}

function trajectories(outDir: string): string[] {
  return readFileSync(join(outDir, "trajectories.jsonl"), "utf8").trim().split("\n");
}

beforeAll(async () => {
  await saveTinyModel(modelDir, { envTags: ["Bandit"] });
  await runToEnd(join(root, "straight"));
}, 120_000);

describe("a training run killed with SIGKILL", () => {
  it("resumes to the straight run's metrics and trajectories, wherever the kill fell", async () => {
    const straight = join(root, "straight");
    const moments: [string, (dir: string) => () => boolean][] = [
      // Before anything was logged: the baselines or the step-0 validation.
      ["at start-up", (dir) => () => existsSync(join(dir, "config.json"))],
      // Step 1 logged; step 2 under way.
      ["mid-step", (dir) => () => loggedSteps(dir) >= 2],
      // The step-2 checkpoint swap or step 3's rollout.
      ["around a checkpoint", (dir) => () => existsSync(join(dir, "checkpoint.partial"))],
    ];
    const killed = join(root, "killed");
    for (const [, moment] of moments) await killWhen(killed, moment(killed));
    await runToEnd(killed);
    expect(learned(killed)).toEqual(learned(straight));
    expect(trajectories(killed).length).toBe(trajectories(straight).length);
    const withoutTimes = (line: string) => line.replace(/"(wall_time|time)":[\d.e+-]+,?/g, "");
    expect(trajectories(killed).map(withoutTimes)).toEqual(trajectories(straight).map(withoutTimes));
  }, 300_000);
});
