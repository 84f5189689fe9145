import { describe, expect, it } from "vitest";
import {
  createEnv,
  type FrozenLakeEnv,
  frozenLakeMovesTowardsGoal,
  guideAction,
  guidePlan,
  guidePlansAhead,
  Rng,
  thoughtFor,
  thoughtOrder,
} from "../src/index.js";

const seeds = Array.from({ length: 200 }, (_, i) => i);

const STEPS: Record<string, [number, number]> = {
  Left: [0, -1],
  Down: [1, 0],
  Right: [0, 1],
  Up: [-1, 0],
};

describe("FrozenLake guide", () => {
  it("guides FrozenLake towards the goal: every guided move brings the player closer", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLake");
    const rng = new Rng(1, "guide");
    const distance = () => {
      const size = env.map!.size;
      const goal = env.map!.goal;
      return (
        Math.abs(Math.floor(goal / size) - env.position!.row) + Math.abs((goal % size) - env.position!.col)
      );
    };
    for (const seed of seeds.slice(0, 50)) {
      env.reset(seed);
      const before = distance();
      const move = guideAction(env, rng);
      const [dr, dc] = STEPS[move]!;
      const goal = env.map!.goal;
      const size = env.map!.size;
      const after =
        Math.abs(Math.floor(goal / size) - (env.position!.row + dr)) +
        Math.abs((goal % size) - (env.position!.col + dc));
      expect(after).toBe(before - 1);
    }
  });

  it("plans several FrozenLake moves blind: each brings the player closer from where the last one leads", () => {
    expect(guidePlansAhead("FrozenLakeGridCoord")).toBe(true);
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const rng = new Rng(2, "plan");
    let shortened = 0;
    for (const seed of seeds.slice(0, 80)) {
      env.reset(seed);
      const size = env.map!.size;
      const goal = { row: Math.floor(env.map!.goal / size), col: env.map!.goal % size };
      let { row, col } = env.position!;
      const plan = guidePlan(env, rng, 3);
      expect(plan.length).toBeGreaterThan(0);
      for (const move of plan) {
        const before = Math.abs(goal.row - row) + Math.abs(goal.col - col);
        row += STEPS[move]![0];
        col += STEPS[move]![1];
        expect(Math.abs(goal.row - row) + Math.abs(goal.col - col)).toBe(before - 1);
      }
      // A plan shorter than asked ends on the goal.
      if (plan.length < 3) {
        shortened++;
        expect([row, col]).toEqual([goal.row, goal.col]);
      }
    }
    expect(shortened).toBeGreaterThan(0);
    expect(guidePlan(createEnv("Bandit"), rng, 3)).toHaveLength(1);
  });

  it("plans the closer moves in the order the thought names them, so the answer copies its words", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    const rng = new Rng(5, "plan");
    let twoWay = 0;
    for (const seed of seeds) {
      env.reset(seed);
      const closer = thoughtOrder(frozenLakeMovesTowardsGoal(env));
      if (closer.length !== 2) continue;
      twoWay++;
      // "down and left of me": Down, then Left, then Down again while both still bring it closer.
      expect(guidePlan(env, rng, 2)).toEqual(closer);
      const thought = thoughtFor(env, closer, true);
      expect(thought).toContain(`${closer.map((m) => m.toLowerCase()).join(" and ")} of me`);
      expect(thought).toContain(
        `Moving ${closer.map((m) => m.toLowerCase()).join(", then ")} brings me closer`,
      );
    }
    expect(twoWay).toBeGreaterThan(50);
    expect(thoughtOrder(["Left", "Up", "Right", "Down"])).toEqual(["Down", "Up", "Right", "Left"]);
  });
});

describe("FrozenLake thoughts", () => {
  it("words the untargeted FrozenLake template apart from the rules, which a small model echoes", () => {
    const env = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    for (const seed of seeds.slice(0, 20)) {
      env.reset(seed);
      const thought = thoughtFor(env, ["Up"], false);
      const template = thought.slice(thought.indexOf(" of me. ") + " of me. ".length);
      const opening = template.split(" ").slice(0, 3).join(" ").replace(/[,.]$/, "");
      expect(opening.length).toBeGreaterThan(5);
      expect(env.instructions.toLowerCase()).not.toContain(opening.toLowerCase());
    }
  });

  it("counts the cells from the grid, or copies the coordinates the observation lists", () => {
    const grid = createEnv<FrozenLakeEnv>("FrozenLake");
    const rows = grid.reset(3).split("\n");
    const row = rows.findIndex((line) => line.includes("P"));
    expect(thoughtFor(grid, "Up", false)).toContain(
      `I am at row ${row + 1}, column ${rows[row]!.indexOf("P") + 1};`,
    );
    const coordinates = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    coordinates.reset(3);
    const { row: r, col: c } = coordinates.position!;
    expect(thoughtFor(coordinates, "Up", false)).toContain(`I am at (${r}, ${c});`);
  });

  it("says nothing of its own before the first reset", () => {
    expect(thoughtFor(createEnv("FrozenLake"), ["Up", "Left"], true)).toBe("I choose Up.");
  });
});
