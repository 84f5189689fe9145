import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createEnv,
  EnvConfigError,
  FROZEN_LAKE_ACTIONS,
  FrozenLakeEnv,
  type FrozenLakeMap,
  frozenLakeHasSafePath,
  frozenLakeOutcomes,
  generateFrozenLakeMap,
  listPresets,
  parseFrozenLakeMap,
  Rng,
  sampleFrozenLakeMap,
  svgProblems,
} from "../src/index.js";

/** gymnasium's classic 4x4 map. */
const CLASSIC = ["SFFF", "FHFH", "FFFH", "HFFG"];

function make(config: object = {}): FrozenLakeEnv {
  return createEnv<FrozenLakeEnv>("frozenlake", config);
}

/** Breadth-first distances from the start through non-hole cells (written independently of the env). */
function distances(map: FrozenLakeMap): number[] {
  const dist = new Array<number>(map.size * map.size).fill(Number.POSITIVE_INFINITY);
  dist[map.start] = 0;
  const queue = [map.start];
  while (queue.length > 0) {
    const cell = queue.shift()!;
    const r = Math.floor(cell / map.size);
    const c = cell % map.size;
    for (const [dr, dc] of [
      [0, 1],
      [0, -1],
      [1, 0],
      [-1, 0],
    ] as const) {
      const nr = r + dr;
      const nc = c + dc;
      if (nr < 0 || nc < 0 || nr >= map.size || nc >= map.size) continue;
      const next = nr * map.size + nc;
      if (map.rows[nr]![nc] === "H" || dist[next] !== Number.POSITIVE_INFINITY) continue;
      dist[next] = dist[cell]! + 1;
      queue.push(next);
    }
  }
  return dist;
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

describe("FrozenLake config", () => {
  it("fills RAGEN's defaults", () => {
    const env = make();
    expect(env.config).toEqual({
      size: 4,
      p: 0.8,
      isSlippery: true,
      observationFormat: "grid",
      slipSuccessRate: 1 / 3,
    });
    expect(env.actions).toEqual(["Left", "Down", "Right", "Up"]);
    expect(new FrozenLakeEnv().config).toEqual(env.config);
  });

  it("rejects bad configs, naming the field", () => {
    expect(configError(() => make({ size: 1 })).issues.map((i) => i.field)).toEqual(["size"]);
    expect(configError(() => make({ size: 4.5 })).issues.map((i) => i.field)).toEqual(["size"]);
    expect(configError(() => make({ p: 1.2 })).issues.map((i) => i.field)).toEqual(["p"]);
    expect(configError(() => make({ mapSeed: 0.5 })).issues[0]!.field).toBe("mapSeed");
    expect(configError(() => make({ slipSuccessRate: -0.1 })).issues[0]!.field).toBe("slipSuccessRate");
    const format = configError(() => make({ observationFormat: "ascii" }));
    expect(format.issues[0]!.field).toBe("observationFormat");
    expect(format.issues[0]!.allowed).toEqual(["grid", "coord", "grid_coord"]);
    const unknown = configError(() => make({ is_slippery: false }));
    expect(unknown.issues[0]!.field).toBe("is_slippery");
    expect(unknown.message).toContain("is_slippery");
    expect(() => new FrozenLakeEnv({ size: 99 })).toThrow(EnvConfigError);
  });

  it("has RAGEN's presets", () => {
    const presets = listPresets();
    expect(presets.FrozenLake).toMatchObject({ env: "frozenlake", maxActionsPerTraj: 10 });
    expect(presets.FrozenLakeDeterministic).toMatchObject({ env: "frozenlake", maxActionsPerTraj: 10 });
    expect(createEnv<FrozenLakeEnv>("FrozenLake").config.isSlippery).toBe(true);
    expect(createEnv<FrozenLakeEnv>("FrozenLakeDeterministic").config.isSlippery).toBe(false);
    expect(createEnv<FrozenLakeEnv>("FrozenLakeGridCoord").config.observationFormat).toBe("grid_coord");
  });

  it("registers RAGEN-2's CoordFrozenLake: the same env as FrozenLakeGridCoord", () => {
    const presets = listPresets();
    expect(presets.CoordFrozenLake).toMatchObject({
      env: "frozenlake",
      maxActionsPerTraj: presets.FrozenLakeGridCoord!.maxActionsPerTraj,
      config: presets.FrozenLakeGridCoord!.config,
    });
    expect(presets.CoordFrozenLake!.description).toContain("RAGEN-2's CoordFrozenLake");
    const coord = createEnv<FrozenLakeEnv>("CoordFrozenLake");
    const gridCoord = createEnv<FrozenLakeEnv>("FrozenLakeGridCoord");
    expect(coord.config).toEqual(gridCoord.config);
    expect(coord.instructions).toBe(gridCoord.instructions);
    expect(coord.reset(9)).toBe(gridCoord.reset(9));
    expect(coord.reset(9)).toMatch(/^Coordinates: \nBoard size: 4 rows x 4 cols/);
  });
});

describe("FrozenLake map generation", () => {
  it("always yields a solvable map with distinct, varying start and goal", () => {
    const starts = new Set<number>();
    const goals = new Set<number>();
    for (let seed = 0; seed < 400; seed++) {
      const map = generateFrozenLakeMap(4, 0.8, Rng.derive(seed, "test-map"));
      const letters = map.rows.join("");
      expect(letters).toMatch(/^[SFHG]{16}$/);
      expect(letters.split("S").length - 1).toBe(1);
      expect(letters.split("G").length - 1).toBe(1);
      expect(letters[map.start]).toBe("S");
      expect(letters[map.goal]).toBe("G");
      expect(distances(map)[map.goal]).toBeLessThan(Number.POSITIVE_INFINITY);
      expect(frozenLakeHasSafePath(map)).toBe(true);
      starts.add(map.start);
      goals.add(map.goal);
    }
    // Start and goal are random cells, not fixed corners.
    expect(starts.size).toBe(16);
    expect(goals.size).toBe(16);
  });

  it("solvable even when almost everything is a hole", () => {
    for (let seed = 0; seed < 50; seed++) {
      const map = generateFrozenLakeMap(5, 0, new Rng(seed));
      expect(map.rows.join("").replace(/[SG]/g, "")).toBe("H".repeat(23));
      expect(distances(map)[map.goal]).toBe(1);
    }
    expect(generateFrozenLakeMap(6, 1, new Rng(3)).rows.join("")).not.toContain("H");
  });

  it("freezes each drawn cell with probability p", () => {
    let frozen = 0;
    let cells = 0;
    for (let seed = 0; seed < 2000; seed++) {
      const map = sampleFrozenLakeMap(4, 0.8, new Rng(seed));
      if (!map) continue;
      for (const tile of map.rows.join("").replace(/[SG]/g, "")) {
        cells++;
        if (tile === "F") frozen++;
      }
    }
    // ~28000 cells: one standard error is 0.0024.
    expect(Math.abs(frozen / cells - 0.8)).toBeLessThan(0.012);

    // After the solvability check, large maps are rarely rejected, so p still shows.
    let generatedFrozen = 0;
    let generatedCells = 0;
    for (let seed = 0; seed < 400; seed++) {
      const map = generateFrozenLakeMap(8, 0.6, new Rng(seed, "p"));
      for (const tile of map.rows.join("").replace(/[SG]/g, "")) {
        generatedCells++;
        if (tile === "F") generatedFrozen++;
      }
    }
    expect(generatedFrozen / generatedCells).toBeGreaterThan(0.58);
    expect(generatedFrozen / generatedCells).toBeLessThan(0.66);
  });

  it("takes the map from the reset seed, or from mapSeed when set", () => {
    const env = make();
    const maps = new Set<string>();
    for (let seed = 0; seed < 20; seed++) maps.add(env.reset(seed));
    expect(maps.size).toBeGreaterThan(15);

    const fixed = make({ mapSeed: 7 });
    const first = fixed.reset(1);
    const slips: string[] = [];
    for (let seed = 0; seed < 20; seed++) {
      expect(fixed.reset(seed)).toBe(first);
      const trail: string[] = [];
      for (let i = 0; i < 5 && !fixed.done; i++) trail.push(String(fixed.step("Left").info.movedDirection));
      slips.push(trail.join(","));
    }
    expect(new Set(slips).size).toBeGreaterThan(5);
    expect(make({ mapSeed: 7 }).reset(999)).toBe(first);
    expect(make({ mapSeed: null }).reset(3)).toBe(make().reset(3));
  });

  it("parses maps and rejects malformed ones", () => {
    const map = parseFrozenLakeMap(CLASSIC);
    expect(map).toEqual({ size: 4, rows: CLASSIC, start: 0, goal: 15 });
    expect(() => parseFrozenLakeMap(["SF", "F"])).toThrow(/2x2/);
    expect(() => parseFrozenLakeMap(["SX", "FG"])).toThrow(/"X"/);
    expect(() => parseFrozenLakeMap(["SS", "FG"])).toThrow(/more than one "S"/);
    expect(() => parseFrozenLakeMap(["FF", "FG"])).toThrow(/exactly one/);
  });
});

describe("FrozenLake dynamics", () => {
  const open = ["FFFFF", "FFFFF", "FFSFF", "FFFFF", "FFFFG"];

  function slipCounts(config: object, samples: number) {
    const env = make(config);
    const counts = { intended: 0, counterClockwise: 0, clockwise: 0 };
    for (let seed = 0; seed < samples; seed++) {
      env.resetWithMap(open, seed);
      const action = seed % 4;
      const { info } = env.step(FROZEN_LAKE_ACTIONS[action]!);
      const moved = FROZEN_LAKE_ACTIONS.indexOf(info.movedDirection!);
      expect(info.slipped).toBe(moved !== action);
      if (moved === action) counts.intended++;
      else if (moved === (action + 3) % 4) counts.counterClockwise++;
      else if (moved === (action + 1) % 4) counts.clockwise++;
      else throw new Error(`moved backwards: ${info.movedDirection} for ${FROZEN_LAKE_ACTIONS[action]}`);
      // The position matches the direction actually moved (from the centre, no border in the way).
      const [dr, dc] = [
        [0, -1],
        [1, 0],
        [0, 1],
        [-1, 0],
      ][moved]!;
      expect(info.position).toEqual({ row: 2 + dr!, col: 2 + dc! });
    }
    return counts;
  }

  it("slips like gymnasium: 1/3 intended, 1/3 each perpendicular direction", () => {
    const n = 6000;
    const counts = slipCounts({}, n);
    // One standard error of a 1/3 frequency over 6000 steps is 0.0061; allow ~5.
    for (const count of Object.values(counts)) expect(Math.abs(count / n - 1 / 3)).toBeLessThan(0.03);
  });

  it("honours slipSuccessRate", () => {
    const n = 4000;
    const counts = slipCounts({ slipSuccessRate: 0.8 }, n);
    expect(Math.abs(counts.intended / n - 0.8)).toBeLessThan(0.03);
    expect(Math.abs(counts.counterClockwise / n - 0.1)).toBeLessThan(0.025);
    expect(Math.abs(counts.clockwise / n - 0.1)).toBeLessThan(0.025);
  });

  it("moves exactly as told without slipping, and stays put at the border", () => {
    const env = make({ isSlippery: false });
    env.resetWithMap(["SFF", "FFF", "FFG"], 0);
    const left = env.step("Left");
    expect(left.info).toMatchObject({
      actionIsValid: true,
      actionIsEffective: false,
      movedDirection: "Left",
      slipped: false,
      position: { row: 0, col: 0 },
      actionsTaken: 1,
    });
    expect(env.step("Up").info).toMatchObject({ actionIsEffective: false, position: { row: 0, col: 0 } });
    expect(env.step("Right").info).toMatchObject({ actionIsEffective: true, position: { row: 0, col: 1 } });
    expect(env.step("Down").info).toMatchObject({ actionIsEffective: true, position: { row: 1, col: 1 } });
    expect(env.step("Left").info).toMatchObject({ position: { row: 1, col: 0 } });
    expect(env.step("Left").info).toMatchObject({ actionIsEffective: false, position: { row: 1, col: 0 } });
    expect(env.actionsTaken).toBe(6);
    // The same steps on another seed give the same result: no randomness without slipping.
    env.resetWithMap(["SFF", "FFF", "FFG"], 12345);
    expect(env.step("Right").info.position).toEqual({ row: 0, col: 1 });
  });

  it("gives the border outcomes of slippery ice", () => {
    // Up from the top-left corner: slide Left (stay), go Up (stay), or slide Right.
    const outcomes = frozenLakeOutcomes(4, 0, 3, { isSlippery: true, slipSuccessRate: 1 / 3 });
    expect(outcomes.map((o) => [FROZEN_LAKE_ACTIONS[o.direction], o.cell])).toEqual([
      ["Right", 1],
      ["Up", 0],
      ["Left", 0],
    ]);
    expect(outcomes.reduce((a, o) => a + o.probability, 0)).toBeCloseTo(1, 12);
    expect(frozenLakeOutcomes(4, 15, 1, { isSlippery: false, slipSuccessRate: 1 / 3 })).toEqual([
      { direction: 1, probability: 1, cell: 15 },
    ]);
  });

  it("has RAGEN's reward and done table", () => {
    const env = make({ isSlippery: false });
    const cases: {
      map: string[];
      action: string;
      reward: number;
      done: boolean;
      success: boolean;
      view: string;
    }[] = [
      { map: ["SF", "HG"], action: "Right", reward: 0, done: false, success: false, view: "_P\nOG" },
      { map: ["SF", "HG"], action: "Down", reward: 0, done: true, success: false, view: "__\nXG" },
      { map: ["SG", "HF"], action: "Right", reward: 1, done: true, success: true, view: "_√\nO_" },
      { map: ["SG", "HF"], action: "Left", reward: 0, done: false, success: false, view: "PG\nO_" },
    ];
    for (const c of cases) {
      env.resetWithMap(c.map, 0);
      const result = env.step(c.action);
      expect(result).toMatchObject({ reward: c.reward, done: c.done, observation: c.view });
      expect(result.info.success).toBe(c.success);
      expect(env.done).toBe(c.done);
      expect(env.render()).toBe(c.view);
    }
  });

  it("is an invalid no-op after done and before the first reset", () => {
    const fresh = make();
    expect(fresh.done).toBe(true);
    expect(fresh.render()).toBe("");
    expect(fresh.step("Left")).toMatchObject({
      observation: "",
      reward: 0,
      done: true,
      info: { actionIsValid: false },
    });

    const env = make({ isSlippery: false });
    env.resetWithMap(["SG", "FF"], 0);
    env.step("Right");
    const after = env.step("Left");
    expect(after).toMatchObject({ observation: "_√\n__", reward: 0, done: true });
    expect(after.info).toMatchObject({
      actionIsValid: false,
      actionIsEffective: false,
      success: true,
      actionsTaken: 1,
    });
  });

  it("matches action names case-insensitively after trimming; anything else is invalid", () => {
    const env = make({ isSlippery: false });
    env.resetWithMap(CLASSIC, 0);
    expect(env.step("  rIGHT \n").info).toMatchObject({ actionIsValid: true, intendedAction: "Right" });
    for (const bad of ["Rightt", "3", "", "Left || Up", "<answer>Down</answer>", "右", "__proto__"]) {
      const before = env.render();
      const result = env.step(bad);
      expect(result).toMatchObject({ reward: 0, done: false, observation: before });
      expect(result.info).toMatchObject({ actionIsValid: false, actionIsEffective: false, actionsTaken: 1 });
    }
  });

  it("never throws on arbitrary strings and leaves the state alone when they are invalid", () => {
    const env = make();
    const names = new Set(FROZEN_LAKE_ACTIONS.map((a) => a.toLowerCase()));
    fc.assert(
      fc.property(
        fc.integer(),
        fc.array(fc.oneof(fc.string(), fc.constantFrom(...FROZEN_LAKE_ACTIONS))),
        (seed, actions) => {
          env.reset(seed);
          for (const action of actions) {
            const before = { view: env.render(), taken: env.actionsTaken, done: env.done };
            const result = env.step(action);
            const valid = !before.done && names.has(action.trim().toLowerCase());
            expect(result.info.actionIsValid).toBe(valid);
            if (!valid) {
              expect(result.reward).toBe(0);
              expect(env.render()).toBe(before.view);
              expect(env.actionsTaken).toBe(before.taken);
              expect(env.done).toBe(before.done);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("is deterministic: same seed and actions, same trajectory", () => {
    const play = (env: FrozenLakeEnv, seed: number) => {
      const out: unknown[] = [env.reset(seed)];
      const rng = new Rng(seed, "actions");
      for (let i = 0; i < 30 && !env.done; i++) out.push(env.step(rng.choice(FROZEN_LAKE_ACTIONS)));
      return JSON.stringify(out);
    };
    const a = make();
    const b = make();
    for (const seed of [0, 1, -3, 2 ** 40, 123456789]) {
      const first = play(a, seed);
      play(a, seed + 1);
      expect(play(a, seed)).toBe(first);
      expect(play(b, seed)).toBe(first);
    }
    expect(play(a, 1)).not.toBe(play(a, 2));
  });
});

describe("FrozenLake renders", () => {
  it("draws the grid exactly", () => {
    const env = make({ isSlippery: false });
    expect(env.resetWithMap(CLASSIC, 0)).toBe("P___\n_O_O\n___O\nO__G");
    expect(env.step("Right").observation).toBe("_P__\n_O_O\n___O\nO__G");
    expect(env.step("Down").observation).toBe("____\n_X_O\n___O\nO__G");
  });

  it("describes the state by coordinates (RAGEN-2's coord and grid_coord)", () => {
    const coord = make({ isSlippery: false, observationFormat: "coord" });
    expect(coord.resetWithMap(CLASSIC, 0)).toBe(
      [
        "Board size: 4 rows x 4 cols (zero-indexed).",
        "Start: (0, 0)",
        "Goal: (3, 3)",
        "Player: (0, 0)",
        "Holes: (1, 1), (1, 3), (2, 3), (3, 0)",
      ].join("\n"),
    );
    coord.step("Down");
    expect(coord.step("Right").observation).toContain("Player in hole: (1, 1)");

    const both = make({ isSlippery: false, observationFormat: "grid_coord" });
    both.resetWithMap(["SG", "FF"], 0);
    expect(both.step("Right").observation).toBe(
      [
        "Coordinates: ",
        "Board size: 2 rows x 2 cols (zero-indexed).",
        "Start: (0, 0)",
        "Goal: (0, 1)",
        "Player on goal: (0, 1)",
        "Grid Map: ",
        "_√",
        "__",
      ].join("\n"),
    );
  });

  it("draws a well-formed SVG with one rect per cell and a style per kind of cell", () => {
    const env = make({ isSlippery: false });
    env.resetWithMap(CLASSIC, 0);
    const svg = env.renderSvg();
    expect(svgProblems(svg)).toEqual([]);
    expect(svg.match(/<rect /g)).toHaveLength(16);
    expect(svg.match(/<title>hole<\/title>/g)).toHaveLength(4);
    expect(svg).toContain("<title>player</title>");
    expect(svg).toContain("<title>goal</title>");
    env.step("Right");
    env.step("Down");
    const fallen = env.renderSvg();
    expect(svgProblems(fallen)).toEqual([]);
    expect(fallen).toContain("<title>player in a hole</title>");
    expect(fallen.match(/<title>hole<\/title>/g)).toHaveLength(3);
    env.resetWithMap(["SG", "FF"], 0);
    env.step("Right");
    expect(env.renderSvg()).toContain("<title>player on the goal</title>");
    expect(svgProblems(make().renderSvg())).toEqual([]);
  });

  it("tells the agent the rules, the symbols and the actions", () => {
    const text = make().instructions;
    for (const word of [
      "Left",
      "Down",
      "Right",
      "Up",
      "P player",
      "O hole",
      "G goal",
      "X player in a hole",
      "√",
    ]) {
      expect(text).toContain(word);
    }
    expect(text).toContain("slippery");
    expect(make({ isSlippery: false }).instructions).not.toContain("slippery");
    expect(make({ observationFormat: "coord" }).instructions).toContain("(row, col)");
  });
});
