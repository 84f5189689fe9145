import { describe, expect, it } from "vitest";
import { resolveQuestConfig, validationEnvs } from "../src/job/config.js";
import { validationManager, validationSeeds } from "../src/job/validate.js";

describe("validation seeds", () => {
  it("are the start states validation plays for each env, so the baselines play the same ones", () => {
    const config = resolveQuestConfig(["validation.groupsPerEnv=3"]);
    const [first, second] = validationEnvs(config);
    // What validation really plays: reset the manager in val mode and read each slot's seed.
    const played = new Map<string, number[]>();
    for (const slot of validationManager(config).reset("val")) {
      played.set(slot.tag, [...(played.get(slot.tag) ?? []), slot.seed]);
    }
    expect(validationSeeds(config, first!)).toEqual(played.get(first!));
    expect(validationSeeds(config, second!)).toEqual(played.get(second!));
    // Groups are numbered across envs: the second env does not replay the first env's seeds.
    expect(validationSeeds(config, first!)).toEqual([123, 124, 125]);
    expect(validationSeeds(config, second!)).toEqual([126, 127, 128]);
  });
});
