import { fileURLToPath } from "node:url";
import { parseJobArgs, resolveJobConfig } from "@ragen/cli";
import { describe, expect, it } from "vitest";

const questYaml = fileURLToPath(new URL("../quest.yaml", import.meta.url));
const cwd = "/home/me";

describe("quest.yaml", () => {
  it("resolves to the same config as no file at all (it spells out the defaults)", () => {
    const fromFile = resolveJobConfig(parseJobArgs([questYaml], { positionalFile: true }), { cwd });
    const fromDefaults = resolveJobConfig(parseJobArgs([]), { cwd });
    expect(fromFile).toEqual(fromDefaults);
  });

  it("takes overrides after the file, which win", () => {
    const config = resolveJobConfig(parseJobArgs([`config=${questYaml}`, "steps=3", "starpo.actorLr=1e-5"]), {
      cwd,
    });
    expect(config.steps).toBe(3);
    expect(config.starpo.actorLr).toBe(1e-5);
    expect(config.starpo.criticLr).toBeNull();
  });
});
