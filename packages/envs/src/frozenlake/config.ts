import type { ConfigSchema } from "../config.js";
import { OBSERVATION_FORMATS, type ObservationFormat } from "../observation-format.js";
import type { EnvPreset } from "../types.js";

export const FROZEN_LAKE_OBSERVATION_FORMATS = OBSERVATION_FORMATS;
export type FrozenLakeObservationFormat = ObservationFormat;

export interface FrozenLakeConfig {
  /** Side of the square lake. */
  size: number;
  /** Probability that a generated cell is frozen (not a hole). */
  p: number;
  isSlippery: boolean;
  /** When set, every reset plays the map generated from this seed; else the reset seed picks the map. */
  mapSeed?: number | null;
  observationFormat: FrozenLakeObservationFormat;
  /** On slippery ice, the probability of moving in the chosen direction. */
  slipSuccessRate: number;
}

/** RAGEN caps a FrozenLake trajectory at this many actions (its max_actions_per_traj). */
export const FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ = 10;

export const frozenLakeConfigSchema: ConfigSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    size: {
      type: "integer",
      minimum: 2,
      maximum: 16,
      default: 4,
      description: "Side of the square lake in cells (RAGEN: size).",
    },
    p: {
      type: "number",
      minimum: 0,
      maximum: 1,
      default: 0.8,
      description:
        "Probability that a generated cell is frozen; the rest are holes (RAGEN: p; its docstring calls it the hole probability, the code uses it for frozen cells).",
    },
    isSlippery: {
      type: "boolean",
      default: true,
      description: "Slippery ice: moves may slide to a perpendicular direction (RAGEN: is_slippery).",
    },
    mapSeed: {
      type: ["integer", "null"],
      description:
        "Seed of a fixed map for every episode; the reset seed then only drives the slips. Absent or null: the reset seed also generates the map, as RAGEN does (RAGEN: map_seed).",
    },
    observationFormat: {
      type: "string",
      enum: [...FROZEN_LAKE_OBSERVATION_FORMATS],
      default: "grid",
      description:
        "grid: the map as symbols; coord: board size and (row, col) coordinates of start, goal, player and holes; grid_coord: both (RAGEN-2: observation_format).",
    },
    slipSuccessRate: {
      type: "number",
      minimum: 0,
      maximum: 1,
      default: 1 / 3,
      description:
        "On slippery ice, the probability of moving in the chosen direction; each perpendicular direction gets half the rest (gymnasium: success_rate).",
    },
  },
};

export const frozenLakePresets: Record<string, Omit<EnvPreset, "env">> = {
  FrozenLake: {
    config: {},
    maxActionsPerTraj: FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ,
    description: "RAGEN's FrozenLake: random 4x4 slippery lake, 80% frozen cells, 10 actions per trajectory",
  },
  FrozenLakeDeterministic: {
    config: { isSlippery: false },
    maxActionsPerTraj: FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ,
    description: "FrozenLake without slipping: every move goes where it is told",
  },
  FrozenLakeGridCoord: {
    config: { observationFormat: "grid_coord" },
    maxActionsPerTraj: FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ,
    description:
      "RAGEN's FrozenLake with RAGEN-2's grid_coord observation: the grid plus the coordinates of player, goal and holes",
  },
  CoordFrozenLake: {
    config: { observationFormat: "grid_coord" },
    maxActionsPerTraj: FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ,
    description:
      "RAGEN-2's CoordFrozenLake preset: the same env as FrozenLakeGridCoord (RAGEN's FrozenLake, grid_coord observation) under RAGEN-2's name",
  },
};
