import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  describeProfileChoice,
  PROFILES,
  RAGEN_BASE_VALUES,
  RAGEN_LORA_VALUES,
  RAGEN2_CHANGED_VALUES,
  type RagenValue,
  ragen2Values,
  resolveSettings,
  SETTINGS_FIELDS,
  SMALL_MODEL_PARAMETERS,
  type TrainingSettings,
} from "../src/index.js";

const QWEN_05B_PARAMETERS = 494_032_768;

function valueAt(settings: TrainingSettings, path: string): unknown {
  return path.split(".").reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], settings);
}

describe("profile auto", () => {
  it("gives models under 50M parameters the embedded profile and the others RAGEN's, saying why", async () => {
    const tiny = await resolveSettings({ parameterCount: 800_000 });
    expect(tiny.settings.profile).toBe("embedded");
    expect(tiny.sources.profile).toBe("auto: 0.8M parameters, under 50M");
    expect(tiny.settings.rollout.maxNewTokens).toBe(48);
    expect(tiny.sources["rollout.maxNewTokens"]).toBe("profile embedded (auto)");

    const qwen = await resolveSettings({
      overrides: ["model=Qwen/Qwen2.5-0.5B-Instruct"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expect(qwen.settings.profile).toBe("ragen");
    expect(qwen.sources.profile).toBe("auto: 494.0M parameters, at least 50M");
    expect(qwen.settings.rollout.maxNewTokens).toBe(400);
    expect(qwen.settings.train.groupSize).toBe(16);
    expect(qwen.settings.validation.groupsPerEnv).toBe(256);
    // The model named on the command line stays, though the ragen profile names one too.
    expect(qwen.settings.model).toBe("Qwen/Qwen2.5-0.5B-Instruct");
    expect(qwen.sources.model).toBe("command line");
  });

  it("chooses by the model's name when its size is not known", async () => {
    expect((await resolveSettings()).settings.profile).toBe("embedded");
    const remote = await resolveSettings({ overrides: ["model=some/remote-model"] });
    expect(remote.settings.profile).toBe("ragen");
    expect(remote.sources.profile).toBe("auto: some/remote-model's size unknown");
  });

  it("records the profile it chose, so the saved settings resolve to the same settings", async () => {
    const first = await resolveSettings({
      overrides: ["model=some/folder", "steps=3"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    const again = await resolveSettings({
      file: {
        path: "config.json",
        values: structuredClone(first.settings) as unknown as Record<string, unknown>,
      },
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expect(again.settings).toEqual(first.settings);
  });

  it("is overridden by a named profile, and reads `quest` as the embedded profile", async () => {
    const named = await resolveSettings({
      overrides: ["profile=embedded", "model=some/folder"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expect(named.settings.profile).toBe("embedded");
    expect(named.settings.rollout.maxNewTokens).toBe(48);
    const alias = await resolveSettings({ overrides: ["profile=quest"], parameterCount: 800_000 });
    const embedded = await resolveSettings({ overrides: ["profile=embedded"], parameterCount: 800_000 });
    expect(alias.settings).toEqual(embedded.settings);
  });

  it("lists every profile in the settings schema", () => {
    expect(SETTINGS_FIELDS.profile.schema.enum).toEqual(Object.keys(PROFILES));
  });
});

describe("profiles ragen and ragen2", () => {
  const expectValues = (settings: TrainingSettings, values: readonly RagenValue[]) => {
    for (const { field, value } of values) expect(valueAt(settings, field), field).toEqual(value);
  };

  it("ragen holds every value of RAGEN's base config, each credited to the profile", async () => {
    const { settings, sources } = await resolveSettings({
      overrides: ["profile=ragen"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expectValues(settings, RAGEN_BASE_VALUES);
    for (const { field } of RAGEN_BASE_VALUES) expect(sources[field], field).toBe("profile ragen");
    // Every field the table names exists.
    const fields = new Set(Object.keys(sources));
    for (const { field } of [...RAGEN_BASE_VALUES, ...RAGEN2_CHANGED_VALUES]) expect(fields).toContain(field);
  });

  it("ragen2 is RAGEN's with RAGEN-2's changes", async () => {
    const ragen = await resolveSettings({
      overrides: ["profile=ragen"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    const ragen2 = await resolveSettings({
      overrides: ["profile=ragen2"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expectValues(ragen2.settings, ragen2Values());
    expect(ragen2.settings.rollout.maxActionsPerTurn).toBe(2);
    expect(ragen2.settings.validation.groupsPerEnv).toBe(512);
    for (const { field } of RAGEN2_CHANGED_VALUES)
      expect(valueAt(ragen2.settings, field), field).not.toEqual(valueAt(ragen.settings, field));
  });

  it("a LoRA run gets RAGEN's LoRA learning rates, unless the model is small", async () => {
    const lora = await resolveSettings({
      overrides: ["profile=ragen", "lora.rank=64"],
      parameterCount: QWEN_05B_PARAMETERS,
    });
    expect(lora.settings.starpo).toMatchObject({ actorLr: 1e-5, criticLr: 1e-4 });
    const full = await resolveSettings({ overrides: ["profile=ragen"], parameterCount: QWEN_05B_PARAMETERS });
    expect(full.settings.starpo).toMatchObject({ actorLr: 1e-6, criticLr: 1e-5 });
    const small = await resolveSettings({ overrides: ["lora.rank=8"], parameterCount: 800_000 });
    expect(small.settings.starpo.actorLr).toBe(2.5e-4);
  });

  it("a tiny model under profile=ragen still gets the small-model learning rates, and says so", async () => {
    const resolved = await resolveSettings({
      overrides: ["profile=ragen"],
      parameterCount: SMALL_MODEL_PARAMETERS - 1,
    });
    expect(resolved.settings.starpo.actorLr).toBe(2.5e-4);
    const lines = describeProfileChoice(resolved);
    expect(lines[0]).toMatch(
      /^profile ragen: model=Qwen\/Qwen2\.5-0\.5B-Instruct steps=200 train\.envGroups=8 /,
    );
    expect(lines.some((line) => line.startsWith("profile small-model: starpo.actorLr=0.00025"))).toBe(true);
  });

  it("the profiles guide lists every value with RAGEN's key", () => {
    const guide = readFileSync(
      fileURLToPath(new URL("../../../docs/guide/profiles.md", import.meta.url)),
      "utf8",
    );
    const format = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
    for (const { field, value, ragenKey } of [
      ...RAGEN_BASE_VALUES,
      ...RAGEN2_CHANGED_VALUES,
      ...RAGEN_LORA_VALUES,
    ])
      expect(guide, field).toContain(`| \`${field}\` | \`${format(value)}\` | \`${ragenKey}\` |`);
  });
});
