import { type ConfigIssue, type ConfigSchema, EnvConfigError } from "../config.js";
import { OBSERVATION_FORMATS, type ObservationFormat } from "../observation-format.js";
import type { EnvPreset } from "../types.js";

export const SOKOBAN_OBSERVATION_FORMATS = OBSERVATION_FORMATS;
export type SokobanObservationFormat = ObservationFormat;

/** The characters a room is written with, one per kind of cell. */
export interface SokobanSymbols {
  wall: string;
  empty: string;
  target: string;
  boxOnTarget: string;
  box: string;
  player: string;
  playerOnTarget: string;
}

export type SokobanCellKind = keyof SokobanSymbols;

export interface SokobanConfig {
  /** Room size as [rows, cols], walls included. */
  dimRoom: [number, number];
  numBoxes: number;
  /** The episode ends after this many valid actions. */
  maxSteps: number;
  /** Depth bound of the reverse-play search that places the boxes (deeper: harder rooms). */
  searchDepth: number;
  symbols: SokobanSymbols;
  /** What an observation shows: the grid, a coordinate description, or both (RAGEN-2). */
  observationFormat: SokobanObservationFormat;
}

/** RAGEN's grid vocabulary. */
export const SOKOBAN_DEFAULT_SYMBOLS: Readonly<SokobanSymbols> = Object.freeze({
  wall: "#",
  empty: "_",
  target: "O",
  boxOnTarget: "√",
  box: "X",
  player: "P",
  playerOnTarget: "S",
});

/** Cell kinds in the order the legend lists them. */
export const SOKOBAN_CELL_KINDS: readonly SokobanCellKind[] = [
  "wall",
  "empty",
  "target",
  "boxOnTarget",
  "box",
  "player",
  "playerOnTarget",
];

/** How the legend names each cell kind. */
export const SOKOBAN_CELL_NAMES: Readonly<Record<SokobanCellKind, string>> = Object.freeze({
  wall: "wall",
  empty: "empty floor",
  target: "target",
  boxOnTarget: "box on a target",
  box: "box",
  player: "player",
  playerOnTarget: "player on a target",
});

function symbolSchema(kind: SokobanCellKind): Record<string, unknown> {
  return {
    type: "string",
    minLength: 1,
    maxLength: 1,
    default: SOKOBAN_DEFAULT_SYMBOLS[kind],
    description: `One character for a ${SOKOBAN_CELL_NAMES[kind]} (RAGEN grid_lookup).`,
  };
}

export const SOKOBAN_SCHEMA: ConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    dimRoom: {
      type: "array",
      items: { type: "integer", minimum: 5, maximum: 20 },
      minItems: 2,
      maxItems: 2,
      default: [6, 6],
      description: "Room size [rows, cols] including the outer walls (RAGEN dim_room).",
    },
    numBoxes: {
      type: "integer",
      minimum: 1,
      maximum: 6,
      default: 3,
      description: "Number of boxes and targets (RAGEN num_boxes).",
    },
    maxSteps: {
      type: "integer",
      minimum: 1,
      maximum: 10000,
      default: 100,
      description: "The episode ends after this many steps (RAGEN max_steps).",
    },
    searchDepth: {
      type: "integer",
      minimum: 6,
      maximum: 1000,
      default: 300,
      description: "Depth bound of the reverse-play search used to generate rooms (RAGEN search_depth).",
    },
    symbols: {
      type: "object",
      additionalProperties: false,
      properties: Object.fromEntries(SOKOBAN_CELL_KINDS.map((kind) => [kind, symbolSchema(kind)])),
      default: { ...SOKOBAN_DEFAULT_SYMBOLS },
      description:
        "The grid vocabulary, one distinct character per cell kind (RAGEN grid_lookup / grid_vocab).",
    },
    observationFormat: {
      type: "string",
      enum: [...SOKOBAN_OBSERVATION_FORMATS],
      default: "grid",
      description:
        "grid: the room as symbols; coord: board size and (row, col) coordinates of the player, boxes, targets and walls (a closed outer wall is named once, then the inner walls); grid_coord: both (RAGEN-2: observation_format).",
    },
  },
};

/**
 * The smallest interior (cells inside the outer walls) for `numBoxes` boxes. Reverse play must leave
 * every target empty and every box and the player off the targets; below about four cells per box
 * most seeds fail (measured: 6x6 with 7 boxes never succeeds, 7x7 with 6 boxes needs ~12 re-seeds).
 */
export function sokobanMinInteriorCells(numBoxes: number): number {
  return 4 * numBoxes;
}

/**
 * The shallowest reverse-play search for `numBoxes` boxes: the player must walk to and pull every box.
 * Below it most seeds fail (measured: 8x8 with 2 boxes at depth 3 never succeeds).
 */
export function sokobanMinSearchDepth(numBoxes: number): number {
  return 4 * numBoxes + 2;
}

/**
 * Checks the schema cannot express: distinct, visible single-character symbols; a room big enough and
 * a search deep enough for the boxes. Throws EnvConfigError naming every bad field.
 */
export function checkSokobanConfig(config: SokobanConfig): void {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, SokobanCellKind>();
  for (const kind of SOKOBAN_CELL_KINDS) {
    const symbol = config.symbols[kind];
    const field = `symbols.${kind}`;
    if ([...symbol].length !== 1) {
      issues.push({ field, message: `must be a single character (got ${JSON.stringify(symbol)})` });
    } else if (/[\p{Cc}\p{Z}]/u.test(symbol)) {
      issues.push({ field, message: `must be a visible character (got ${JSON.stringify(symbol)})` });
    }
    const clash = seen.get(symbol);
    if (clash) {
      issues.push({ field, message: `${JSON.stringify(symbol)} is already the symbol of symbols.${clash}` });
    } else {
      seen.set(symbol, kind);
    }
  }
  const [rows, cols] = config.dimRoom;
  const interior = (rows - 2) * (cols - 2);
  const needed = sokobanMinInteriorCells(config.numBoxes);
  if (interior < needed) {
    issues.push({
      field: "numBoxes",
      message: `${config.numBoxes} boxes need at least ${needed} cells inside the walls; dimRoom [${rows}, ${cols}] has ${interior}`,
    });
  }
  const minDepth = sokobanMinSearchDepth(config.numBoxes);
  if (config.searchDepth < minDepth) {
    issues.push({
      field: "searchDepth",
      message: `must be at least ${minDepth} for ${config.numBoxes} boxes (got ${config.searchDepth})`,
    });
  }
  if (issues.length > 0) throw new EnvConfigError("sokoban", issues);
}

/** RAGEN's Sokoban env tags, and RAGEN-2's CoordSokoban. */
export const SOKOBAN_PRESETS: Record<string, Omit<EnvPreset, "env">> = {
  SimpleSokoban: {
    config: { dimRoom: [6, 6], numBoxes: 1, maxSteps: 100 },
    maxActionsPerTraj: 10,
    description: "Sokoban 6x6 with one box",
  },
  LargerSokoban: {
    config: { dimRoom: [8, 8], numBoxes: 2, maxSteps: 100, searchDepth: 10 },
    maxActionsPerTraj: 10,
    description: "Sokoban 8x8 with two boxes, shallow generation search",
  },
  SokobanDifferentGridVocab: {
    config: {
      dimRoom: [6, 6],
      numBoxes: 1,
      maxSteps: 100,
      searchDepth: 30,
      symbols: {
        wall: "W",
        empty: ".",
        target: "G",
        boxOnTarget: "C",
        box: "B",
        player: "A",
        playerOnTarget: "@",
      },
    },
    maxActionsPerTraj: 10,
    description: "Sokoban 6x6 with one box, drawn with another grid vocabulary",
  },
  CoordSokoban: {
    config: { dimRoom: [6, 6], numBoxes: 1, maxSteps: 100, observationFormat: "grid_coord" },
    maxActionsPerTraj: 10,
    description:
      "RAGEN-2's CoordSokoban preset: SimpleSokoban (6x6, one box) with the grid_coord observation, the coordinates of player, boxes, targets and walls above the grid",
  },
};
