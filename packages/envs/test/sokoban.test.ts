import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assertEnvConforms,
  createEnv,
  EnvConfigError,
  listPresets,
  parseSokobanRoom,
  renderSokobanCoords,
  renderSokobanObservation,
  SOKOBAN_CELL_STYLES,
  SokobanEnv,
  SokobanRoomError,
  type SokobanSymbols,
  svgProblems,
} from "../src/index.js";

const TWO_BOXES = ["########", "#P_XO__#", "#___XO_#", "########"].join("\n");

function issuesOf(fn: () => unknown): { field: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(EnvConfigError);
    return [...(error as EnvConfigError).issues];
  }
  throw new Error("expected an EnvConfigError");
}

describe("sokoban config", () => {
  it("fills RAGEN's defaults", () => {
    const env = createEnv<SokobanEnv>("sokoban");
    expect(env.config).toEqual({
      dimRoom: [6, 6],
      numBoxes: 3,
      maxSteps: 100,
      searchDepth: 300,
      symbols: {
        wall: "#",
        empty: "_",
        target: "O",
        boxOnTarget: "√",
        box: "X",
        player: "P",
        playerOnTarget: "S",
      },
      observationFormat: "grid",
    });
  });

  it("fills missing symbols one by one", () => {
    const env = new SokobanEnv({ symbols: { wall: "W" } });
    expect(env.config.symbols.wall).toBe("W");
    expect(env.config.symbols.box).toBe("X");
  });

  it.each([
    [{ numBoxes: 0 }, "numBoxes"],
    [{ numBoxes: 1.5 }, "numBoxes"],
    [{ dimRoom: [4, 6] }, "dimRoom.0"],
    [{ dimRoom: [6, 6, 6] }, "dimRoom"],
    [{ maxSteps: 0 }, "maxSteps"],
    [{ searchDepth: "deep" }, "searchDepth"],
    [{ colour: "red" }, "colour"],
    [{ symbols: { box: "XX" } }, "symbols.box"],
    [{ symbols: { wall: "" } }, "symbols.wall"],
    [{ symbols: { ghost: "G" } }, "symbols.ghost"],
  ])("rejects %j naming %s", (config, field) => {
    expect(issuesOf(() => createEnv("sokoban", config)).map((i) => i.field)).toContain(field);
  });

  it("rejects symbols that repeat, naming both fields", () => {
    const issues = issuesOf(() => createEnv("sokoban", { symbols: { wall: "_" } }));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.field).toBe("symbols.empty");
    expect(issues[0]!.message).toContain("symbols.wall");
  });

  it("rejects invisible symbols (a line break would split the rows)", () => {
    expect(issuesOf(() => new SokobanEnv({ symbols: { box: "\n" } }))[0]!.field).toBe("symbols.box");
    expect(issuesOf(() => new SokobanEnv({ symbols: { empty: " " } }))[0]!.field).toBe("symbols.empty");
  });

  it("rejects rooms too small and searches too shallow for the boxes", () => {
    expect(issuesOf(() => createEnv("sokoban", { dimRoom: [6, 6], numBoxes: 5 }))[0]!.field).toBe("numBoxes");
    expect(issuesOf(() => createEnv("sokoban", { numBoxes: 3, searchDepth: 8 }))[0]!.field).toBe(
      "searchDepth",
    );
    expect(() => createEnv("sokoban", { dimRoom: [6, 6], numBoxes: 4, searchDepth: 18 })).not.toThrow();
  });

  it("registers RAGEN's presets with a 10-action cap", () => {
    const presets = listPresets();
    expect(presets.SimpleSokoban).toMatchObject({ env: "sokoban", maxActionsPerTraj: 10 });
    expect(presets.LargerSokoban).toMatchObject({ env: "sokoban", maxActionsPerTraj: 10 });
    expect(presets.SokobanDifferentGridVocab).toMatchObject({ env: "sokoban", maxActionsPerTraj: 10 });
    expect(createEnv<SokobanEnv>("SimpleSokoban").config).toMatchObject({
      dimRoom: [6, 6],
      numBoxes: 1,
      maxSteps: 100,
    });
    expect(createEnv<SokobanEnv>("LargerSokoban").config).toMatchObject({
      dimRoom: [8, 8],
      numBoxes: 2,
      searchDepth: 10,
    });
    expect(createEnv<SokobanEnv>("SokobanDifferentGridVocab").config).toMatchObject({
      numBoxes: 1,
      searchDepth: 30,
    });
  });

  it("registers RAGEN-2's CoordSokoban: SimpleSokoban with the grid_coord observation", () => {
    expect(listPresets().CoordSokoban).toMatchObject({ env: "sokoban", maxActionsPerTraj: 10 });
    expect(listPresets().CoordSokoban!.description).toContain("RAGEN-2's CoordSokoban");
    const simple = createEnv<SokobanEnv>("SimpleSokoban");
    const coord = createEnv<SokobanEnv>("CoordSokoban");
    expect(coord.config).toEqual({ ...simple.config, observationFormat: "grid_coord" });
    // Same rooms as SimpleSokoban: only the observation differs.
    expect(coord.reset(11).endsWith(`Grid Map: \n${simple.reset(11)}`)).toBe(true);
  });

  it("refuses an unknown observation format, listing the allowed ones", () => {
    const error = (() => {
      try {
        createEnv("CoordSokoban", { observationFormat: "coords" });
      } catch (caught) {
        return caught as EnvConfigError;
      }
      throw new Error("expected an EnvConfigError");
    })();
    expect(error).toBeInstanceOf(EnvConfigError);
    expect(error.issues).toEqual([
      expect.objectContaining({ field: "observationFormat", allowed: ["grid", "coord", "grid_coord"] }),
    ]);
    expect(error.message).toContain('observationFormat: must be one of the listed values (got "coords")');
    expect(error.message).toContain('"grid", "coord", "grid_coord"');
  });
});

describe("sokoban contract", () => {
  it.each(["sokoban", "SimpleSokoban", "LargerSokoban", "SokobanDifferentGridVocab", "CoordSokoban"])(
    "%s keeps the Env contract",
    (tag) => {
      expect(assertEnvConforms(tag, { seeds: [0, 1, -5, 2 ** 40] }).ok).toBe(true);
    },
  );

  it("is an invalid no-op before the first reset", () => {
    const env = new SokobanEnv();
    expect(env.done).toBe(true);
    expect(env.render()).toBe("");
    expect(env.step("Up")).toMatchObject({
      observation: "",
      reward: 0,
      done: true,
      info: { actionIsValid: false },
    });
  });

  it("gives the same room and trajectory for the same seed", () => {
    const a = createEnv<SokobanEnv>("LargerSokoban");
    const b = createEnv<SokobanEnv>("LargerSokoban");
    for (const seed of [0, 17, 123456789, -3]) {
      expect(a.reset(seed)).toBe(b.reset(seed));
      for (const action of ["Up", "Left", "Down", "Right", "Right", "Up"]) {
        expect(a.step(action)).toEqual(b.step(action));
      }
    }
    const rooms = new Set(Array.from({ length: 50 }, (_, seed) => a.reset(seed)));
    expect(rooms.size).toBeGreaterThan(40);
  });

  it("matches action names case-insensitively after trimming", () => {
    const env = SokobanEnv.fromText(TWO_BOXES);
    expect(env.step("  right\n").info.actionIsValid).toBe(true);
    expect(env.step("LEFT").info).toMatchObject({ actionIsValid: true, actionIsEffective: true });
    expect(env.steps).toBe(2);
  });

  it("never throws and leaves the state alone on anything but an action name", () => {
    const env = createEnv<SokobanEnv>("SimpleSokoban");
    env.reset(7);
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), (text) => {
        const before = env.render();
        const steps = env.steps;
        const result = env.step(text);
        const valid = ["up", "down", "left", "right"].includes(text.trim().toLowerCase());
        expect(result.info.actionIsValid).toBe(valid);
        if (!valid) {
          expect(result.reward).toBe(0);
          expect(env.render()).toBe(before);
          expect(env.steps).toBe(steps);
        }
        if (env.done) env.reset(7);
      }),
      { numRuns: 300 },
    );
  });

  it("keeps boxes, targets, walls and one player through any valid actions", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1000 }),
        fc.array(fc.constantFrom("Up", "Down", "Left", "Right"), { maxLength: 60 }),
        (seed, actions) => {
          const env = createEnv<SokobanEnv>("sokoban");
          env.reset(seed);
          const start = env.room!;
          const targets = start.tiles.filter((t) => t === "target").length;
          for (const action of actions) {
            const result = env.step(action);
            if (env.done && !result.info.actionIsValid) break;
            const room = env.room!;
            expect(room.boxes).toHaveLength(3);
            expect(room.tiles).toEqual(start.tiles);
            expect(new Set(room.boxes).size).toBe(3);
            expect(room.boxes).not.toContain(room.player);
            expect(room.tiles[room.player]).not.toBe("wall");
            expect(result.info.boxesOnTarget).toBe(
              room.boxes.filter((b) => room.tiles[b] === "target").length,
            );
            const text = env.render();
            expect([...text].filter((ch) => ch === "P" || ch === "S")).toHaveLength(1);
            expect(text.match(/[O√S]/g)?.length ?? 0).toBe(targets);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("sokoban rewards", () => {
  it("scores a plain move, a push onto a target, a push off it and a wall bump", () => {
    const env = SokobanEnv.fromText(TWO_BOXES);
    const move = env.step("Right");
    expect(move.reward).toBeCloseTo(-0.1, 10);
    expect(move.info).toEqual({
      success: false,
      actionIsValid: true,
      actionIsEffective: true,
      boxesOnTarget: 0,
      boxPushed: false,
    });
    const onto = env.step("Right");
    expect(onto.reward).toBeCloseTo(0.9, 10);
    expect(onto.info).toMatchObject({ boxesOnTarget: 1, boxPushed: true, success: false });
    expect(onto.done).toBe(false);
    const off = env.step("Right");
    expect(off.reward).toBeCloseTo(-1.1, 10);
    expect(off.info).toMatchObject({ boxesOnTarget: 0, boxPushed: true, actionIsEffective: true });
    const bump = env.step("Up");
    expect(bump.reward).toBeCloseTo(-0.1, 10);
    expect(bump.info).toMatchObject({ actionIsValid: true, actionIsEffective: false, boxPushed: false });
    expect(env.steps).toBe(4);
  });

  it("pays +10 on top when the last box lands and ends the episode", () => {
    const env = SokobanEnv.fromText("#######\n#P_XO_#\n#######");
    env.step("Right");
    const solve = env.step("Right");
    expect(solve.reward).toBeCloseTo(10.9, 10);
    expect(solve).toMatchObject({ done: true, info: { success: true, boxesOnTarget: 1, boxPushed: true } });
    expect(solve.observation).toBe("#######\n#__P√_#\n#######");
    const after = env.step("Left");
    expect(after).toMatchObject({ reward: 0, done: true, info: { actionIsValid: false, success: true } });
    expect(env.render()).toBe(solve.observation);
  });

  it("does not push a box into a wall or into another box", () => {
    const intoBox = SokobanEnv.fromText("#######\n#PXX_O#\n#____O#\n#######");
    const blocked = intoBox.step("Right");
    expect(blocked.reward).toBeCloseTo(-0.1, 10);
    expect(blocked.info).toMatchObject({ actionIsEffective: false, boxPushed: false });
    expect(intoBox.render()).toBe("#######\n#PXX_O#\n#____O#\n#######");

    const intoWall = SokobanEnv.fromText("######\n#O_PX#\n######");
    const stuck = intoWall.step("Right");
    expect(stuck.reward).toBeCloseTo(-0.1, 10);
    expect(stuck.info).toMatchObject({ actionIsEffective: false, boxPushed: false });
    expect(intoWall.render()).toBe("######\n#O_PX#\n######");
  });

  it("ends the episode after maxSteps without success", () => {
    const env = SokobanEnv.fromText(TWO_BOXES, { maxSteps: 3 });
    expect(env.step("Up").done).toBe(false);
    expect(env.step("Up").done).toBe(false);
    expect(env.step("nonsense").done).toBe(false);
    const last = env.step("Up");
    expect(last).toMatchObject({ done: true, info: { success: false, actionIsValid: true } });
    expect(env.steps).toBe(3);
    expect(env.step("Right")).toMatchObject({ reward: 0, done: true, info: { actionIsValid: false } });
    expect(env.availableActions()).toEqual([]);
  });
});

describe("sokoban renders", () => {
  it("writes a hand-built room back exactly, player on a target included", () => {
    const text = ["#######", "#S_X__#", "#_√_XO#", "#_____#", "#######"].join("\n");
    const env = SokobanEnv.fromText(text);
    expect(env.render()).toBe(text);
    expect(env.room).toMatchObject({ rows: 5, cols: 7, player: 8, boxes: [10, 16, 18] });
    env.step("Right");
    expect(env.render()).toBe(["#######", "#OPX__#", "#_√_XO#", "#_____#", "#######"].join("\n"));
  });

  it("reads rooms without outer walls (outside the grid is wall)", () => {
    const env = SokobanEnv.fromText("PXO");
    expect(env.step("Right").info.success).toBe(true);
    expect(SokobanEnv.fromText("XOP").step("Right").info.actionIsEffective).toBe(false);
  });

  it("rejects malformed rooms", () => {
    expect(() => parseSokobanRoom("#P#\n#X")).toThrow(SokobanRoomError);
    expect(() => parseSokobanRoom("PXOZ")).toThrow(/unknown symbol "Z"/);
    expect(() => parseSokobanRoom("PXOP")).toThrow(/one player/);
    expect(() => parseSokobanRoom("PXX_O")).toThrow(/2 boxes but 1 targets/);
  });

  it("uses another grid vocabulary in observations and in the legend", () => {
    const env = createEnv<SokobanEnv>("SokobanDifferentGridVocab");
    const first = env.reset(3);
    expect(first).toMatch(/^[W.GCBA@\n]+$/);
    expect(first.match(/[A@]/g)).toHaveLength(1);
    for (const entry of [
      "W = wall",
      ". = empty floor",
      "G = target",
      "C = box on a target",
      "B = box",
      "A = player",
    ]) {
      expect(env.instructions).toContain(entry);
    }
    expect(env.instructions).toContain("@ = player on a target");
    expect(env.instructions).not.toContain("# = wall");

    const custom = SokobanEnv.fromText("WWWWWWW\nW@.BG.W\nWB....W\nWWWWWWW", {
      symbols: {
        wall: "W",
        empty: ".",
        target: "G",
        boxOnTarget: "C",
        box: "B",
        player: "A",
        playerOnTarget: "@",
      },
    });
    custom.step("Right");
    expect(custom.render()).toBe("WWWWWWW\nWGABG.W\nWB....W\nWWWWWWW");
    expect(custom.step("Right").observation).toBe("WWWWWWW\nWG.AC.W\nWB....W\nWWWWWWW");
  });

  it("states the default legend and the actions in the instructions", () => {
    const env = createEnv<SokobanEnv>("SimpleSokoban");
    for (const entry of [
      "# = wall",
      "_ = empty floor",
      "O = target",
      "√ = box on a target",
      "X = box",
      "P = player",
    ]) {
      expect(env.instructions).toContain(entry);
    }
    expect(env.instructions).toContain("S = player on a target");
    expect(env.instructions).toContain("Up, Down, Left, Right");
    expect(env.instructions).toContain("after 100 steps");
  });

  it("draws every cell kind with its own style in a well-formed SVG", () => {
    const fills = Object.values(SOKOBAN_CELL_STYLES).map((s) => s.fill);
    expect(new Set(fills).size).toBe(7);
    const a = SokobanEnv.fromText("#######\n#P_X√O#\n#######").renderSvg();
    const b = SokobanEnv.fromText("######\n#S_X_#\n######").renderSvg();
    for (const svg of [a, b]) expect(svgProblems(svg)).toEqual([]);
    for (const label of ["wall", "empty floor", "box", "box on a target", "target", "player"]) {
      expect(a).toContain(`<title>${label}</title>`);
    }
    expect(b).toContain("<title>player on a target</title>");
    expect(a).toContain(`fill="${SOKOBAN_CELL_STYLES.boxOnTarget.fill}"`);
    expect(a).toContain("step 0/100, boxes on target 1/2");
    expect(svgProblems(new SokobanEnv().renderSvg())).toEqual([]);
  });
});

describe("sokoban coordinate observations (RAGEN-2's observation_format)", () => {
  const ROOM = ["#######", "#S_X__#", "#_√#XO#", "#__#__#", "#######"].join("\n");
  const ROOM_COORDS = [
    "Board size: 5 rows x 7 cols (zero-indexed).",
    "Player on target: (1, 1)",
    "Boxes: (1, 3), (2, 4)",
    "Boxes on targets: (2, 2)",
    "Targets: (1, 1), (2, 2), (2, 5)",
    "Walls: the border (rows 0 and 4, cols 0 and 6), plus (2, 3), (3, 3)",
  ].join("\n");

  it("lists the player, boxes, targets and inner walls of a hand-built room", () => {
    const env = SokobanEnv.fromText(ROOM, { observationFormat: "coord" });
    expect(env.render()).toBe(ROOM_COORDS);
    expect(renderSokobanCoords(env.room!)).toBe(ROOM_COORDS);
    // Off the target the player line changes; the targets stay the layout, covered or not.
    expect(env.step("Right").observation).toBe(
      [
        "Board size: 5 rows x 7 cols (zero-indexed).",
        "Player: (1, 2)",
        "Boxes: (1, 3), (2, 4)",
        "Boxes on targets: (2, 2)",
        "Targets: (1, 1), (2, 2), (2, 5)",
        "Walls: the border (rows 0 and 4, cols 0 and 6), plus (2, 3), (3, 3)",
      ].join("\n"),
    );
  });

  it("leaves out lines with nothing to list", () => {
    const solved = SokobanEnv.fromText("#####\n#PXO#\n#####", { observationFormat: "coord" });
    expect(solved.step("Right").observation).toBe(
      [
        "Board size: 3 rows x 5 cols (zero-indexed).",
        "Player: (1, 2)",
        "Boxes on targets: (1, 3)",
        "Targets: (1, 3)",
        "Walls: the border (rows 0 and 2, cols 0 and 4)",
      ].join("\n"),
    );
    expect(SokobanEnv.fromText("PXO", { observationFormat: "coord" }).render()).toBe(
      [
        "Board size: 1 row x 3 cols (zero-indexed).",
        "Player: (0, 0)",
        "Boxes: (0, 1)",
        "Targets: (0, 2)",
      ].join("\n"),
    );
  });

  it("lists every wall of a room without a closed outer wall", () => {
    const env = SokobanEnv.fromText("P_XO\n#__#", { observationFormat: "coord" });
    expect(env.render().split("\n").at(-1)).toBe("Walls: (1, 0), (1, 3)");
  });

  it("puts the coordinates above the grid in grid_coord, the grid in the configured symbols", () => {
    const symbols = listPresets().SokobanDifferentGridVocab!.config.symbols as Partial<SokobanSymbols>;
    const grid = ["WWWWWWW", "W@.B..W", "W.CWBGW", "W..W..W", "WWWWWWW"].join("\n");
    const env = SokobanEnv.fromText(grid, { symbols, observationFormat: "grid_coord" });
    expect(env.render()).toBe(`Coordinates: \n${ROOM_COORDS}\nGrid Map: \n${grid}`);
    expect(env.render()).toBe(renderSokobanObservation(env.room!, env.config.symbols, "grid_coord"));
    expect(renderSokobanObservation(env.room!, env.config.symbols, "grid")).toBe(grid);
    expect(SokobanEnv.fromText(grid, { symbols }).render()).toBe(grid);
  });

  it("explains the symbols for a grid and the coordinates when the observation has them", () => {
    const grid = new SokobanEnv({ observationFormat: "grid" }).instructions;
    const coord = new SokobanEnv({ observationFormat: "coord" }).instructions;
    const both = new SokobanEnv({ observationFormat: "grid_coord" }).instructions;
    expect(grid).toContain("# = wall");
    expect(grid).not.toContain("(row, col)");
    expect(coord).not.toContain("# = wall");
    expect(coord).toContain("(row, col), zero-indexed");
    expect(both).toContain("# = wall");
    expect(both).toContain("(row, col), zero-indexed");
  });

  it("reads a generated room's coordinates and grid consistently", () => {
    const env = createEnv<SokobanEnv>("CoordSokoban");
    for (const seed of [0, 5, 42]) {
      const observation = env.reset(seed);
      const [coords, grid] = observation.slice("Coordinates: \n".length).split("\nGrid Map: \n");
      expect(coords).toBe(renderSokobanCoords(parseSokobanRoom(grid!)));
      expect(coords).toMatch(/^Walls: the border \(rows 0 and 5, cols 0 and 5\)/m);
    }
  });
});
