import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { resolveArmSettings } from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runWebShopComparison } from "../src/comparison.js";
import { WEBSHOP_APO_EXPERIMENT, WEBSHOP_MODEL_DIR } from "../src/experiment.js";
import { FAILURE_CATEGORIES } from "../src/failures.js";

const root = mkdtempSync(join(tmpdir(), "webshop-apo-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["WebShopCompact"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the WebShop A*-PO vs StarPO experiment", () => {
  it("gives both arms the same env, model, budget, learning rate and episodes per step", async () => {
    const [starpo, apo] = (await resolveArmSettings([], WEBSHOP_APO_EXPERIMENT, root)).map(
      (r) => r.resolved.settings,
    );
    expect(starpo!.algorithm).toBe("starpo");
    expect(apo!.algorithm).toBe("apo");
    for (const settings of [starpo!, apo!]) {
      expect(settings.envs).toEqual(["WebShopCompact"]);
      expect(settings.model).toBe(WEBSHOP_MODEL_DIR);
    }
    expect(apo!.train.tokenBudget).toBe(starpo!.train.tokenBudget);
    expect(apo!.train.tokenBudget).toBeGreaterThan(0);
    const episodes = (s: typeof apo) => s!.train.envGroups * s!.train.groupSize;
    expect(episodes(apo)).toBe(episodes(starpo));
    // A*-PO: one on-policy sample per start state.
    expect(apo!.train.groupSize).toBe(1);
    // A*-PO trains at StarPO's actor learning rate; StarPO-S has no KL term.
    expect(starpo!.starpo).toMatchObject({ actorLr: 2e-4, criticLr: 1e-3, klCoeff: 0 });
    expect(apo!.apo.lr).toBe(starpo!.starpo.actorLr);
  });

  it("puts each arm in a subfolder of the user's outDir and runs only the arms asked for", async () => {
    const runs = await resolveArmSettings(
      ["outDir=mine", "arms=apo", "apo.samples=4"],
      WEBSHOP_APO_EXPERIMENT,
      root,
    );
    expect(runs.map((r) => r.arm)).toEqual(["apo"]);
    expect(runs[0]!.resolved.settings.outDir).toBe(join(root, "mine", "apo"));
    expect(runs[0]!.resolved.settings.apo.samples).toBe(4);
    await expect(resolveArmSettings(["arms=ppo"], WEBSHOP_APO_EXPERIMENT, root)).rejects.toThrow(ConfigError);
    await expect(resolveArmSettings(["arms=ppo"], WEBSHOP_APO_EXPERIMENT, root)).rejects.toThrow(
      /arms: unknown arm "ppo" \(allowed: "starpo", "apo"\)/,
    );
  });

  it("runs both arms to the same token budget and writes results, audit and failure analysis", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const { comparisons } = await runWebShopComparison(
        [
          ...SMOKE_RUN_SETTINGS,
          `model=${modelDir}`,
          "outDir=runs",
          "steps=3",
          "train.tokenBudget=49",
          "arms=starpo,apo",
        ],
        root,
      );
      expect(comparisons).toHaveLength(1);
      const { outcomes, dir, files } = comparisons[0]!.comparison;
      expect(dir).toBe(join(root, "runs"));
      expect(outcomes.map((o) => o.arm)).toEqual(["starpo", "apo"]);
      for (const o of outcomes) {
        expect(o.trainingTokens).toBeGreaterThanOrEqual(49);
        // 4 episodes x 2 turns x at most 6 tokens = 48 tokens per step at most: the budget takes two
        // steps or more, so stage 1 runs more than once.
        expect(o.steps).toBeGreaterThanOrEqual(2);
        expect(o.audits).toHaveLength(2);
      }
      expect(outcomes[0]!.stage1Tokens).toBe(0);
      expect(outcomes[1]!.stage1Tokens).toBeGreaterThan(0);
      // Stage 1 ran before each step; its count is what every estimate the run used cost, each once.
      const estimates = readFileSync(join(dir, "apo", "vstar.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(estimates.length).toBe(2 * outcomes[1]!.steps);
      const estimateCost = estimates.reduce((sum, line) => sum + JSON.parse(line).generatedTokens, 0);
      expect(outcomes[1]!.stage1Tokens).toBe(estimateCost);
      for (const file of files) expect(existsSync(file), file).toBe(true);
      const csv = readFileSync(join(dir, "results.csv"), "utf8").trim().split("\n");
      expect(csv).toHaveLength(3);
      expect(csv[0]).toMatch(/^arm,algorithm,steps,training tokens,stage-1 tokens/);
      const audit = readFileSync(join(dir, "audit.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(audit).toHaveLength(4);
      for (const row of audit) expect(FAILURE_CATEGORIES).toContain(row.category);
      expect(readFileSync(join(dir, "failures.md"), "utf8")).toMatch(
        /\| never searched: .* \| \d+ \| \d+ \| \d+ \| \d+ \|/,
      );
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });
});
