import { ASTARPO_BOUNDS, ASTARPO_DEFAULTS, VSTAR_DEFAULTS } from "@ragen/algos-apo";
import { STARPO_BOUNDS, STARPO_DEFAULTS } from "@ragen/algos-ppo";
import { ConfigError } from "@ragen/envs";
import { ROLLOUT_DEFAULTS } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  checkSettingsFit,
  describeSettings,
  formatResolvedSettings,
  LIBRARY_DEFAULTS,
  resolveSettings,
  SETTINGS_FIELDS,
  SMALL_MODEL_PARAMETERS,
  settingsFields,
} from "../src/index.js";

const file = (values: Record<string, unknown>, lines: Record<string, number> = {}) => ({
  path: "run.yaml",
  values,
  lineOf: (field: string) => lines[field],
});

async function configError(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe("library defaults", () => {
  it("are the algorithms' and the rollout's own defaults, not copies that could drift", () => {
    for (const [key, value] of Object.entries(STARPO_DEFAULTS))
      if (key !== "temperature" && key !== "shuffleSeed")
        expect(LIBRARY_DEFAULTS.starpo[key as keyof typeof LIBRARY_DEFAULTS.starpo], key).toBe(value);
    for (const [key, value] of Object.entries({ ...ASTARPO_DEFAULTS, ...VSTAR_DEFAULTS }))
      if (!["temperature", "shuffleSeed", "vstarRefreshEvery"].includes(key))
        expect(LIBRARY_DEFAULTS.apo[key as keyof typeof LIBRARY_DEFAULTS.apo], key).toBe(value);
    for (const [key, value] of Object.entries(ROLLOUT_DEFAULTS))
      expect(LIBRARY_DEFAULTS.rollout[key as keyof typeof LIBRARY_DEFAULTS.rollout], key).toBe(value);
  });

  it("describe every field once, and --help lists each with the profiles' values", () => {
    const paths = settingsFields().map((f) => f.path);
    expect(new Set(paths).size).toBe(paths.length);
    const help = describeSettings();
    for (const path of paths) expect(help).toMatch(new RegExp(`^  ${path.replace(".", "\\.")} `, "m"));
    expect(help).toMatch(/starpo\.ppoMiniBatchSize\s+32\s+.*\[embedded: 8; ragen: 32; ragen2: 32\]/);
    expect(help).toMatch(/starpo\.actorLr\s+0\.000001\s+.*models under 50M parameters: 0\.00025/);
  });
});

describe("resolveSettings", () => {
  it("starts from the embedded profile for the embedded model, and says which layer set each field", async () => {
    const { settings, sources } = await resolveSettings();
    expect(settings.profile).toBe("embedded");
    expect(sources.profile).toBe("auto: embedded's size unknown");
    expect(settings.model).toBe("embedded");
    expect(settings.steps).toBe(18);
    expect(settings.train).toEqual({ envGroups: 8, groupsPerEnv: null, groupSize: 4, tokenBudget: 0 });
    expect(settings.rollout.maxActionsPerTurn).toBe(2);
    expect(settings.starpo.ppoMiniBatchSize).toBe(8);
    expect(settings.starpo.rolloutFilterRatio).toBe(0.5);
    expect(sources.steps).toBe("profile embedded (auto)");
    expect(sources.seed).toBe("default");
    expect(sources["starpo.clipRatioHigh"]).toBe("default");
    expect(Object.keys(sources)).toEqual(settingsFields().map((f) => f.path));
  });

  it("gives models under 50M parameters the small-model rates; others RAGEN's", async () => {
    const small = await resolveSettings({ parameterCount: () => SMALL_MODEL_PARAMETERS - 1 });
    expect(small.settings.starpo).toMatchObject({ actorLr: 2.5e-4, criticLr: 1e-3, klCoeff: 0.03 });
    expect(small.settings.apo.lr).toBe(5e-4);
    expect(small.sources["starpo.actorLr"]).toBe("profile small-model");
    const large = await resolveSettings({ parameterCount: SMALL_MODEL_PARAMETERS });
    expect(large.settings.starpo).toMatchObject({ actorLr: 1e-6, criticLr: 1e-5, klCoeff: 0 });
    expect(large.sources["starpo.actorLr"]).toBe("profile ragen (auto)");
  });

  it("asks for the size of the model the settings name", async () => {
    const asked: string[] = [];
    await resolveSettings({
      file: file({ model: "some/folder" }),
      parameterCount: (model) => {
        asked.push(model);
        return 1e9;
      },
    });
    expect(asked).toEqual(["some/folder"]);
  });

  it("lets the file win over profiles and the command line over the file", async () => {
    const { settings, sources } = await resolveSettings({
      parameterCount: 1e6,
      file: file({ steps: 30, starpo: { actorLr: 1e-4 } }, { steps: 3, "starpo.actorLr": 9 }),
      overrides: ["steps=40", "envs=Bandit", "train.envGroups=4"],
    });
    expect(settings.steps).toBe(40);
    expect(sources.steps).toBe("command line");
    expect(settings.starpo.actorLr).toBe(1e-4);
    expect(sources["starpo.actorLr"]).toBe("file run.yaml:9");
    expect(settings.starpo.criticLr).toBe(1e-3);
    expect(settings.envs).toEqual(["Bandit"]);
  });

  it("credits an experiment's own settings, under the file", async () => {
    const { settings, sources } = await resolveSettings({
      experiment: [{ source: "arm ppo", overrides: ["starpo.uncertaintyFilter=false"] }],
      file: file({ steps: 2 }),
    });
    expect(settings.starpo.uncertaintyFilter).toBe(false);
    expect(sources["starpo.uncertaintyFilter"]).toBe("arm ppo");
  });

  it("samples one response per start state for A*-PO unless told otherwise", async () => {
    const apo = await resolveSettings({ overrides: ["algorithm=apo"] });
    expect(apo.settings.train.groupSize).toBe(1);
    expect(apo.sources["train.groupSize"]).toBe("profile apo");
    const four = await resolveSettings({ overrides: ["algorithm=apo", "train.groupSize=4"] });
    expect(four.settings.train.groupSize).toBe(4);
  });

  it("takes RAGEN's base config with profile=ragen", async () => {
    const { settings } = await resolveSettings({ overrides: ["profile=ragen"], parameterCount: 494_032_768 });
    expect(settings.model).toBe("Qwen/Qwen2.5-0.5B-Instruct");
    expect(settings.train.groupSize).toBe(16);
    expect(settings.steps).toBe(200);
    expect(settings.rollout).toMatchObject({ maxActionsPerTurn: 5, maxNewTokens: 400 });
    expect(settings.starpo).toMatchObject({
      ppoMiniBatchSize: 32,
      microBatchSize: 4,
      uncertaintyFilter: true,
      rolloutFilterRatio: 0.25,
      actorLr: 1e-6,
      klCoeff: 0,
    });
  });

  it("reads Tag=N maps and lists from the command line", async () => {
    const { settings } = await resolveSettings({
      overrides: ["train.groupsPerEnv=FrozenLakeGridCoord=6,Bandit=2", "validation.envs=Bandit,BanditTest"],
    });
    expect(settings.train.groupsPerEnv).toEqual({ FrozenLakeGridCoord: 6, Bandit: 2 });
    expect(settings.validation.envs).toEqual(["Bandit", "BanditTest"]);
  });

  it("names the file, line and field of a bad value, with the allowed values", async () => {
    const error = await configError(
      resolveSettings({
        file: file({ algorithm: "dpo", train: { envGroups: 0 } }, { algorithm: 4, "train.envGroups": 7 }),
      }),
    );
    expect(error.issues).toContainEqual(
      expect.objectContaining({
        field: "algorithm",
        source: { file: "run.yaml", line: 4 },
        allowed: ["starpo", "apo"],
      }),
    );
    expect(error.issues).toContainEqual(
      expect.objectContaining({ field: "train.envGroups", source: { file: "run.yaml", line: 7 } }),
    );
    expect(error.message).toMatch(/run\.yaml:4: algorithm: must be one of/);
  });

  it("names the command line for a bad override, and lists the fields of a section for an unknown one", async () => {
    const error = await configError(resolveSettings({ overrides: ["starpo.actorLR=1e-5"] }));
    expect(error.issues[0]).toMatchObject({
      field: "starpo.actorLR",
      source: "command line",
      message: "unknown field",
    });
    expect(error.issues[0]!.allowed).toContain("actorLr");
    await configError(resolveSettings({ overrides: ["steps"] }));
    await configError(resolveSettings({ overrides: ["train.groupsPerEnv=Bandit"] }));
  });

  it("refuses an unknown profile, naming the known ones", async () => {
    const error = await configError(resolveSettings({ overrides: ["profile=fast"] }));
    expect(error.issues[0]).toMatchObject({
      field: "profile",
      allowed: ["auto", "embedded", "ragen", "ragen2", "quest"],
    });
  });

  it("checks that the training groups split over the envs", async () => {
    const uneven = await configError(resolveSettings({ overrides: ["train.envGroups=7"] }));
    expect(uneven.message).toMatch(
      /command line: train\.envGroups: 7 must be a multiple of the number of envs \(2\)/,
    );
    const sum = await configError(
      resolveSettings({ overrides: ["train.groupsPerEnv=FrozenLakeGridCoord=6,Bandit=1"] }),
    );
    expect(sum.message).toMatch(/the groups sum to 7, but train\.envGroups is 8/);
    const stray = await configError(
      resolveSettings({ overrides: ["train.groupsPerEnv=Sokoban=4,Bandit=4"] }),
    );
    expect(stray.message).toMatch(/Sokoban is not among envs/);
    // Evaluation has no training groups.
    await expect(
      resolveSettings({ overrides: ["train.envGroups=7"], training: false }),
    ).resolves.toBeDefined();
  });
});

describe("values the algorithms or the machine would refuse later", () => {
  const issueOf = async (overrides: string[]) =>
    (await configError(resolveSettings({ overrides }))).issues[0]!;

  it("are refused with the field, the command line and why, by the bounds the algorithms state", async () => {
    expect(await issueOf(["starpo.rolloutFilterRatio=0"])).toMatchObject({
      field: "starpo.rolloutFilterRatio",
      message: expect.stringMatching(/must be > 0.*leaves nothing to train on/),
      source: "command line",
    });
    expect(await issueOf(["rollout.temperature=0"])).toMatchObject({
      field: "rollout.temperature",
      message: expect.stringMatching(
        /must be > 0.*softmax\(logits \/ temperature\).*validation\.temperature=0/,
      ),
    });
    expect(await issueOf(["apo.beta1=1e-320"])).toMatchObject({
      field: "apo.beta1",
      message: expect.stringMatching(/at least 1e-6.*NaN/),
    });
    // Greedy validation and the plain-mean V* stay allowed.
    await expect(
      resolveSettings({ overrides: ["validation.temperature=0", "apo.beta1=0"] }),
    ).resolves.toBeDefined();
    await expect(resolveSettings({ overrides: ["apo.beta1=1e-6"] })).resolves.toBeDefined();
    // One statement of each bound: the schema's is the algorithm's.
    expect(SETTINGS_FIELDS.starpo.rolloutFilterRatio.schema).toMatchObject(STARPO_BOUNDS.rolloutFilterRatio);
    expect(SETTINGS_FIELDS.rollout.temperature.schema).toMatchObject(STARPO_BOUNDS.temperature);
    expect(SETTINGS_FIELDS.rollout.temperature.schema).toMatchObject(ASTARPO_BOUNDS.temperature);
    expect(SETTINGS_FIELDS.apo.lr.schema).toMatchObject(ASTARPO_BOUNDS.lr);
  });

  it("bound sizes a machine cannot hold", async () => {
    expect(await issueOf(["rollout.maxNewTokens=1000000"])).toMatchObject({
      field: "rollout.maxNewTokens",
      message: expect.stringMatching(/must be <= 32768/),
    });
    expect(await issueOf(["train.envGroups=512", "train.groupSize=256"])).toMatchObject({
      field: "train.groupSize",
      message: expect.stringMatching(/131072 rollouts a step; at most 65536/),
      source: "command line",
    });
  });

  it("checkSettingsFit: the responses of an episode and the prompt fit the model's positions", async () => {
    const resolved = await resolveSettings({ overrides: ["rollout.maxNewTokens=1024"] });
    expect(() => checkSettingsFit(resolved.settings, { maxPositionEmbeddings: 32768 })).not.toThrow();
    let error: unknown;
    try {
      checkSettingsFit(resolved.settings, { maxPositionEmbeddings: 4096 }, resolved.sources);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]).toMatchObject({
      field: "rollout.maxNewTokens",
      message: expect.stringMatching(/5 turns of up to 1024 tokens are 5120 response tokens.*4096/),
      source: "command line",
    });
  });
});

describe("formatResolvedSettings", () => {
  it("prints every field with its source, as a config file that resolves to the same settings", async () => {
    const resolved = await resolveSettings({
      parameterCount: 1e6,
      overrides: ["steps=3", "envs=Bandit,FrozenLakeGridCoord"],
    });
    const text = formatResolvedSettings(resolved);
    expect(text).toMatch(/^steps: 3 # command line$/m);
    expect(text).toMatch(/^ {2}actorLr: 0\.00025 # profile small-model$/m);
    const again = await resolveSettings({ file: { path: "printed.yaml", values: parse(text) } });
    expect(again.settings).toEqual(resolved.settings);
  });
});
