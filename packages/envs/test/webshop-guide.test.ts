import { describe, expect, it } from "vitest";
import {
  createEnv,
  guideAction,
  guidePlan,
  Rng,
  randomAction,
  thoughtFor,
  type WebShopEnv,
  webShopGuideAction,
  webShopProductPhrase,
  webShopWantedValues,
  webShopWords,
} from "../src/index.js";

/** Plays `policy` on WebShopCompact's first `seeds` goals with 5 actions, as the WebShop examples do; success share and mean reward. */
function play(
  seeds: number,
  policy: (env: WebShopEnv, rng: Rng) => string,
  split: "train" | "val" = "train",
) {
  const env = createEnv("WebShopCompact", { split }) as WebShopEnv;
  let successes = 0;
  let reward = 0;
  for (let seed = 0; seed < seeds; seed++) {
    env.reset(seed);
    const rng = new Rng(seed, "test");
    for (let i = 0; i < 5 && !env.done; i++) {
      const result = env.step(policy(env, rng));
      reward += result.reward;
      if (result.info.success) successes++;
    }
  }
  return { success: successes / seeds, reward: reward / seeds };
}

describe("WebShop guide", () => {
  it("reads the product phrase and the wanted option values out of an instruction", () => {
    const instruction =
      "Find me wrinkle free, quick dry henley for men for office wear with color: heather grey, and size: x-large, and price lower than 50.00 dollars";
    expect(webShopProductPhrase(instruction)).toBe("wrinkle free, quick dry henley for men for office wear");
    expect(webShopWantedValues(instruction)).toEqual(["heather grey", "x-large"]);
    // An item phrase "with ..." is part of the product; options start at the first "name: value".
    const noOptions =
      "Find me pillowcase with egyptian cotton for guest bedroom, and price lower than 40.00 dollars";
    expect(webShopProductPhrase(noOptions)).toBe("pillowcase with egyptian cotton for guest bedroom");
    expect(webShopWantedValues(noOptions)).toEqual([]);
    expect(webShopProductPhrase("Find me solid wood sofa with style: farmhouse")).toBe("solid wood sofa");
    expect(webShopWantedValues("Find me solid wood sofa with style: farmhouse")).toEqual(["farmhouse"]);
  });

  it("acts only on what the page shows: its search words and clicks are all on the page", () => {
    const env = createEnv("WebShopCompact") as WebShopEnv;
    for (let seed = 0; seed < 50; seed++) {
      env.reset(seed);
      const instructionWords = new Set(webShopWords(env.goal!.instructionText));
      for (let i = 0; i < 5 && !env.done; i++) {
        const action = webShopGuideAction(env);
        if (action.startsWith("search[")) {
          for (const word of webShopWords(action.slice(7, -1))) expect(instructionWords).toContain(word);
        } else expect(env.availableActions()).toContain(action);
        env.step(action);
      }
      // It always buys within the 5 actions the examples allow.
      expect(env.done).toBe(true);
    }
  });

  it("succeeds far more often than random actions and less than the oracle, on train and validation goals", () => {
    const guide = play(200, (env) => webShopGuideAction(env));
    const random = play(200, (env, rng) => randomAction(env, rng));
    expect(guide.success).toBeGreaterThan(0.3);
    expect(guide.success).toBeLessThan(0.6);
    expect(guide.reward).toBeGreaterThan(0.6);
    expect(random.success).toBeLessThan(0.1);
    expect(play(200, (env) => webShopGuideAction(env), "val").success).toBeGreaterThan(0.3);
  });

  it("is the warm start's guided policy on WebShop, one action a turn", () => {
    const env = createEnv("WebShopCompact") as WebShopEnv;
    env.reset(4);
    expect(guidePlan(env, new Rng(0, "test"), 3)).toEqual([webShopGuideAction(env)]);
  });
});

describe("WebShop thoughts", () => {
  it("explains WebShop actions by what the guide does them for", () => {
    const env = createEnv("WebShop");
    env.reset(3);
    const search = guideAction(env, new Rng(0, "test"));
    expect(search).toMatch(/^search\[/);
    expect(thoughtFor(env, search, true)).toBe("I search for the product the instruction describes.");
    expect(thoughtFor(env, "click[b09i76qer4]", true)).toBe(
      "The first result matches my search best, so I open it.",
    );
    expect(thoughtFor(env, "click[buy now]", true)).toMatch(/so I buy it/);
    expect(thoughtFor(env, "click[x-large]", true)).toBe("The instruction asks for x-large, so I select it.");
    expect(thoughtFor(env, "click[next >]", false)).toBe("I try click[next >].");
  });
});
