import { fileURLToPath } from "node:url";
import { SETTINGS_FIELDS } from "@ragen/trainer";
import { resolveRunSettings } from "@ragen/trainer/node";
import { describe, expect, it } from "vitest";

const questYaml = fileURLToPath(new URL("../quest.yaml", import.meta.url));
const cwd = "/home/me";
/** The size-dependent settings the file leaves out on purpose. */
const SIZE_DEPENDENT = ["starpo.actorLr", "starpo.criticLr", "starpo.klCoeff", "apo.lr"];

describe("quest.yaml", () => {
  it("resolves to the same settings as no file at all (it spells out the embedded profile)", async () => {
    const fromFile = await resolveRunSettings({ configFile: questYaml, cwd });
    const fromDefaults = await resolveRunSettings({ cwd });
    expect(fromFile.settings).toEqual(fromDefaults.settings);
    // Every field but the size-dependent ones comes from the file.
    for (const [field, source] of Object.entries(fromFile.sources))
      if (!SIZE_DEPENDENT.includes(field)) expect(source, field).toMatch(/^file /);
    expect(Object.keys(fromFile.sources)).toHaveLength(
      Object.values(SETTINGS_FIELDS).reduce((n, f) => n + ("schema" in f ? 1 : Object.keys(f).length), 0),
    );
  });

  it("leaves the learning rates to the model's size", async () => {
    const { settings, sources } = await resolveRunSettings({ configFile: questYaml, cwd });
    expect(settings.starpo.actorLr).toBe(2.5e-4);
    expect(sources["starpo.actorLr"]).toBe("profile small-model");
  });

  it("takes overrides after the file, which win", async () => {
    const { settings } = await resolveRunSettings({
      configFile: questYaml,
      overrides: ["steps=3", "starpo.actorLr=1e-5"],
      cwd,
    });
    expect(settings.steps).toBe(3);
    expect(settings.starpo.actorLr).toBe(1e-5);
    expect(settings.starpo.criticLr).toBe(1e-3);
  });
});
