import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl, parseTrajectoriesJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { formatTrainingSummary, type ResolvedSettings, resolveSettings } from "../src/index.js";
import { findCheckpoint, resolveRunSettings, trainInFolder } from "../src/node.js";
import { quiet } from "./helpers/quiet.js";

const root = mkdtempSync(join(tmpdir(), "quest-"));
const modelDir = join(root, "model");
afterAll(() => rmSync(root, { recursive: true, force: true }));

beforeAll(() => saveTinyModel(modelDir, { envTags: ["FrozenLake", "Bandit"] }));

/** The process's memory mappings (Linux), of which the kernel allows vm.max_map_count. */
const memoryMappings = () =>
  existsSync("/proc/self/maps") ? readFileSync("/proc/self/maps", "utf8").split("\n").length : 0;
const runQuest = async (resolved: Promise<ResolvedSettings>) => trainInFolder(await resolved);
const smallRunArgs = (outDir: string, ...extra: string[]) => [
  `model=${modelDir}`,
  `outDir=${outDir}`,
  "envs=FrozenLake,Bandit",
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
];
const smallRun = (outDir: string, ...extra: string[]) =>
  resolveRunSettings({ cwd: root, overrides: smallRunArgs(outDir, ...extra) });

describe("a run in a folder", () => {
  const outDir = join(root, "run");

  it("trains, validates, logs, checkpoints and reports; a second call resumes the run", async () => {
    const mappingsBefore = memoryMappings();
    const first = await quiet(() => runQuest(smallRun(outDir, "steps=1")));
    expect(first.rows.map((r) => r.env)).toEqual(["FrozenLake", "Bandit"]);
    expect(findCheckpoint(outDir)?.state).toMatchObject({ step: 1, trainResets: 1 });
    // A tiny model loaded from a folder trains at the small-model rates and KL term, as the embedded one does.
    const saved = JSON.parse(readFileSync(join(outDir, "config.json"), "utf8"));
    expect(saved.settings.starpo).toMatchObject({ actorLr: 2.5e-4, criticLr: 1e-3, klCoeff: 0.03 });
    expect(saved.sources["starpo.actorLr"]).toBe("profile small-model");
    expect(saved.sources.steps).toBe("command line");

    const second = await quiet(() => runQuest(smallRun(outDir, "steps=2")));
    // Each run destroys the device it acquired: left to the garbage collector, every lavapipe device kept
    // thousands of memory mappings, and a sweep of runs in one process reached the kernel's limit.
    expect(memoryMappings() - mappingsBefore).toBeLessThan(1000);
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
    // The agent's action budget: 2 turns × 2 actions a turn (the Quest default).
    expect(lake.budget).toBe(4);
    expect(bandit.oracle).toBe(1);
    expect(lake.oracle).toBeGreaterThanOrEqual(lake.random);
    expect(formatTrainingSummary(second)).toMatch(/FrozenLake .*%/);
  });

  it("trains with the KL term to the start model unless starpo.klCoeff is 0", async () => {
    const klMetrics = async (name: string, klCoeff: string) => {
      const dir = join(root, name);
      await quiet(() => runQuest(smallRun(dir, "steps=1", `starpo.klCoeff=${klCoeff}`)));
      return parseMetricsJsonl(readFileSync(join(dir, "metrics.jsonl"), "utf8"))[1]!.metrics;
    };
    const withKl = await klMetrics("kl", "0.01");
    expect(withKl).toHaveProperty(["actor/kl_loss"]);
    expect(withKl).toHaveProperty(["timing_s/ref"]);
    const withoutKl = await klMetrics("no-kl", "0");
    expect(withoutKl).not.toHaveProperty(["actor/kl_loss"]);
    expect(withoutKl).not.toHaveProperty(["timing_s/ref"]);
  });

  it("says which settings changed when a run is resumed with others", async () => {
    const said: string[] = [];
    await quiet(async () => {
      vi.mocked(console.log).mockImplementation((line: string) => said.push(line));
      return runQuest(smallRun(outDir, "steps=2", "rollout.maxNewTokens=7"));
    });
    expect(said).toContainEqual(expect.stringMatching(/changed settings: rollout/));
  });

  it("refuses to mix runs: another model in the same folder, or a fresh start over an old run", async () => {
    // The Hub model's size is given, as this machine may not reach the Hub: the refusal comes first.
    const otherModel = resolveSettings({
      overrides: smallRunArgs(outDir, "steps=2", "model=Qwen/Qwen2.5-0.5B-Instruct"),
      parameterCount: 494_032_768,
    });
    await expect(runQuest(otherModel)).rejects.toThrow(/holds a run of model/);
    await expect(runQuest(smallRun(outDir, "steps=2", "resume=false"))).rejects.toThrow(
      /already holds a run/,
    );
  });

  it("stops at the token budget, also when resumed", async () => {
    const budgetDir = join(root, "budget");
    const first = await quiet(() => runQuest(smallRun(budgetDir, "steps=3", "train.tokenBudget=1")));
    expect(first.steps).toBe(1);
    expect(first.generatedTokens).toBeGreaterThan(0);
    const rows = parseMetricsJsonl(readFileSync(join(budgetDir, "metrics.jsonl"), "utf8"));
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    expect(rows[1]!.metrics["perf/generated_tokens_total"]).toBe(first.generatedTokens);
    const again = await quiet(() => runQuest(smallRun(budgetDir, "steps=3", "train.tokenBudget=1")));
    expect(again.steps).toBe(1);
    expect(again.generatedTokens).toBe(first.generatedTokens);
  });

  it("trains with A*-PO: V* of every start state from the frozen start model, cached in the run", async () => {
    const apoDir = join(root, "apo");
    const apoRun = (steps: number) =>
      smallRun(apoDir, `steps=${steps}`, "algorithm=apo", "train.groupSize=1", "apo.samples=2");
    await quiet(() => runQuest(apoRun(1)));
    const cacheLines = () => readFileSync(join(apoDir, "vstar.jsonl"), "utf8").trim().split("\n");
    // 2 env groups (one FrozenLake, one Bandit start state) per reset, each estimated from 2 samples.
    expect(cacheLines()).toHaveLength(2);
    expect(JSON.parse(cacheLines()[0]!).rewards).toHaveLength(2);
    expect(existsSync(join(findCheckpoint(apoDir)!.dir, "critic.safetensors"))).toBe(false);

    await quiet(() => runQuest(apoRun(2)));
    // The resumed run estimated only the new reset's states.
    expect(cacheLines()).toHaveLength(4);
    const rows = parseMetricsJsonl(readFileSync(join(apoDir, "metrics.jsonl"), "utf8"));
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2]);
    for (const row of rows.slice(1)) {
      for (const name of ["actor/apo_loss", "actor/kl", "apo/vstar/mean", "critic/score/mean"])
        expect(row.metrics, name).toHaveProperty([name]);
      expect(row.metrics).not.toHaveProperty(["critic/vf_loss"]);
    }
    expect(rows[1]!.metrics["vstar/sampled_states"]).toBe(2);
    expect(rows[2]!.metrics["vstar/sampled_states"]).toBe(2);
    // Cumulative over the run: the resumed step adds its states' tokens to the first run's.
    expect(rows[2]!.metrics["vstar/generated_tokens"]).toBeGreaterThan(
      rows[1]!.metrics["vstar/generated_tokens"]!,
    );
    const estimateCost = cacheLines().reduce((sum, line) => sum + JSON.parse(line).generatedTokens, 0);
    expect(rows[2]!.metrics["vstar/generated_tokens"]).toBe(estimateCost);

    // A run killed before its first checkpoint starts again from nothing but the cache it kept: it
    // samples no state again and still counts what every estimate it uses cost.
    const restartDir = join(root, "apo-restart");
    mkdirSync(restartDir);
    copyFileSync(join(apoDir, "vstar.jsonl"), join(restartDir, "vstar.jsonl"));
    await quiet(() =>
      runQuest(smallRun(restartDir, "steps=2", "algorithm=apo", "train.groupSize=1", "apo.samples=2")),
    );
    const restarted = parseMetricsJsonl(readFileSync(join(restartDir, "metrics.jsonl"), "utf8"));
    expect(restarted[1]!.metrics["vstar/sampled_states"]).toBe(0);
    expect(restarted[1]!.metrics["vstar/sampled_tokens"]).toBe(0);
    expect(restarted[1]!.metrics["vstar/generated_tokens"]).toBe(estimateCost);
  });

  it("with a token budget, estimates V* one step at a time, so states the run never reaches are not sampled", async () => {
    const budgetDir = join(root, "apo-budget");
    const summary = await quiet(() =>
      runQuest(
        smallRun(
          budgetDir,
          "steps=50",
          "train.tokenBudget=1",
          "algorithm=apo",
          "train.groupSize=1",
          "apo.samples=2",
        ),
      ),
    );
    // The budget ends the run after one step; stage 1 estimated that step's 2 states, not 50 steps' 100.
    expect(summary.steps).toBe(1);
    expect(readFileSync(join(budgetDir, "vstar.jsonl"), "utf8").trim().split("\n")).toHaveLength(2);
    const rows = parseMetricsJsonl(readFileSync(join(budgetDir, "metrics.jsonl"), "utf8"));
    expect(rows[1]!.metrics["vstar/states"]).toBe(2);
    expect(rows[1]!.metrics["timing_s/vstar"]).toBeGreaterThan(0);
  });

  it("names every bad config field", async () => {
    await expect(smallRun(outDir, "train.envGroups=3")).rejects.toThrow(/multiple of the number of envs/);
    await expect(smallRun(outDir, "starpo.advantageEstimator=ppo", "rollout.maxTurns=0")).rejects.toThrow(
      /advantageEstimator[\s\S]*maxTurns|maxTurns[\s\S]*advantageEstimator/,
    );
  });
});
