import { describe, expect, it } from "vitest";
import { resolveSettings, validationEnvs, validationManager, validationSeeds } from "../src/index.js";

describe("validation seeds", () => {
  it("are the start states validation plays for each env, so the baselines play the same ones", async () => {
    const { settings } = await resolveSettings({ overrides: ["validation.groupsPerEnv=3"] });
    const [first, second] = validationEnvs(settings);
    // What validation really plays: reset the manager in val mode and read each slot's seed.
    const played = new Map<string, number[]>();
    for (const slot of await validationManager(settings).reset("val")) {
      played.set(slot.tag, [...(played.get(slot.tag) ?? []), slot.seed]);
    }
    expect(validationSeeds(settings, first!)).toEqual(played.get(first!));
    expect(validationSeeds(settings, second!)).toEqual(played.get(second!));
    // Groups are numbered across envs: the second env does not replay the first env's seeds.
    expect(validationSeeds(settings, first!)).toEqual([123, 124, 125]);
    expect(validationSeeds(settings, second!)).toEqual([126, 127, 128]);
  });
});
