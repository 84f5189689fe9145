import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMOKE_RUN_SETTINGS, saveTinyModel } from "@ragen/cli";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSokobanComparison } from "../src/comparison.js";
import { armConfigs, SOKOBAN_MODEL_DIR } from "../src/experiment.js";

const root = mkdtempSync(join(tmpdir(), "sokoban-starpo-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["SimpleSokoban"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the Sokoban StarPO-S vs PPO experiment", () => {
  it("runs both arms on SimpleSokoban with the example's model and tiny-model learning rates", () => {
    const runs = armConfigs([]);
    expect(runs.map((r) => [r.arm, r.config.outDir])).toEqual([
      ["starpo-s", join("runs/sokoban-starpo", "starpo-s")],
      ["ppo", join("runs/sokoban-starpo", "ppo")],
    ]);
    for (const { config } of runs) {
      expect(config).toMatchObject({ envs: ["SimpleSokoban"], model: SOKOBAN_MODEL_DIR, steps: 20 });
      expect(config.train).toMatchObject({ envGroups: 8, groupSize: 4 });
      expect(config.validation).toMatchObject({ groupsPerEnv: 32, every: 10 });
      expect(config.rollout).toMatchObject({ maxTurns: 5, maxNewTokens: 80 });
      expect(config.starpo).toMatchObject({ advantageEstimator: "gae", actorLr: 5e-4, criticLr: 1e-3 });
    }
  });

  it("differs between the arms only in RAGEN's StarPO-S settings", () => {
    const [starpoS, ppo] = armConfigs([]).map((r) => r.config);
    expect(starpoS!.starpo).toMatchObject({
      uncertaintyFilter: true,
      rolloutFilterRatio: 0.5,
      clipRatioHigh: 0.28,
      klCoeff: 0,
    });
    expect(ppo!.starpo).toMatchObject({ uncertaintyFilter: false, clipRatioHigh: 0.2, klCoeff: 0.001 });
    const rest = (c: typeof ppo) => ({
      ...c!,
      outDir: "",
      starpo: { ...c!.starpo, uncertaintyFilter: 0, clipRatioHigh: 0, klCoeff: 0, rolloutFilterRatio: 0 },
    });
    expect(rest(starpoS)).toEqual(rest(ppo));
  });

  it("lets the user's settings win over the arm's and the common ones, and pick arms", () => {
    const runs = armConfigs(["arms=ppo", "outDir=x", "steps=50", "starpo.klCoeff=0.01"]);
    expect(runs.map((r) => [r.arm, r.config.outDir, r.config.steps, r.config.starpo.klCoeff])).toEqual([
      ["ppo", join("x", "ppo"), 50, 0.01],
    ]);
    expect(armConfigs(["outDir=x"]).map((r) => r.config.outDir)).toEqual([
      join("x", "starpo-s"),
      join("x", "ppo"),
    ]);
    expect(armConfigs(["arms=starpo-s"]).map((r) => r.arm)).toEqual(["starpo-s"]);
    expect(() => armConfigs(["arms=grpo"])).toThrow(/arms are starpo-s, ppo/);
    expect(() => armConfigs(["steps=-1"])).toThrow(/steps/);
  });

  it("runs both arms and writes the comparison", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      const { arms, dir, files } = await runSokobanComparison(
        [...SMOKE_RUN_SETTINGS, `model=${modelDir}`, "outDir=runs", "steps=1"],
        root,
      );
      expect(dir).toBe(join(root, "runs"));
      expect(arms.map((a) => a.arm)).toEqual(["starpo-s", "ppo"]);
      for (const arm of arms) {
        expect(existsSync(join(dir, arm.arm, "metrics.jsonl"))).toBe(true);
        for (const key of [
          "rollout/in_group_std",
          "actor/entropy",
          "actor/grad_norm",
          "train/SimpleSokoban/success",
          "val-env/SimpleSokoban/success",
        ])
          expect(arm.signals, key).toHaveProperty([key]);
      }
      expect(files.map((f) => f.slice(dir.length + 1))).toEqual([
        "comparison.csv",
        "comparison.md",
        "comparison.html",
      ]);
      for (const file of files) expect(existsSync(file), file).toBe(true);
      const csv = readFileSync(join(dir, "comparison.csv"), "utf8").trim().split("\n");
      expect(csv.map((line) => line.split(",")[0])).toEqual(["arm", "starpo-s", "ppo"]);
      expect(readFileSync(join(dir, "comparison.md"), "utf8")).toMatch(/^\| signal \| starpo-s \| ppo \|/);
      expect(readFileSync(join(dir, "comparison.html"), "utf8")).toContain('data-series="ppo"');
    } finally {
      log.mockRestore();
      err.mockRestore();
      out.mockRestore();
    }
  });
});
