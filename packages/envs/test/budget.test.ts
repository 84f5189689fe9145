import { describe, expect, it } from "vitest";
import { actionBudget, DEFAULT_MAX_ACTIONS_PER_TRAJ, evaluatePolicy, listPresets } from "../src/index.js";

describe("actionBudget", () => {
  it("is the preset's maxActionsPerTraj, else RAGEN's default of 10", () => {
    expect(DEFAULT_MAX_ACTIONS_PER_TRAJ).toBe(10);
    for (const [tag, preset] of Object.entries(listPresets()))
      expect(actionBudget(tag)).toBe(preset.maxActionsPerTraj);
    expect(actionBudget("Bandit")).toBe(1);
    expect(actionBudget("WebShop")).toBe(9);
    // Plain env names and tags nobody registered.
    expect(actionBudget("frozenlake")).toBe(DEFAULT_MAX_ACTIONS_PER_TRAJ);
    expect(actionBudget("NoSuchTag")).toBe(DEFAULT_MAX_ACTIONS_PER_TRAJ);
  });

  it("is no more than the turns can hold", () => {
    expect(actionBudget("FrozenLake", { maxTurns: 5, maxActionsPerTurn: 1 })).toBe(5);
    expect(actionBudget("FrozenLake", { maxTurns: 5, maxActionsPerTurn: 2 })).toBe(10);
    expect(actionBudget("FrozenLake", { maxTurns: 5, maxActionsPerTurn: 5 })).toBe(10);
    expect(actionBudget("Bandit", { maxTurns: 5, maxActionsPerTurn: 5 })).toBe(1);
    expect(actionBudget("sokoban", { maxTurns: 3, maxActionsPerTurn: 3 })).toBe(9);
  });

  it("is evaluatePolicy's default budget", () => {
    expect(evaluatePolicy("Bandit", "oracle", { seeds: [0] }).maxActions).toBe(1);
    expect(evaluatePolicy("SimpleSokoban", "random", { seeds: [0] }).maxActions).toBe(10);
    expect(evaluatePolicy("frozenlake", "random", { seeds: [0] }).maxActions).toBe(
      DEFAULT_MAX_ACTIONS_PER_TRAJ,
    );
    expect(evaluatePolicy("frozenlake", "random", { seeds: [0], maxActions: 4 }).maxActions).toBe(4);
  });
});
