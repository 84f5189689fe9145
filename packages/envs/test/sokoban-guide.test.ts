import { describe, expect, it } from "vitest";
import {
  createEnv,
  directionsTowards,
  evaluatePolicy,
  guideAction,
  guidePlan,
  oracleAction,
  parseSokobanRoom,
  Rng,
  SokobanEnv,
  sokobanGuideStep,
  thoughtFor,
} from "../src/index.js";

/** A room from RAGEN's symbols: # wall, _ floor, O target, X box, P player. */
const room = (text: string) => parseSokobanRoom(text.trim());

describe("Sokoban guide", () => {
  it("names directions vertical first, as thoughts do", () => {
    expect(directionsTowards({ row: 3, col: 3 }, { row: 1, col: 1 })).toEqual(["Up", "Left"]);
    expect(directionsTowards({ row: 1, col: 1 }, { row: 3, col: 4 })).toEqual(["Down", "Right"]);
    expect(directionsTowards({ row: 2, col: 2 }, { row: 2, col: 2 })).toEqual([]);
  });

  it("pushes the box towards the target's row first, from the cell behind it", () => {
    const step = sokobanGuideStep(
      room(`
######
#O___#
#____#
#_X__#
#_P__#
######`),
    );
    expect(step).toEqual({
      push: "Up",
      pushFrom: { row: 4, col: 2 },
      towards: [],
      move: "Up",
      around: false,
    });
  });

  it("walks to the push cell when elsewhere, never into the box", () => {
    // The box must go down; its push cell (1, 2) is up and left of the player. Up first.
    expect(
      sokobanGuideStep(
        room(`
######
#____#
#_X_P#
#____#
#_O__#
######`),
      ),
    ).toMatchObject({ push: "Down", pushFrom: { row: 1, col: 2 }, towards: ["Up", "Left"], move: "Up" });
    // Up is the box itself here, so the guide takes the other way towards the push cell: left.
    expect(
      sokobanGuideStep(
        room(`
######
#____#
#_X_O#
#_P__#
#____#
######`),
      ),
    ).toMatchObject({
      push: "Right",
      pushFrom: { row: 2, col: 1 },
      towards: ["Up", "Left"],
      move: "Left",
      around: false,
    });
  });

  it("steps around a box that stands in line between the player and the push cell", () => {
    // The box must go up: push cell (4, 2), straight below the box, and the player is above it.
    const step = sokobanGuideStep(
      room(`
######
#_O__#
#_P__#
#_X__#
#____#
######`),
    );
    expect(step).toMatchObject({ push: "Up", pushFrom: { row: 4, col: 2 }, towards: ["Down"], around: true });
    expect(step.move).toBe("Right");
  });

  it("refuses rooms it has no plan for", () => {
    expect(() =>
      sokobanGuideStep(
        room(`
#####
#PXO#
#_XO#
#####`),
      ),
    ).toThrow(/one box, the room has 2/);
    expect(() =>
      sokobanGuideStep(
        room(`
#####
#P√_#
#####`),
      ),
    ).toThrow(/already|on the target/);
  });

  it("is the warm start's guided policy on one-box Sokoban, one move a turn", () => {
    const env = createEnv("SimpleSokoban") as SokobanEnv;
    env.reset(5);
    expect(guideAction(env, new Rng(0, "test"))).toBe(sokobanGuideStep(env.room!).move);
    expect(guidePlan(env, new Rng(0, "test"), 3)).toEqual([sokobanGuideStep(env.room!).move]);
  });

  it("plays the oracle's (the solver's) move in rooms with several boxes", () => {
    const env = createEnv("LargerSokoban") as SokobanEnv;
    for (const seed of [1, 2, 3]) {
      env.reset(seed);
      expect(env.room!.boxes.length).toBeGreaterThan(1);
      expect(guidePlan(env, new Rng(seed, "test"), 3)).toEqual([oracleAction(env, new Rng(seed, "test"))]);
    }
  });

  it("solves most SimpleSokoban rooms within 5 actions, far above random moves", () => {
    const seeds = Array.from({ length: 300 }, (_, i) => 1000 + i);
    const guided = evaluatePolicy(
      "SimpleSokoban",
      (env) => sokobanGuideStep((env as SokobanEnv).room!).move,
      {
        seeds,
        maxActions: 5,
      },
    );
    const random = evaluatePolicy("SimpleSokoban", "random", { seeds, maxActions: 5 });
    expect(guided.successRate).toBeGreaterThan(0.5);
    expect(guided.successRate).toBeGreaterThan(4 * random.successRate);
  });
});

describe("Sokoban thoughts", () => {
  it("reads Sokoban's player, box and target cells, and spells out the guide's reasoning", () => {
    const env = createEnv("SimpleSokoban");
    const rows = env.reset(7).split("\n");
    const cellOf = (symbol: string) => {
      const row = rows.findIndex((line) => line.includes(symbol));
      return `row ${row + 1}, column ${rows[row]!.indexOf(symbol) + 1}`;
    };
    const reading = `I am at ${cellOf("P")}; a box at ${cellOf("X")}; a target at ${cellOf("O")}.`;
    const planned = guideAction(env, new Rng(0, "test"));
    expect(thoughtFor(env, planned, true)).toMatch(
      new RegExp(
        `^${reading.replace(/[.()]/g, "\\$&")} The box must go (up|down|left|right), so I push it from row \\d, column \\d(; I am there, so I push|, [a-z ]+ of me(?: past the box)?, so I (?:move|step)) ${planned.toLowerCase()}\\.$`,
      ),
    );
    expect(thoughtFor(env, "Left", false)).toBe(`${reading} I try left.`);
  });

  it("keeps a guided thought apart from a guess on Sokoban rooms with several boxes", () => {
    const env = createEnv("LargerSokoban");
    env.reset(3);
    const planned = guideAction(env, new Rng(0, "test"));
    expect(thoughtFor(env, planned, true)).toMatch(
      new RegExp(`\\. Moving ${planned.toLowerCase()} is on my way to push the boxes onto the targets\\.$`),
    );
    expect(thoughtFor(env, planned, false)).toMatch(/\. I try [a-z]+\.$/);
  });

  it("names the Sokoban guide's push cell and the way there in its thought", () => {
    const env = SokobanEnv.fromText("######\n#____#\n#_X_P#\n#____#\n#_O__#\n######");
    expect(thoughtFor(env, "Up", true)).toBe(
      "I am at row 3, column 5; a box at row 3, column 3; a target at row 5, column 3. The box must go down, " +
        "so I push it from row 2, column 3, up and left of me, so I move up.",
    );
    const behind = SokobanEnv.fromText("######\n#____#\n#_P__#\n#_X__#\n#_O__#\n######");
    expect(thoughtFor(behind, "Down", true)).toMatch(
      /The box must go down, so I push it from row 3, column 3; I am there, so I push down\.$/,
    );
  });

  it("copies the zero-indexed coordinates when the observation lists them", () => {
    const text = "######\n#____#\n#_X_P#\n#____#\n#_O__#\n######";
    for (const observationFormat of ["coord", "grid_coord"] as const) {
      const env = SokobanEnv.fromText(text, { observationFormat });
      expect(env.render()).toContain("Player: (2, 4)\nBoxes: (2, 2)\nTargets: (4, 2)");
      expect(thoughtFor(env, "Up", true)).toBe(
        "I am at (2, 4); a box at (2, 2); a target at (4, 2). The box must go down, " +
          "so I push it from (1, 2), up and left of me, so I move up.",
      );
      expect(thoughtFor(env, "Left", false)).toBe(
        "I am at (2, 4); a box at (2, 2); a target at (4, 2). I try left.",
      );
    }
  });
});
