import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { saveTinyModel } from "@ragen/sft/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMBEDDED_MODEL, resolveSettings, trainingGroups, validationEnvs } from "../src/index.js";
import { modelParameterCount, resolveRunPaths, resolveRunSettings } from "../src/node.js";

const settingsOf = async (overrides: string[]) => (await resolveSettings({ overrides })).settings;

describe("the quest settings", () => {
  it("are RAGEN's Quest: FrozenLake (with coordinates) and Bandit, PPO with GAE, validation at temperature 0.5", async () => {
    expect(await settingsOf([])).toMatchObject({
      model: EMBEDDED_MODEL,
      envs: ["FrozenLakeGridCoord", "Bandit"],
      resume: true,
      validation: { temperature: 0.5 },
      rollout: {
        maxTurns: 5,
        maxActionsPerTurn: 2,
        temperature: 1,
        enableThinking: true,
        formatPenalty: -0.1,
      },
      starpo: { advantageEstimator: "gae", clipRatioLow: 0.2, clipRatioHigh: 0.28 },
      algorithm: "starpo",
      train: { tokenBudget: 0 },
      // A*-PO's settings as the paper's (N = 8, beta1 0.5, beta2 1e-3).
      apo: { samples: 8, beta1: 0.5, beta2: 1e-3, dropAllZero: false },
    });
    await expect(settingsOf(["algorithm=grpo"])).rejects.toThrow(/algorithm/);
    await expect(settingsOf(["train.tokenBudget=-1"])).rejects.toThrow(/tokenBudget/);
  });

  it("validate on the training envs unless told other tags (generalisation tests)", async () => {
    expect(validationEnvs(await settingsOf([]))).toEqual(["FrozenLakeGridCoord", "Bandit"]);
    const settings = await settingsOf(["envs=Bandit", "validation.envs=Bandit,BanditTest,BanditReversed"]);
    expect(settings.envs).toEqual(["Bandit"]);
    expect(validationEnvs(settings)).toEqual(["Bandit", "BanditTest", "BanditReversed"]);
  });

  it("split the training groups evenly, or as train.groupsPerEnv says (RAGEN's n_groups)", async () => {
    expect(trainingGroups(await settingsOf([]))).toEqual([
      { tag: "FrozenLakeGridCoord", nGroups: 4 },
      { tag: "Bandit", nGroups: 4 },
    ]);
    const weighted = await settingsOf(["train.groupsPerEnv=FrozenLakeGridCoord=6,Bandit=2"]);
    expect(trainingGroups(weighted)).toEqual([
      { tag: "FrozenLakeGridCoord", nGroups: 6 },
      { tag: "Bandit", nGroups: 2 },
    ]);
    // With groups given per env, envGroups need not divide evenly.
    await expect(
      settingsOf(["train.envGroups=7", "train.groupsPerEnv=FrozenLakeGridCoord=5,Bandit=2"]),
    ).resolves.toBeDefined();
    await expect(settingsOf(["train.groupsPerEnv=FrozenLakeGridCoord=8"])).rejects.toThrow(
      /no groups for Bandit/,
    );
    await expect(settingsOf(["train.groupsPerEnv=FrozenLakeGridCoord=8,Bandit=0"])).rejects.toThrow(
      /groupsPerEnv/,
    );
  });

  it("name every bad field", async () => {
    const error = await settingsOf([
      "steps=-1",
      "epochs=3",
      "rollout.temperature=hot",
      "kernelTuningSeconds=soon",
      "outDir=",
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/steps: must be >= 0/);
    expect((error as Error).message).toMatch(/epochs: unknown field/);
    expect((error as Error).message).toContain('temperature: must be a number (got "hot")');
    expect((error as Error).message).toContain('kernelTuningSeconds: must be a number or null (got "soon")');
    expect((error as Error).message).toContain("outDir: must not be empty");
  });
});

describe("run settings in Node", () => {
  const root = mkdtempSync(join(tmpdir(), "run-settings-"));
  const tiny = join(root, "ckpt");
  beforeAll(() => saveTinyModel(tiny, { envTags: ["Bandit"] }));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("count a model's parameters from its config.json alone", async () => {
    expect(await modelParameterCount(tiny)).toBeGreaterThan(10_000);
    expect(await modelParameterCount(tiny)).toBeLessThan(100_000);
    expect(await modelParameterCount(EMBEDDED_MODEL)).toBeLessThan(50_000_000);
    mkdirSync(join(root, "empty"));
    await expect(modelParameterCount(join(root, "empty"))).rejects.toThrow(/has no config\.json/);
  });

  it("give a model folder of a small model the small-model rates, by size not by name", async () => {
    const { settings, sources } = await resolveRunSettings({ overrides: ["model=ckpt"], cwd: root });
    expect(settings.model).toBe(tiny);
    expect(settings.starpo).toMatchObject({ actorLr: 2.5e-4, criticLr: 1e-3, klCoeff: 0.03 });
    expect(sources["starpo.klCoeff"]).toBe("profile small-model");
  });

  it("refuse responses that cannot fit the model's positions, before anything runs", async () => {
    // The embedded model places 4096 tokens: 5 turns of 1024 cannot fit with their prompts.
    const error = await resolveRunSettings({ overrides: ["rollout.maxNewTokens=1024"], cwd: root }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]).toMatchObject({
      field: "rollout.maxNewTokens",
      source: "command line",
    });
    await expect(
      resolveRunSettings({ overrides: ["rollout.maxNewTokens=512"], cwd: root }),
    ).resolves.toBeDefined();
  });

  it("take relative paths from where the command was typed; a model that is no folder there is a repo id", async () => {
    const folders = new Set(["/home/me/ckpt"]);
    const exists = (path: string) => folders.has(path);
    const settings = await settingsOf(["model=ckpt", "outDir=runs/a"]);
    expect(resolveRunPaths(settings, "/home/me", exists)).toMatchObject({
      model: "/home/me/ckpt",
      outDir: "/home/me/runs/a",
    });
    const hub = await settingsOf(["model=Qwen/Qwen2.5-0.5B-Instruct"]);
    expect(resolveRunPaths(hub, "/home/me", exists).model).toBe("Qwen/Qwen2.5-0.5B-Instruct");
    expect(resolveRunPaths(await settingsOf([]), "/x", exists).model).toBe(EMBEDDED_MODEL);
  });
});
