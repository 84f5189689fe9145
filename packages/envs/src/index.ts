export { ACTION_SEPARATOR, MAX_ACTION_LENGTH, readAction } from "./action.js";
export * from "./bandit/index.js";
export { actionBudget, DEFAULT_MAX_ACTIONS_PER_TRAJ, type TurnLimits } from "./budget.js";
export {
  ConfigError,
  type ConfigIssue,
  type ConfigSchema,
  EnvConfigError,
  parseList,
  parseOverrides,
  parseTagValues,
  validateConfig,
} from "./config.js";
export {
  assertEnvConforms,
  type CheckEnvOptions,
  type CheckEnvReport,
  checkEnv,
  EnvConformanceError,
  HOSTILE_ACTIONS,
  svgProblems,
} from "./conformance.js";
export { type CheckRemoteEnvOptions, checkRemoteEnv } from "./conformance-remote.js";
export * from "./countdown/index.js";
export {
  BUILTIN_POLICIES,
  type EpisodeSummary,
  type EvaluateOptions,
  evaluatePolicy,
  type PolicyEvaluation,
  runEpisode,
} from "./evaluate.js";
export * from "./frozenlake/index.js";
export { directionsTowards, type GridCell, type GridMove, thoughtOrder } from "./grid-moves.js";
export { InProcessAsyncEnv } from "./in-process-async-env.js";
export {
  createEnv,
  getEnvSpec,
  guideAction,
  guidePlan,
  guidePlansAhead,
  hasOracle,
  listEnvs,
  listPresets,
  oracleAction,
  type RegisterOptions,
  randomAction,
  registerEnv,
  registerEnvSpec,
  resolveEnvConfig,
  thoughtFor,
  UnknownEnvError,
  unregisterEnv,
} from "./registry.js";
export * from "./remote/index.js";
export { Rng } from "./rng.js";
export * from "./sokoban/index.js";
export { type CellStyle, escapeXml, gridSvg, textPanelSvg } from "./svg.js";
export type {
  ActionPolicy,
  AsyncEnv,
  Env,
  EnvPreset,
  EnvSpec,
  GuidePolicy,
  StepInfo,
  StepResult,
  ThoughtTemplate,
} from "./types.js";
export * from "./webshop/index.js";
