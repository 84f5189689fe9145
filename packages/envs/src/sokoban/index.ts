import type { EnvSpec } from "../types.js";
import { SOKOBAN_PRESETS, SOKOBAN_SCHEMA, type SokobanConfig } from "./config.js";
import { SokobanEnv } from "./env.js";
import { sokobanGuide } from "./guide.js";
import { sokobanOracle } from "./oracle.js";
import { sokobanThought } from "./thought.js";

export {
  checkSokobanConfig,
  SOKOBAN_CELL_KINDS,
  SOKOBAN_CELL_NAMES,
  SOKOBAN_DEFAULT_SYMBOLS,
  SOKOBAN_OBSERVATION_FORMATS,
  SOKOBAN_PRESETS,
  SOKOBAN_SCHEMA,
  type SokobanCellKind,
  type SokobanConfig,
  type SokobanObservationFormat,
  type SokobanSymbols,
  sokobanMinInteriorCells,
  sokobanMinSearchDepth,
} from "./config.js";
export { SOKOBAN_REWARDS, type SokobanConfigInput, SokobanEnv, type SokobanStepInfo } from "./env.js";
export {
  carveSokobanFloor,
  generateSokobanRoom,
  SOKOBAN_GENERATION,
  SokobanGenerationError,
  type SokobanGenerationOptions,
  tryGenerateSokobanRoom,
} from "./generate.js";
export { type SokobanGuideStep, type SokobanMove, sokobanGuide, sokobanGuideStep } from "./guide.js";
export { SOKOBAN_ORACLE_MAX_STATES, sokobanOracle } from "./oracle.js";
export {
  renderSokobanCoords,
  renderSokobanObservation,
  SOKOBAN_CELL_STYLES,
  sokobanRoomSvg,
} from "./render.js";
export {
  formatSokobanRoom,
  isSokobanSolved,
  makeSokobanRoom,
  parseSokobanRoom,
  type SokobanRoom,
  SokobanRoomError,
  type SokobanTile,
  sokobanBoxesOnTarget,
  sokobanCellKind,
  sokobanCellKinds,
  sokobanStateKey,
} from "./room.js";
export {
  applySokobanMove,
  parseSokobanAction,
  SOKOBAN_ACTIONS,
  SOKOBAN_MOVE_DELTAS,
  type SokobanAction,
  type SokobanMoveResult,
  sokobanNeighbour,
} from "./rules.js";
export { SOKOBAN_SOLVER_DEFAULT_MAX_STATES, type SokobanSolveOptions, solveSokoban } from "./solver.js";
export { sokobanThought } from "./thought.js";

export const sokobanSpec: EnvSpec<SokobanConfig, SokobanEnv> = {
  name: "sokoban",
  description:
    "Push every box onto a target in a generated room (gym-sokoban rules and rooms, RAGEN's text grid)",
  schema: SOKOBAN_SCHEMA,
  create: (config: SokobanConfig) => new SokobanEnv(config),
  oracle: sokobanOracle,
  guide: sokobanGuide,
  thought: sokobanThought,
  presets: SOKOBAN_PRESETS,
};
