import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { saveTinyModel } from "@ragen/sft/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SMOKE_RUN_SETTINGS } from "../src/index.js";
import {
  ARM_SWEEP_FILES,
  type ArmResult,
  armSweepReportFile,
  resolveArmSettings,
  runArmExperiment,
  runArms,
} from "../src/node.js";
import { quiet } from "./helpers/quiet.js";

const root = mkdtempSync(join(tmpdir(), "arm-sweep-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["Bandit"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Two arms that differ in one setting, as the examples' experiments do.
const experiment = {
  common: ["envs=Bandit", `model=${modelDir}`, ...SMOKE_RUN_SETTINGS, "steps=1"],
  arms: { wide: ["starpo.clipRatioHigh=0.28"], narrow: ["starpo.clipRatioHigh=0.2", "seed=7"] },
  outDir: "runs/exp",
};

describe("an arm experiment over seeds", () => {
  it("runs every arm for every seed, compares each seed, and summarises each arm across seeds", async () => {
    const runs = await resolveArmSettings(["seeds=0,1"], experiment, root);
    // The command line's seeds win over an arm's own seed.
    expect(runs.map((r) => r.resolved.settings.seeds)).toEqual([
      [0, 1],
      [0, 1],
    ]);
    const compared: { dir: string; arms: string[]; seeds: number[] }[] = [];
    const compare = (results: ArmResult[], dir: string) => {
      compared.push({ dir, arms: results.map((r) => r.arm), seeds: results.map((r) => r.settings.seed) });
      return results.length;
    };
    const { comparisons, sweep } = await quiet(() => runArmExperiment(runs, "test experiment", compare));

    const exp = join(root, "runs/exp");
    expect(compared).toEqual([
      { dir: join(exp, "seed-0"), arms: ["wide", "narrow"], seeds: [0, 0] },
      { dir: join(exp, "seed-1"), arms: ["wide", "narrow"], seeds: [1, 1] },
    ]);
    expect(comparisons.map((c) => [c.seed, c.comparison])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    for (const seed of [0, 1])
      for (const arm of ["wide", "narrow"])
        expect(existsSync(join(exp, `seed-${seed}`, arm, "summary.json")), `${seed}/${arm}`).toBe(true);

    expect(sweep!.seeds).toEqual([0, 1]);
    expect(sweep!.arms.map((a) => a.arm)).toEqual(["wide", "narrow"]);
    for (const { summary } of sweep!.arms) {
      expect(summary.seeds).toEqual([0, 1]);
      const bandit = summary.envs.find((e) => e.envTag === "Bandit")!;
      expect(bandit.finished).toBe(2);
      expect(Number.isFinite(bandit.start.mean)).toBe(true);
      expect(Number.isFinite(bandit.end.standardError)).toBe(true);
    }
    const saved = JSON.parse(readFileSync(join(exp, ARM_SWEEP_FILES.summary), "utf8"));
    expect(saved).toEqual(JSON.parse(JSON.stringify(sweep)));
    const table = readFileSync(join(exp, ARM_SWEEP_FILES.table), "utf8");
    expect(table).toMatch(/^# Seed sweep of the arms/);
    expect(table).toMatch(
      /\| wide \| Bandit \| [\d.]+% ± [\d.]+% \| [\d.]+% ± [\d.]+% \| \d of 2 \| \d of 2 \|/,
    );
    expect(table).toContain("## narrow");
    for (const arm of ["wide", "narrow"])
      expect(readFileSync(join(exp, armSweepReportFile(arm)), "utf8")).toContain('data-series="seed 1"');

    // A second call finds every seed finished and runs nothing again, even with the finished runs'
    // checkpoints deleted to save disk: their summaries say they are complete.
    const before = readFileSync(join(exp, "seed-1", "wide", "metrics.jsonl"), "utf8");
    const summaryBefore = readFileSync(join(exp, "seed-1", "wide", "summary.json"), "utf8");
    for (const seed of [0, 1])
      for (const arm of ["wide", "narrow"])
        rmSync(join(exp, `seed-${seed}`, arm, "checkpoint"), { recursive: true });
    const again = await quiet(() => runArmExperiment(runs, "test experiment", compare));
    expect(readFileSync(join(exp, "seed-1", "wide", "metrics.jsonl"), "utf8")).toBe(before);
    expect(readFileSync(join(exp, "seed-1", "wide", "summary.json"), "utf8")).toBe(summaryBefore);
    expect(again.sweep).toEqual(sweep);

    // Asked for one more step, the run is not complete: it trains again (here from the start, as its
    // checkpoint is gone and its rows all come before the first one due).
    const longer = await resolveArmSettings(["seeds=0", "steps=2", "arms=wide"], experiment, root);
    await quiet(() => runArmExperiment(longer, "test experiment", compare));
    const rows = readFileSync(join(exp, "seed-0", "wide", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(rows.map((row) => JSON.parse(row).step)).toEqual([0, 1, 2]);
  });

  it("runs each arm once without seeds, and runArms refuses a sweep it cannot run", async () => {
    const runs = await resolveArmSettings(["outDir=runs/single"], experiment, root);
    const { comparisons, sweep } = await quiet(() =>
      runArmExperiment(runs, "test experiment", (results, dir) => ({ dir, n: results.length })),
    );
    expect(sweep).toBeUndefined();
    expect(comparisons).toEqual([
      { seed: null, dir: join(root, "runs/single"), comparison: { dir: join(root, "runs/single"), n: 2 } },
    ]);
    const swept = await resolveArmSettings(["seeds=0,1"], experiment, root);
    await expect(runArms(swept, "x")).rejects.toThrow(/seeds=0,1; runArmExperiment sweeps them/);
  });
});
