import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, listPresets } from "@ragen/envs";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS, validationEnvs } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { BANDIT_GENERALISATION_SOURCE, banditGeneralisationSettings } from "../src/experiment.js";
import { runBanditGeneralisation } from "../src/main.js";

const root = mkdtempSync(join(tmpdir(), "bandit-generalisation-"));
const modelDir = join(root, "model");
beforeAll(() => saveTinyModel(modelDir, { envTags: ["Bandit", "BanditTest", "BanditReversed"] }));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const settingsOf = async (overrides: string[], configFile?: string) =>
  banditGeneralisationSettings({ configFile, overrides }, root);

describe("the Bandit generalisation experiment", () => {
  it("trains on Bandit and validates on the training pair, an unseen pair and the reversed payoffs", async () => {
    const { settings, sources } = await settingsOf([]);
    expect(settings.envs).toEqual(["Bandit"]);
    expect(validationEnvs(settings)).toEqual(["Bandit", "BanditTest", "BanditReversed"]);
    for (const tag of validationEnvs(settings)) expect(listPresets()).toHaveProperty([tag]);
    expect(settings.outDir).toBe(join(root, "runs/bandit-generalisation"));
    expect(sources.envs).toBe(BANDIT_GENERALISATION_SOURCE);
  });

  it("trains the embedded model at actor lr 2e-4, with the small-model critic lr and KL term", async () => {
    const { settings, sources, parameterCount } = await settingsOf([]);
    expect(settings.model).toBe("embedded");
    expect(parameterCount).toBeLessThan(50_000_000);
    expect(settings.starpo).toMatchObject({ actorLr: 2e-4, criticLr: 1e-3, klCoeff: 0.03 });
    expect(sources["starpo.actorLr"]).toBe(BANDIT_GENERALISATION_SOURCE);
  });

  it("lets the user's config file and settings win over the experiment's", async () => {
    const file = join(root, "bandit.yaml");
    writeFileSync(file, "steps: 5\nstarpo:\n  actorLr: 1.0e-4\n");
    const { settings, sources } = await settingsOf(["outDir=elsewhere", "steps=3"], "bandit.yaml");
    expect(settings.outDir).toBe(join(root, "elsewhere"));
    expect(settings.steps).toBe(3);
    expect(settings.starpo.actorLr).toBe(1e-4);
    expect(sources.steps).toBe("command line");
    expect(settings.envs).toEqual(["Bandit"]);
  });

  it("prints its help and its settings without running, and rejects a bad setting", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      await expect(runBanditGeneralisation(["--help"], root)).resolves.toBeUndefined();
      expect(String(log.mock.calls[0]?.[0])).toMatch(/^usage: bandit generalisation \[config=<file.yaml>\]/);
      await expect(runBanditGeneralisation(["steps=2", "--print-config"], root)).resolves.toBeUndefined();
      const printed = out.mock.calls.map(([text]) => String(text)).join("");
      expect(printed).toContain("steps: 2 # command line");
      expect(printed).toContain(`actorLr: 0.0002 # ${BANDIT_GENERALISATION_SOURCE}`);
    } finally {
      log.mockRestore();
      out.mockRestore();
    }
    await expect(runBanditGeneralisation(["steps=-1"], root)).rejects.toThrow(ConfigError);
    await expect(runBanditGeneralisation(["steps"], root)).rejects.toThrow(ConfigError);
  });

  it("runs StarPO on Bandit and prints the validation on the three pairs", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      const summary = await runBanditGeneralisation(
        [...SMOKE_RUN_SETTINGS, `model=${modelDir}`, "outDir=runs/smoke", "steps=1"],
        root,
      );
      expect(summary?.steps).toBe(1);
      const printed = log.mock.calls.map(([text]) => String(text)).join("\n");
      expect(printed).toContain(`RAGEN.ts Bandit generalisation — Bandit with StarPO on ${modelDir}`);
      for (const tag of ["Bandit", "BanditTest", "BanditReversed"]) expect(printed).toContain(tag);
      const saved = JSON.parse(readFileSync(join(root, "runs/smoke/config.json"), "utf8"));
      expect(saved.settings.validation.envs).toEqual(["Bandit", "BanditTest", "BanditReversed"]);
      expect(saved.sources["validation.envs"]).toBe(BANDIT_GENERALISATION_SOURCE);
      expect(existsSync(summary!.report)).toBe(true);
    } finally {
      log.mockRestore();
      err.mockRestore();
      out.mockRestore();
    }
  });
});
