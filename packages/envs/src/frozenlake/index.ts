import type { EnvSpec } from "../types.js";
import { type FrozenLakeConfig, frozenLakeConfigSchema, frozenLakePresets } from "./config.js";
import { FrozenLakeEnv } from "./env.js";
import { frozenLakeGuide } from "./guide.js";
import { frozenLakeOracle } from "./oracle.js";
import { frozenLakeThought } from "./thought.js";

export {
  FROZEN_LAKE_MAX_ACTIONS_PER_TRAJ,
  FROZEN_LAKE_OBSERVATION_FORMATS,
  type FrozenLakeConfig,
  type FrozenLakeObservationFormat,
  frozenLakeConfigSchema,
  frozenLakePresets,
} from "./config.js";
export {
  FROZEN_LAKE_ACTIONS,
  type FrozenLakeAction,
  type FrozenLakeCell,
  type FrozenLakeDynamics,
  type FrozenLakeOutcome,
  frozenLakeMove,
  frozenLakeOutcomes,
  parseFrozenLakeAction,
} from "./dynamics.js";
export { FrozenLakeEnv, type FrozenLakeStepInfo } from "./env.js";
export { frozenLakeGuide, frozenLakeMovesTowardsGoal } from "./guide.js";
export { frozenLakeInstructions } from "./instructions.js";
export {
  type FrozenLakeMap,
  type FrozenLakeTile,
  frozenLakeHasSafePath,
  frozenLakeTile,
  generateFrozenLakeMap,
  parseFrozenLakeMap,
  sampleFrozenLakeMap,
} from "./map.js";
export { createFrozenLakeOracle, type FrozenLakeOracleOptions, frozenLakeOracle } from "./oracle.js";
export {
  FROZEN_LAKE_SYMBOL_LEGEND,
  FROZEN_LAKE_SYMBOLS,
  renderFrozenLakeCoords,
  renderFrozenLakeGrid,
  renderFrozenLakeObservation,
  renderFrozenLakeSvg,
} from "./render.js";
export { frozenLakeThought } from "./thought.js";
export { type FrozenLakePlan, frozenLakeValueIteration } from "./value-iteration.js";

export const frozenLakeSpec: EnvSpec<FrozenLakeConfig, FrozenLakeEnv> = {
  name: "frozenlake",
  description:
    "RAGEN's FrozenLake: reach the goal on a random (slippery) frozen lake without falling into a hole",
  schema: frozenLakeConfigSchema,
  create: (config: FrozenLakeConfig) => new FrozenLakeEnv(config),
  oracle: frozenLakeOracle,
  guide: frozenLakeGuide,
  guidePlansAhead: true,
  thought: frozenLakeThought,
  presets: frozenLakePresets,
};
