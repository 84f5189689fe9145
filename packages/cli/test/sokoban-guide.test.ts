import { createEnv, evaluatePolicy, parseSokobanRoom, Rng, type SokobanEnv } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { guideAction } from "../src/sft/guide.js";
import { directionsTowards, sokobanGuideStep } from "../src/sft/sokoban-guide.js";

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

  it("is the warm start's guided policy on one-box Sokoban", () => {
    const env = createEnv("SimpleSokoban") as SokobanEnv;
    env.reset(5);
    expect(guideAction(env, new Rng(0, "test"))).toBe(sokobanGuideStep(env.room!).move);
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
