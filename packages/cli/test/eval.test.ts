import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl, parseTrajectoriesJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import {
  evalModelSource,
  formatEvalSummary,
  resolveRunSettings,
  runEval,
  trainInFolder,
} from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";
import { quiet } from "./support/quiet.js";

const root = mkdtempSync(join(tmpdir(), "ragen-eval-"));
const modelDir = join(root, "model");
const runDir = join(root, "run");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const settings = [...SMOKE_RUN_SETTINGS, "envs=FrozenLake,Bandit", "validation.groupsPerEnv=3"];

beforeAll(async () => {
  await saveTinyModel(modelDir, { envTags: ["FrozenLake", "Bandit"] });
  // A run of 0 steps: its step-0 validation and a checkpoint of the untrained model.
  await quiet(() =>
    resolveRunSettings({
      overrides: [...settings, `model=${modelDir}`, `outDir=${runDir}`, "steps=0"],
      cwd: root,
    }).then(trainInFolder),
  );
});

describe("ragen eval", () => {
  it("finds the actor of a run folder or its checkpoint, and loads anything else as it is", () => {
    const actor = join(runDir, "checkpoint", "actor");
    expect(evalModelSource(runDir)).toBe(actor);
    expect(evalModelSource(join(runDir, "checkpoint"))).toBe(actor);
    expect(evalModelSource(actor)).toBe(actor);
    expect(evalModelSource(modelDir)).toBe(modelDir);
    expect(evalModelSource("Qwen/Qwen2.5-0.5B-Instruct")).toBe("Qwen/Qwen2.5-0.5B-Instruct");
  });

  it("validates a checkpoint exactly as the job does, beside the baselines, and writes the run files", async () => {
    const outDir = join(root, "eval");
    const { settings: config } = await resolveRunSettings({
      overrides: [...settings, `model=${runDir}`, `outDir=${outDir}`],
      cwd: root,
      training: false,
      sizeModel: false,
    });
    const summary = await quiet(() => runEval(config));
    expect(summary.weights).toBe(join(runDir, "checkpoint", "actor"));
    expect(summary.rows.map((r) => r.env)).toEqual(["FrozenLake", "Bandit"]);
    expect(summary.rows[1]!.oracle).toBe(1);

    // Same model, seeds and sampling as the run's step-0 validation: the same episodes.
    const runVal = parseTrajectoriesJsonl(readFileSync(join(runDir, "trajectories.jsonl"), "utf8"));
    const evalVal = parseTrajectoriesJsonl(readFileSync(join(outDir, "trajectories.jsonl"), "utf8"));
    expect(evalVal).toHaveLength(6);
    expect(evalVal.map((r) => [r.envTag, r.seed, r.totalReward, r.turns.map((t) => t.think)])).toEqual(
      runVal.map((r) => [r.envTag, r.seed, r.totalReward, r.turns.map((t) => t.think)]),
    );
    const runMetrics = parseMetricsJsonl(readFileSync(join(runDir, "metrics.jsonl"), "utf8"))[0]!.metrics;
    const evalMetrics = parseMetricsJsonl(readFileSync(join(outDir, "metrics.jsonl"), "utf8"));
    expect(evalMetrics).toHaveLength(1);
    expect(evalMetrics[0]!.metrics["val-env/FrozenLake/success"]).toBe(
      runMetrics["val-env/FrozenLake/success"],
    );
    expect(summary.rows[0]!.success).toBe(runMetrics["val-env/FrozenLake/success"]);

    expect(readFileSync(summary.report, "utf8")).toContain("<html");
    expect(JSON.parse(readFileSync(join(outDir, "summary.json"), "utf8")).rows).toHaveLength(2);
    expect(existsSync(join(outDir, "config.json"))).toBe(true);
    expect(formatEvalSummary(summary)).toMatch(/Bandit\s+1\s+.*%\s+.*100\.0%/);

    // A second evaluation in the same folder replaces the first rather than appending to it.
    await quiet(() => runEval(config));
    expect(parseTrajectoriesJsonl(readFileSync(join(outDir, "trajectories.jsonl"), "utf8"))).toHaveLength(6);
  });

  it("runs from the command line on the checkpoint's actor folder, on other envs", async () => {
    const outDir = join(root, "eval-cli");
    const actor = join(runDir, "checkpoint", "actor");
    const code = await quiet(() =>
      runRagen([
        "eval",
        actor,
        "envs=Bandit",
        "validation.groupsPerEnv=2",
        "rollout.maxTurns=1",
        `outDir=${outDir}`,
      ]),
    );
    expect(code).toBe(0);
    const summary = JSON.parse(readFileSync(join(outDir, "summary.json"), "utf8"));
    expect(summary.rows.map((r: { env: string }) => r.env)).toEqual(["Bandit"]);
  });

  it("exits with 2 on a bad field and 1 on a model that cannot be loaded", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await quiet(() => runRagen(["eval", modelDir, "validation.groupsPerEnv=0"]))).toBe(2);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/groupsPerEnv/));
      const missing = join(root, "no-model-here");
      expect(await quiet(() => runRagen(["eval", `model=${missing}`, `outDir=${join(root, "x")}`]))).toBe(1);
    } finally {
      errors.mockRestore();
    }
  });

  it("exits with 2 and writes nothing when outDir holds a training run", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const metrics = readFileSync(join(runDir, "metrics.jsonl"), "utf8");
    const trajectories = readFileSync(join(runDir, "trajectories.jsonl"), "utf8");
    try {
      expect(await quiet(() => runRagen(["eval", runDir, `outDir=${runDir}`, ...settings]))).toBe(2);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/outDir[\s\S]*holds a training run/));
    } finally {
      errors.mockRestore();
    }
    expect(readFileSync(join(runDir, "metrics.jsonl"), "utf8")).toBe(metrics);
    expect(readFileSync(join(runDir, "trajectories.jsonl"), "utf8")).toBe(trajectories);
  });

  it("holds its out folder while it runs: a live holder's lock refuses it, and it leaves none behind", async () => {
    const outDir = join(root, "eval-locked");
    mkdirSync(outDir, { recursive: true });
    const lockPath = join(outDir, ".lock");
    writeFileSync(lockPath, JSON.stringify({ pid: process.pid, host: hostname(), since: "now" }));
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await quiet(() => runRagen(["eval", modelDir, `outDir=${outDir}`, ...settings]))).toBe(1);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/in use by another run \(pid \d+/));
    } finally {
      errors.mockRestore();
    }
    expect(existsSync(join(outDir, "metrics.jsonl"))).toBe(false);
    rmSync(lockPath);
    expect(await quiet(() => runRagen(["eval", modelDir, `outDir=${outDir}`, ...settings]))).toBe(0);
    expect(existsSync(join(outDir, "summary.json"))).toBe(true);
    expect(existsSync(lockPath)).toBe(false);
  });
});
