import { createEnv, listPresets } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { HumanGame } from "../src/play/human-game.js";

describe("HumanGame", () => {
  it("plays the preset from the seed as the env does, and stops at the preset's action budget", () => {
    const game = new HumanGame("SimpleSokoban", 3);
    const reference = createEnv("SimpleSokoban");
    reference.reset(3);
    expect(game.env.render()).toBe(reference.render());
    const budget = listPresets().SimpleSokoban!.maxActionsPerTraj;
    expect(game.actionBudget).toBe(budget);
    // Up and down in turn: on this level they never end the episode, so the budget does.
    const moves = Array.from({ length: budget }, (_, i) => (i % 2 === 0 ? "Up" : "Down"));
    for (const move of moves) {
      expect(game.act(move)).toBeDefined();
      reference.step(move);
    }
    expect(game.env.render()).toBe(reference.render());
    expect(game.over).toBe(true);
    expect(game.overReason).toMatch(/out of actions/);
    expect(game.act("Up")).toBeUndefined();
    expect(game.actionsUsed).toBe(budget);
    expect(game.hint()).toBeUndefined();
  });

  it("asks the oracle without moving, and the oracle's moves solve deterministic FrozenLake", () => {
    const game = new HumanGame("FrozenLakeDeterministic", 11);
    const before = game.env.render();
    const hint = game.hint()!;
    expect(game.env.actions).toContain(hint);
    expect(game.env.render()).toBe(before);
    expect(game.actionsUsed).toBe(0);
    while (!game.over) game.act(game.hint()!);
    expect(game.success).toBe(true);
    expect(game.totalReward).toBe(1);
    expect(game.overReason).toBe("solved");
  });

  it("counts an invalid action against the budget, as an agent's would be", () => {
    const game = new HumanGame("FrozenLake", 1);
    game.act("Jump");
    expect(game.moves).toEqual([{ action: "Jump", reward: 0, valid: false, effective: false }]);
    expect(game.actionsUsed).toBe(1);
  });
});
