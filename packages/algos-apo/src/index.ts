// Shared with the other algorithm; re-exported so a settings schema can take both packages' bounds from either.
export { boundsProblem, type NumberBounds } from "@ragen/rl-core";
export {
  ASTARPO_BOUNDS,
  ASTARPO_DEFAULTS,
  AStarPO,
  type AStarPOConfig,
  type AStarPOModels,
  type ResolvedAStarPOConfig,
  type VStarLookup,
} from "./astar-po.js";
export {
  canonicalJson,
  MemoryVStarCache,
  parseVStarEntry,
  stateKey,
  type VStarCache,
  type VStarEntry,
  type VStarKey,
  vstarKeyId,
} from "./cache.js";
export {
  APO_LOSS_DEFAULTS,
  type ApoLossInputs,
  type ApoLossOptions,
  type ApoMetricName,
  apoLoss,
} from "./loss.js";
export {
  DEFAULT_VSTAR_SAMPLES,
  estimateVStarForStates,
  type Stage1RolloutOptions,
  VSTAR_DEFAULTS,
  type VStarEstimates,
  type VStarEstimationOptions,
  vstarLookup,
} from "./stage1.js";
export {
  beta1Problem,
  DEFAULT_BETA1,
  estimateVStar,
  MIN_BETA1,
  summarizeSamples,
  type VStarSummary,
} from "./vstar.js";
