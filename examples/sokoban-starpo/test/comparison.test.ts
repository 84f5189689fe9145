import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSokobanComparison } from "../src/comparison.js";
import { armSettings, SOKOBAN_MODEL_DIR } from "../src/experiment.js";

const root = mkdtempSync(join(tmpdir(), "sokoban-starpo-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["SimpleSokoban"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const settingsOf = async (args: string[]) => (await armSettings(args, root)).map((r) => r.resolved.settings);

describe("the Sokoban StarPO-S vs PPO experiment", () => {
  it("runs both arms on SimpleSokoban with the example's model and tiny-model learning rates", async () => {
    const runs = await armSettings([], root);
    expect(runs.map((r) => [r.arm, r.resolved.settings.outDir])).toEqual([
      ["starpo-s", join(root, "runs/sokoban-starpo", "starpo-s")],
      ["ppo", join(root, "runs/sokoban-starpo", "ppo")],
    ]);
    for (const { resolved } of runs) {
      const { settings } = resolved;
      expect(settings).toMatchObject({ envs: ["SimpleSokoban"], model: SOKOBAN_MODEL_DIR, steps: 20 });
      expect(settings.train).toMatchObject({ envGroups: 8, groupSize: 4 });
      expect(settings.validation).toMatchObject({ groupsPerEnv: 32, every: 10 });
      expect(settings.rollout).toMatchObject({ maxTurns: 5, maxActionsPerTurn: 1, maxNewTokens: 80 });
      expect(settings.starpo).toMatchObject({ advantageEstimator: "gae", actorLr: 5e-4, criticLr: 1e-3 });
      expect(resolved.sources["starpo.actorLr"]).toBe("experiment");
    }
  });

  it("differs between the arms only in RAGEN's StarPO-S settings", async () => {
    const [starpoS, ppo] = await settingsOf([]);
    expect(starpoS!.starpo).toMatchObject({
      uncertaintyFilter: true,
      rolloutFilterRatio: 0.5,
      clipRatioHigh: 0.28,
      klCoeff: 0,
    });
    expect(ppo!.starpo).toMatchObject({ uncertaintyFilter: false, clipRatioHigh: 0.2, klCoeff: 0.001 });
    const rest = (s: typeof ppo) => ({
      ...s!,
      outDir: "",
      starpo: { ...s!.starpo, uncertaintyFilter: 0, clipRatioHigh: 0, klCoeff: 0, rolloutFilterRatio: 0 },
    });
    expect(rest(starpoS)).toEqual(rest(ppo));
  });

  it("lets the user's settings win over the arm's and the common ones, and pick arms", async () => {
    const runs = await armSettings(["arms=ppo", "outDir=x", "steps=50", "starpo.klCoeff=0.01"], root);
    expect(
      runs.map(({ arm, resolved: { settings } }) => [
        arm,
        settings.outDir,
        settings.steps,
        settings.starpo.klCoeff,
      ]),
    ).toEqual([["ppo", join(root, "x", "ppo"), 50, 0.01]]);
    expect((await settingsOf(["outDir=x"])).map((s) => s.outDir)).toEqual([
      join(root, "x", "starpo-s"),
      join(root, "x", "ppo"),
    ]);
    expect((await armSettings(["arms=starpo-s"], root)).map((r) => r.arm)).toEqual(["starpo-s"]);
    await expect(armSettings(["arms=grpo"], root)).rejects.toThrow(ConfigError);
    await expect(armSettings(["arms=grpo"], root)).rejects.toThrow(
      /arms: unknown arm "grpo" \(allowed: "starpo-s", "ppo"\)/,
    );
    await expect(armSettings(["steps=-1"], root)).rejects.toThrow(/steps/);
  });

  it("runs both arms and writes the comparison", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      const { comparisons, sweep } = await runSokobanComparison(
        [...SMOKE_RUN_SETTINGS, `model=${modelDir}`, "outDir=runs", "steps=1"],
        root,
      );
      expect(sweep).toBeUndefined();
      expect(comparisons.map((c) => c.seed)).toEqual([null]);
      const { arms, dir, files } = comparisons[0]!.comparison;
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
