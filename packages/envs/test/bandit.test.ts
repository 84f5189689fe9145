import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ACTION_SEPARATOR,
  BANDIT_ARM_NAME_PAIRS,
  BanditEnv,
  banditExpectedRewards,
  banditOracle,
  createEnv,
  EnvConfigError,
  evaluatePolicy,
  listPresets,
  oracleAction,
  Rng,
  svgProblems,
} from "../src/index.js";

function make(nameOrPreset = "bandit", config: object = {}): BanditEnv {
  return createEnv<BanditEnv>(nameOrPreset, config);
}

function configError(fn: () => unknown): EnvConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(EnvConfigError);
    return error as EnvConfigError;
  }
  throw new Error("expected an EnvConfigError");
}

describe("Bandit config", () => {
  it("fills RAGEN's defaults", () => {
    expect(make().config).toEqual({
      loArmName: "Phoenix",
      hiArmName: "Dragon",
      loArmReward: 0.1,
      hiArmRewardHigh: 1,
      hiArmRewardLow: 0,
      hiArmProbability: 0.25,
    });
    expect(new BanditEnv().config).toEqual(make().config);
  });

  it("rejects equal arm names, ignoring case, naming both fields", () => {
    for (const [lo, hi] of [
      ["Dragon", "Dragon"],
      ["dragon", "DRAGON"],
    ]) {
      const error = configError(() => make("bandit", { loArmName: lo, hiArmName: hi }));
      expect(error.issues[0]!.field).toBe("hiArmName");
      expect(error.message).toContain("loArmName");
      expect(error.message).toContain("hiArmName");
      expect(() => new BanditEnv({ loArmName: lo, hiArmName: hi })).toThrow(EnvConfigError);
    }
    // Through a preset, overriding one name to clash with the other.
    expect(() => make("Bandit", { hiArmName: "phoenix" })).toThrow(EnvConfigError);
  });

  it("rejects an arm name holding the action separator, naming the field", () => {
    const lo = configError(() => make("bandit", { loArmName: "Phoenix||Dragon" }));
    expect(lo.issues.map((i) => i.field)).toEqual(["loArmName"]);
    expect(lo.message).toContain("loArmName: must not contain the action separator");
    expect(lo.message).toContain(JSON.stringify(ACTION_SEPARATOR));
    const hi = configError(() => new BanditEnv({ hiArmName: "a || b" }));
    expect(hi.issues.map((i) => i.field)).toEqual(["hiArmName"]);
    const both = configError(() => make("Bandit", { loArmName: "x||y", hiArmName: "||" }));
    expect(both.issues.map((i) => i.field)).toEqual(["loArmName", "hiArmName"]);
    // A single bar does not split an answer.
    expect(make("bandit", { hiArmName: "Dragon|Wyrm" }).config.hiArmName).toBe("Dragon|Wyrm");
  });

  it("rejects malformed fields", () => {
    expect(configError(() => make("bandit", { hiArmProbability: 1.5 })).issues[0]!.field).toBe(
      "hiArmProbability",
    );
    expect(configError(() => make("bandit", { loArmName: "" })).issues[0]!.field).toBe("loArmName");
    expect(configError(() => make("bandit", { hiArmName: " Dragon" })).issues[0]!.field).toBe("hiArmName");
    expect(configError(() => make("bandit", { loArmReward: "0.1" })).issues[0]!.field).toBe("loArmReward");
    expect(configError(() => make("bandit", { lo_arm_name: "x" })).issues[0]!.field).toBe("lo_arm_name");
  });

  it("has the Bandit, BanditTest and BanditReversed presets, one action each", () => {
    const presets = listPresets();
    for (const [tag, pair] of Object.entries(BANDIT_ARM_NAME_PAIRS)) {
      expect(presets[tag]).toMatchObject({ env: "bandit", maxActionsPerTraj: 1 });
      expect(make(tag).config).toMatchObject({ loArmName: pair.lo, hiArmName: pair.hi, loArmReward: 0.1 });
    }
    expect(BANDIT_ARM_NAME_PAIRS.BanditTest).toEqual({ lo: "Trader", hi: "Librarian" });
    expect(BANDIT_ARM_NAME_PAIRS.BanditReversed).toEqual({ lo: "Dragon", hi: "Phoenix" });
  });
});

describe("Bandit play", () => {
  it("shows both arms in a 50/50 shuffled order and asks for one of them", () => {
    const env = make();
    let loFirst = 0;
    const n = 4000;
    for (let seed = 0; seed < n; seed++) {
      const observation = env.reset(seed);
      const [first, second] = env.armOrder;
      expect([first, second].sort()).toEqual(["Dragon", "Phoenix"]);
      expect(env.actions).toEqual([first, second]);
      expect(env.availableActions()).toEqual([first, second]);
      expect(observation).toContain(`named ${first} and ${second}`);
      expect(observation).toContain(`<answer> ${first} </answer> or <answer> ${second} </answer>`);
      expect(env.instructions).toContain(`${first} and ${second}`);
      if (first === "Phoenix") loFirst++;
    }
    // One standard error is 0.0079.
    expect(Math.abs(loFirst / n - 0.5)).toBeLessThan(0.04);
    expect(env.reset(7)).toMatch(/symboli[sz]e/);
  });

  it("pays the high arm 1.0 with probability 0.25 (else 0) and the low arm 0.1", () => {
    const env = make();
    const n = 8000;
    let high = 0;
    for (let seed = 0; seed < n; seed++) {
      env.reset(seed);
      const result = env.step("Dragon");
      expect([0, 1]).toContain(result.reward);
      expect(result.observation).toBe(`Dragon: ${result.reward === 1 ? "1.0" : "0.0"} points`);
      expect(result.done).toBe(true);
      expect(result.info).toMatchObject({
        success: true,
        actionIsValid: true,
        actionIsEffective: true,
        isHighArm: true,
      });
      if (result.reward === 1) high++;
    }
    // One standard error is 0.0048.
    expect(Math.abs(high / n - 0.25)).toBeLessThan(0.025);

    for (let seed = 0; seed < 500; seed++) {
      env.reset(seed);
      const result = env.step("Phoenix");
      expect(result).toMatchObject({ reward: 0.1, done: true, observation: "Phoenix: 0.1 points" });
      expect(result.info).toMatchObject({ success: false, arm: "Phoenix", isHighArm: false });
      expect(result.info.armPosition).toBe(env.armOrder[0] === "Phoenix" ? 1 : 2);
    }
  });

  it("uses the configured payouts", () => {
    const env = make("bandit", {
      loArmReward: 0.15,
      hiArmRewardHigh: 2,
      hiArmRewardLow: -1,
      hiArmProbability: 1,
    });
    env.reset(0);
    expect(env.step("Phoenix")).toMatchObject({ reward: 0.15, observation: "Phoenix: 0.15 points" });
    env.reset(0);
    expect(env.step("Dragon")).toMatchObject({ reward: 2, observation: "Dragon: 2.0 points" });
    const never = make("bandit", { hiArmProbability: 0, hiArmRewardLow: -1 });
    never.reset(3);
    expect(never.step("Dragon")).toMatchObject({ reward: -1, observation: "Dragon: -1.0 points" });
  });

  it("pays the other way round in the reversed variant", () => {
    const env = make("BanditReversed");
    let high = 0;
    for (let seed = 0; seed < 2000; seed++) {
      env.reset(seed);
      const phoenix = env.step("Phoenix");
      expect(phoenix.info.success).toBe(true);
      if (phoenix.reward === 1) high++;
      env.reset(seed);
      expect(env.step("Dragon")).toMatchObject({ reward: 0.1, info: { success: false } });
    }
    expect(Math.abs(high / 2000 - 0.25)).toBeLessThan(0.05);
  });

  it("treats anything but an arm name as an invalid no-op, and matches names ignoring case", () => {
    const env = make("BanditTest");
    const prompt = env.reset(1);
    for (const bad of [
      "",
      "Unicorn",
      "Trader!",
      "<answer> Trader </answer>",
      "1",
      "Trader || Librarian",
      "trader\u0000",
    ]) {
      const result = env.step(bad);
      expect(result).toMatchObject({ observation: prompt, reward: 0, done: false });
      expect(result.info).toMatchObject({
        success: false,
        actionIsValid: false,
        actionIsEffective: false,
        arm: null,
      });
      expect(env.done).toBe(false);
    }
    const pull = env.step("  lIbRaRiAn\n");
    expect(pull.info).toMatchObject({ actionIsValid: true, arm: "Librarian", success: true });
    expect(pull.observation).toMatch(/^Librarian: (1\.0|0\.0) points$/);
  });

  it("never throws on arbitrary strings; only an arm name pulls", () => {
    const env = make();
    fc.assert(
      fc.property(
        fc.integer(),
        fc.oneof(fc.string(), fc.constantFrom("Dragon", " phoenix ", "DRAGON")),
        (seed, action) => {
          const prompt = env.reset(seed);
          const result = env.step(action);
          const valid = ["dragon", "phoenix"].includes(action.trim().toLowerCase());
          expect(result.info.actionIsValid).toBe(valid);
          expect(result.done).toBe(valid);
          if (!valid) {
            expect(result.reward).toBe(0);
            expect(env.render()).toBe(prompt);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("is an invalid no-op before reset and after the pull", () => {
    const env = make();
    expect(env.done).toBe(true);
    expect(env.render()).toBe("");
    expect(env.step("Dragon")).toMatchObject({
      observation: "",
      reward: 0,
      done: true,
      info: { actionIsValid: false },
    });
    env.reset(2);
    const pull = env.step("Dragon");
    const after = env.step("Phoenix");
    expect(after).toMatchObject({ observation: pull.observation, reward: 0, done: true });
    expect(after.info).toMatchObject({ actionIsValid: false, success: true });
  });

  it("is deterministic: same seed, same order and payouts", () => {
    const play = (env: BanditEnv, seed: number, arm: string) =>
      JSON.stringify([env.reset(seed), env.step(arm)]);
    const a = make();
    const b = make();
    const outcomes = new Set<string>();
    for (let seed = -5; seed < 60; seed++) {
      const first = play(a, seed, "Dragon");
      play(a, seed + 1, "Phoenix");
      expect(play(a, seed, "Dragon")).toBe(first);
      expect(play(b, seed, "Dragon")).toBe(first);
      outcomes.add(first);
    }
    // Both orders and both payouts occur.
    expect(outcomes.size).toBe(4);
  });
});

describe("Bandit oracle and renders", () => {
  it("pulls the arm with the larger expected payout", () => {
    for (const tag of Object.keys(BANDIT_ARM_NAME_PAIRS)) {
      const env = make(tag);
      env.reset(0);
      expect(oracleAction(env)).toBe(env.config.hiArmName);
      const oracle = evaluatePolicy(tag, "oracle", { seeds: Array.from({ length: 200 }, (_, i) => i) });
      expect(oracle.successRate).toBe(1);
    }
    expect(banditExpectedRewards(make().config)).toEqual({ lo: 0.1, hi: 0.25 });
    const cautious = make("bandit", { loArmReward: 0.5 });
    cautious.reset(0);
    expect(banditOracle(cautious, new Rng(0))).toBe("Phoenix");
    const random = evaluatePolicy("Bandit", "random", { seeds: Array.from({ length: 2000 }, (_, i) => i) });
    expect(Math.abs(random.successRate - 0.5)).toBeLessThan(0.06);
  });

  it("draws two labelled arms, and the payout after the pull", () => {
    const env = make("bandit", { loArmName: "Salt & Pepper", hiArmName: "<Dragon>" });
    expect(svgProblems(env.renderSvg())).toEqual([]);
    env.reset(0);
    const before = env.renderSvg();
    expect(svgProblems(before)).toEqual([]);
    expect(before).toContain("Salt &amp; Pepper");
    expect(before).toContain("&lt;Dragon&gt;");
    expect(before.match(/<rect /g)).toHaveLength(3);
    expect(before).not.toContain("points");
    env.step("<dragon>");
    const after = env.renderSvg();
    expect(svgProblems(after)).toEqual([]);
    expect(after).toMatch(/(1\.0|0\.0) points/);
    expect(after).toContain("always 0.1");
    expect(after).toContain("the high arm");
  });
});
