import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl, parseTrajectoriesJsonl } from "@ragen/logging";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { findCheckpoint } from "../src/checkpoint.js";
import { resolveQuestConfig } from "../src/config.js";
import { saveTinyModel } from "../src/tiny-model.js";
import { formatQuestSummary, runQuest } from "../src/train.js";

const root = mkdtempSync(join(tmpdir(), "quest-"));
const modelDir = join(root, "model");
afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(() => saveTinyModel(modelDir, { envTags: ["FrozenLake", "Bandit"] }));

const quiet = async <T>(fn: () => Promise<T>): Promise<T> => {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  const errors = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  try {
    return await fn();
  } finally {
    log.mockRestore();
    errors.mockRestore();
    out.mockRestore();
  }
};

const smallRun = (outDir: string, ...extra: string[]) =>
  resolveQuestConfig([
    `model=${modelDir}`,
    `outDir=${outDir}`,
    "train.envGroups=2",
    "train.groupSize=2",
    "validation.groupsPerEnv=3",
    "validation.every=1",
    "rollout.maxTurns=2",
    "rollout.maxNewTokens=6",
    "starpo.microBatchSize=2",
    "starpo.ppoMiniBatchSize=2",
    "checkpointEvery=1",
    ...extra,
  ]);

describe("npm run quest", () => {
  const outDir = join(root, "run");

  it("trains, validates, logs, checkpoints and reports; a second call resumes the run", async () => {
    const first = await quiet(() => runQuest(smallRun(outDir, "steps=1")));
    expect(first.rows.map((r) => r.env)).toEqual(["FrozenLake", "Bandit"]);
    expect(findCheckpoint(outDir)?.state).toMatchObject({ step: 1, trainResets: 1 });

    const second = await quiet(() => runQuest(smallRun(outDir, "steps=2")));
    const rows = parseMetricsJsonl(readFileSync(join(outDir, "metrics.jsonl"), "utf8"));
    // Step 0 is the validation before training; each training step logs RAGEN's names.
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2]);
    for (const name of [
      "train/FrozenLake/success",
      "val-env/Bandit/success",
      "actor/pg_loss",
      "actor/entropy",
      "critic/vf_loss",
      "critic/score/mean",
      "rollout/in_group_std",
      "timing_s/gen",
      "perf/throughput",
      "perf/max_memory",
    ]) {
      expect(rows[2]!.metrics, name).toHaveProperty([name]);
    }
    expect(findCheckpoint(outDir)?.state).toMatchObject({ step: 2, trainResets: 2 });

    const records = parseTrajectoriesJsonl(readFileSync(join(outDir, "trajectories.jsonl"), "utf8"));
    // 2 x 2 training envs per step, 3 validation seeds per env at steps 0, 1 and 2.
    expect(records.filter((r) => r.split === "train").map((r) => r.step)).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
    const val = records.filter((r) => r.split === "val");
    expect(val).toHaveLength(3 * 2 * 3);
    // The same validation seeds at every evaluation.
    expect(new Set(val.map((r) => `${r.envTag}:${r.seed}`)).size).toBe(6);
    const turn = val[0]!.turns[0]!;
    expect(turn.stateSvg).toMatch(/^<svg/);
    expect(turn.stateText.length).toBeGreaterThan(0);

    expect(existsSync(second.report)).toBe(true);
    expect(readFileSync(second.report, "utf8")).toContain("<html");
    const summary = JSON.parse(readFileSync(join(outDir, "summary.json"), "utf8"));
    expect(summary.rows).toHaveLength(2);
    const [lake, bandit] = summary.rows;
    expect(lake.budget).toBe(2);
    expect(bandit.oracle).toBe(1);
    expect(lake.oracle).toBeGreaterThanOrEqual(lake.random);
    expect(formatQuestSummary(second)).toMatch(/FrozenLake .*%/);
  });

  it("says which settings changed when a run is resumed with others", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      await quiet(() => runQuest(smallRun(outDir, "steps=2", "rollout.maxNewTokens=7")));
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/changed settings: rollout/));
    } finally {
      warn.mockRestore();
    }
  });

  it("refuses to mix runs: another model in the same folder, or a fresh start over an old run", async () => {
    await expect(runQuest(smallRun(outDir, "steps=2", "model=Qwen/Qwen2.5-0.5B-Instruct"))).rejects.toThrow(
      /holds a run of model/,
    );
    await expect(runQuest(smallRun(outDir, "steps=2", "resume=false"))).rejects.toThrow(
      /already holds a run/,
    );
  });

  it("names every bad config field", () => {
    expect(() => resolveQuestConfig(["train.envGroups=3"])).toThrow(/multiple of the number of envs/);
    expect(() => resolveQuestConfig(["starpo.advantageEstimator=ppo", "rollout.maxTurns=0"])).toThrow(
      /advantageEstimator[\s\S]*maxTurns|maxTurns[\s\S]*advantageEstimator/,
    );
  });
});
