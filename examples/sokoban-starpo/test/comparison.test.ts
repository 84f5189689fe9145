import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveArmConfigs, SMOKE_RUN_SETTINGS, saveTinyModel } from "@ragen/example-quest-frozenlake";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runSokobanComparison } from "../src/comparison.js";
import { SOKOBAN_MODEL_DIR, SOKOBAN_STARPO_EXPERIMENT } from "../src/experiment.js";

const root = mkdtempSync(join(tmpdir(), "sokoban-starpo-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["SimpleSokoban"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the Sokoban StarPO-S vs PPO experiment", () => {
  it("differs between the arms only in RAGEN's StarPO-S settings", () => {
    const [starpoS, ppo] = resolveArmConfigs([], SOKOBAN_STARPO_EXPERIMENT).map((r) => r.config);
    expect(starpoS!.starpo).toMatchObject({ uncertaintyFilter: true, clipRatioHigh: 0.28, klCoeff: 0 });
    expect(ppo!.starpo).toMatchObject({ uncertaintyFilter: false, clipRatioHigh: 0.2, klCoeff: 0.001 });
    const rest = (c: typeof ppo) => ({
      ...c!,
      outDir: "",
      starpo: { ...c!.starpo, uncertaintyFilter: 0, clipRatioHigh: 0, klCoeff: 0 },
    });
    expect(rest(starpoS)).toEqual(rest(ppo));
    expect(starpoS!.envs).toEqual(["SimpleSokoban"]);
    expect(starpoS!.model).toBe(SOKOBAN_MODEL_DIR);
  });

  it("lets the user's settings win and pick arms", () => {
    const runs = resolveArmConfigs(["arms=ppo", "outDir=x", "steps=50"], SOKOBAN_STARPO_EXPERIMENT);
    expect(runs.map((r) => [r.arm, r.config.outDir, r.config.steps])).toEqual([
      ["ppo", join("x", "ppo"), 50],
    ]);
    expect(() => resolveArmConfigs(["arms=grpo"], SOKOBAN_STARPO_EXPERIMENT)).toThrow(
      /arms are starpo-s, ppo/,
    );
  });

  it("runs both arms and writes the comparison", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const { arms, dir, files } = await runSokobanComparison(
        [...SMOKE_RUN_SETTINGS, `model=${modelDir}`, "outDir=runs", "steps=1"],
        root,
      );
      expect(arms.map((a) => a.arm)).toEqual(["starpo-s", "ppo"]);
      for (const arm of arms) {
        expect(existsSync(join(dir, arm.arm, "metrics.jsonl"))).toBe(true);
        for (const key of ["rollout/in_group_std", "actor/entropy", "actor/grad_norm"])
          expect(arm.signals, key).toHaveProperty([key]);
      }
      for (const file of files) expect(existsSync(file), file).toBe(true);
      expect(readFileSync(join(dir, "comparison.md"), "utf8")).toMatch(/^\| signal \| starpo-s \| ppo \|/);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });
});
