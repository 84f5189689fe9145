import { resolveQuestConfig, validationEnvs } from "@ragen/cli";
import { listPresets } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { BANDIT_GENERALISATION_DEFAULTS } from "../src/experiment.js";

describe("the Bandit generalisation experiment", () => {
  it("trains on Bandit and validates on the training pair, an unseen pair and the reversed payoffs", () => {
    const config = resolveQuestConfig([...BANDIT_GENERALISATION_DEFAULTS]);
    expect(config.envs).toEqual(["Bandit"]);
    expect(validationEnvs(config)).toEqual(["Bandit", "BanditTest", "BanditReversed"]);
    for (const tag of validationEnvs(config)) expect(listPresets()).toHaveProperty([tag]);
  });

  it("lets the user's settings win over the experiment's", () => {
    const config = resolveQuestConfig([...BANDIT_GENERALISATION_DEFAULTS, "outDir=elsewhere", "steps=3"]);
    expect(config.outDir).toBe("elsewhere");
    expect(config.steps).toBe(3);
  });
});
