import { createEnv, oracleAction, Rng, type WebShopEnv } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";
import { describe, expect, it } from "vitest";
import { auditEpisode, countFailures } from "../src/failures.js";

/** A trajectory record of `actions` played on WebShop seed `seed`, one action per turn. */
function episode(seed: number, actions: string[]): TrajectoryRecord {
  return {
    step: 3,
    split: "val",
    envTag: "WebShop",
    seed,
    group: 0,
    turns: actions.map((action) => ({
      stateText: "",
      think: "",
      answer: action,
      actions: [action],
      reward: 0,
      valid: true,
    })),
    totalReward: 0,
    success: false,
  };
}

/** The oracle's actions on `seed`; with skipOptions it buys instead of picking the first option. */
function oracleActions(seed: number, { skipOptions = false } = {}): string[] {
  const env = createEnv("WebShop") as WebShopEnv;
  env.reset(seed);
  const rng = new Rng(seed, "oracle");
  const actions: string[] = [];
  while (!env.done && actions.length < 20) {
    const action = oracleAction(env, rng);
    const isOption = env.page.kind === "item" && !/buy now|b0/i.test(action);
    const played = skipOptions && isOption ? "click[buy now]" : action;
    actions.push(played);
    env.step(played);
  }
  return actions;
}

/** A seed whose goal asks for at least one option. */
function seedWithOptions(): number {
  const env = createEnv("WebShop") as WebShopEnv;
  for (let seed = 0; ; seed++) {
    env.reset(seed);
    if (Object.keys(env.goal!.goalOptions).length > 0) return seed;
  }
}

describe("auditEpisode", () => {
  it("replays the oracle's episode to a purchase of the goal: success", () => {
    const audit = auditEpisode(episode(5, oracleActions(5)));
    expect(audit.category).toBe("success");
    expect(audit.reward).toBe(1);
    expect(audit.purchasedAsin).toBe(audit.goalAsin);
    expect(audit.searches).toHaveLength(1);
    expect(audit.opened).toEqual([audit.goalAsin]);
  });

  it("names the first thing that went wrong", () => {
    expect(auditEpisode(episode(1, [])).category).toBe("never searched");
    expect(auditEpisode(episode(1, ["click[buy now]", "walk[left]"])).category).toBe("never searched");
    expect(auditEpisode(episode(1, ["search[shoes]"])).category).toBe("never opened a product");
    const [search, open] = oracleActions(2);
    expect(auditEpisode(episode(2, [search!, open!])).category).toBe("over budget");

    // Buy the first result that is not the goal.
    const env = createEnv("WebShop") as WebShopEnv;
    env.reset(2);
    const goal = env.goal!.asin.toLowerCase();
    env.step(search!);
    const other = env.availableActions().find((a) => /^click\[b0/.test(a) && !a.includes(goal))!;
    const wrong = auditEpisode(episode(2, [search!, other, "click[buy now]"]));
    expect(wrong.category).toBe("wrong product");
    expect(wrong.purchasedAsin).not.toBe(wrong.goalAsin);

    const seed = seedWithOptions();
    const noOptions = auditEpisode(episode(seed, oracleActions(seed, { skipOptions: true })));
    expect(noOptions.category).toBe("wrong options");
    expect(noOptions.reward).toBeLessThan(1);
  });

  it("counts every category, zero where none", () => {
    const counts = countFailures([auditEpisode(episode(5, oracleActions(5))), auditEpisode(episode(1, []))]);
    expect(counts.success).toBe(1);
    expect(counts["never searched"]).toBe(1);
    expect(counts["wrong product"]).toBe(0);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(2);
  });
});
