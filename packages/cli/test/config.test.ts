import { EnvConfigError } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import {
  EMBEDDED_MODEL,
  resolveQuestConfig,
  resolveQuestPaths,
  sizeDependentSettings,
  trainingGroups,
  validationEnvs,
} from "../src/job/config.js";

describe("quest config", () => {
  it("defaults to RAGEN's Quest: FrozenLake (with coordinates) and Bandit, PPO with GAE, validation at temperature 0.5", () => {
    const config = resolveQuestConfig([]);
    expect(config).toMatchObject({
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
      // The KL coefficient depends on the model's size (sizeDependentSettings).
      starpo: { advantageEstimator: "gae", klCoeff: null, clipRatioLow: 0.2, clipRatioHigh: 0.28 },
      // StarPO without a token budget; A*-PO's settings as the paper's (N = 8, beta1 0.5, beta2 1e-3).
      algorithm: "starpo",
      train: { tokenBudget: 0 },
      apo: { samples: 8, beta1: 0.5, beta2: 1e-3, dropAllZero: false, lr: null },
    });
    expect(() => resolveQuestConfig(["algorithm=grpo"])).toThrow(/algorithm/);
    expect(() => resolveQuestConfig(["train.tokenBudget=-1"])).toThrow(/tokenBudget/);
  });

  it("takes dotted overrides and comma lists", () => {
    const config = resolveQuestConfig(["rollout.maxNewTokens=32", "envs=FrozenLake,BanditTest", "steps=3"]);
    expect(config.rollout.maxNewTokens).toBe(32);
    expect(config.rollout.maxTurns).toBe(5);
    expect(config.envs).toEqual(["FrozenLake", "BanditTest"]);
    expect(config.steps).toBe(3);
  });

  it("validates on the training envs unless told other tags (generalisation tests)", () => {
    expect(validationEnvs(resolveQuestConfig([]))).toEqual(["FrozenLakeGridCoord", "Bandit"]);
    const config = resolveQuestConfig(["envs=Bandit", "validation.envs=Bandit,BanditTest,BanditReversed"]);
    expect(config.envs).toEqual(["Bandit"]);
    expect(validationEnvs(config)).toEqual(["Bandit", "BanditTest", "BanditReversed"]);
  });

  it("splits the training groups evenly, or as train.groupsPerEnv says (RAGEN's n_groups)", () => {
    expect(trainingGroups(resolveQuestConfig([]))).toEqual([
      { tag: "FrozenLakeGridCoord", nGroups: 4 },
      { tag: "Bandit", nGroups: 4 },
    ]);
    const weighted = resolveQuestConfig(["train.groupsPerEnv=FrozenLakeGridCoord=6,Bandit=2"]);
    expect(weighted.train.groupsPerEnv).toEqual({ FrozenLakeGridCoord: 6, Bandit: 2 });
    expect(trainingGroups(weighted)).toEqual([
      { tag: "FrozenLakeGridCoord", nGroups: 6 },
      { tag: "Bandit", nGroups: 2 },
    ]);
    // With groups given per env, envGroups need not divide evenly.
    expect(() =>
      resolveQuestConfig(["train.envGroups=7", "train.groupsPerEnv=FrozenLakeGridCoord=5,Bandit=2"]),
    ).not.toThrow();
    expect(() => resolveQuestConfig(["train.groupsPerEnv=FrozenLakeGridCoord=6,Bandit=3"])).toThrow(
      /train\.groupsPerEnv: the groups sum to 9, but train\.envGroups is 8/,
    );
    expect(() => resolveQuestConfig(["train.groupsPerEnv=FrozenLakeGridCoord=8"])).toThrow(
      /no groups for Bandit/,
    );
    expect(() => resolveQuestConfig(["train.groupsPerEnv=FrozenLakeGridCoord=4,Bandit=2,Sokoban=2"])).toThrow(
      /Sokoban is not among envs/,
    );
    expect(() => resolveQuestConfig(["train.groupsPerEnv=FrozenLakeGridCoord=8,Bandit=0"])).toThrow(
      /groupsPerEnv/,
    );
    expect(() => resolveQuestConfig(["train.groupsPerEnv=FrozenLake"])).toThrow(/expected Tag=N pairs/);
  });

  it("uses RAGEN's learning rates and no KL for pretrained-size models, larger rates and a KL term for small ones", () => {
    const qwen = 494_032_768;
    const tiny = 820_000;
    expect(sizeDependentSettings(resolveQuestConfig(["model=Qwen/Qwen2.5-0.5B-Instruct"]), qwen)).toEqual({
      actorLr: 1e-6,
      criticLr: 1e-5,
      // A*-PO's follows the actor's unless set (the paper's 1e-6 for pretrained models).
      apoLr: 1e-6,
      klCoeff: 0,
    });
    expect(sizeDependentSettings(resolveQuestConfig(["starpo.actorLr=3e-5"]), tiny).apoLr).toBe(3e-5);
    expect(
      sizeDependentSettings(resolveQuestConfig(["starpo.actorLr=3e-5", "apo.lr=7e-6"]), tiny).apoLr,
    ).toBe(7e-6);
    expect(sizeDependentSettings(resolveQuestConfig([]), tiny)).toEqual({
      actorLr: 5e-4,
      criticLr: 1e-3,
      apoLr: 5e-4,
      klCoeff: 0.03,
    });
    // By size, not by name: a checkpoint or fine-tune of the embedded model loaded from a folder.
    const checkpoint = resolveQuestConfig(["model=/runs/quest/checkpoint/actor"]);
    expect(sizeDependentSettings(checkpoint, tiny)).toMatchObject({ actorLr: 5e-4, klCoeff: 0.03 });
    expect(sizeDependentSettings(checkpoint, qwen)).toMatchObject({ actorLr: 1e-6, klCoeff: 0 });
    expect(sizeDependentSettings(resolveQuestConfig(["starpo.actorLr=3e-5"]), tiny).actorLr).toBe(3e-5);
    expect(sizeDependentSettings(resolveQuestConfig(["starpo.klCoeff=0"]), tiny).klCoeff).toBe(0);
    expect(sizeDependentSettings(resolveQuestConfig(["starpo.klCoeff=0.1"]), qwen).klCoeff).toBe(0.1);
    expect(() => resolveQuestConfig(["starpo.klCoeff=-1"])).toThrow(/klCoeff/);
  });

  it("takes relative paths from where the command was typed; a model that is no folder there is a repo id", () => {
    const folders = new Set(["/home/me/ckpt"]);
    const exists = (path: string) => folders.has(path);
    const local = resolveQuestPaths(resolveQuestConfig(["model=ckpt", "outDir=runs/a"]), "/home/me", exists);
    expect(local).toMatchObject({ model: "/home/me/ckpt", outDir: "/home/me/runs/a" });
    const hub = resolveQuestPaths(
      resolveQuestConfig(["model=Qwen/Qwen2.5-0.5B-Instruct"]),
      "/home/me",
      exists,
    );
    expect(hub.model).toBe("Qwen/Qwen2.5-0.5B-Instruct");
    expect(resolveQuestPaths(resolveQuestConfig([]), "/x", exists).model).toBe(EMBEDDED_MODEL);
  });

  it("names every bad field", () => {
    const bad = ["steps=-1", "epochs=3", "rollout.temperature=hot"];
    expect(() => resolveQuestConfig(bad)).toThrow(EnvConfigError);
    expect(() => resolveQuestConfig(bad)).toThrow(/steps: must be >= 0/);
    expect(() => resolveQuestConfig(bad)).toThrow(/epochs: unknown field/);
    expect(() => resolveQuestConfig(bad)).toThrow(/temperature: must be number/);
  });
});

describe("group size by algorithm", () => {
  it("samples one response per start state for A*-PO and 4 for StarPO, unless set", () => {
    expect(resolveQuestConfig([]).train.groupSize).toBe(4);
    expect(resolveQuestConfig(["algorithm=apo"]).train.groupSize).toBe(1);
    expect(resolveQuestConfig(["algorithm=apo", "train.groupSize=4"]).train.groupSize).toBe(4);
    expect(resolveQuestConfig(["train.groupSize=2"]).train.groupSize).toBe(2);
    expect(() => resolveQuestConfig(["train.groupSize=0"])).toThrow(/groupSize/);
  });
});
