// Node-only entry ("@ragen/trainer/node"): runs in folders, config files, models from disk or the Hub.
export { EMBEDDED_MODEL_DIR } from "./embedded-model.js";
export { CHECKPOINT_DIR, checkpointActorDir, findCheckpoint } from "./node/checkpoint-files.js";
export { readConfigFile } from "./node/config-file.js";
export { deviceMemoryBudget, SOFTWARE_ADAPTER_HOST_SHARE } from "./node/device-memory.js";
export {
  type EvalRow,
  type EvalSummary,
  evalModelSource,
  formatEvalSummary,
  runEval,
  trainingRunMark,
} from "./node/evaluate.js";
export {
  ARM_SWEEP_FILES,
  type ArmExperiment,
  type ArmExperimentResult,
  type ArmResult,
  type ArmRun,
  type ArmSweepSummary,
  armSeedRuns,
  armSweepReportFile,
  experimentFolder,
  resolveArmSettings,
  runArmExperiment,
  runArms,
  writeArmSweepSummary,
} from "./node/experiments.js";
export { loadPolicyWithProgress, runTrainingJob, trainInFolder } from "./node/job.js";
export { KernelChoiceFiles, ragenCacheDir } from "./node/kernel-choice-files.js";
export { loadPolicy, modelLocation, modelParameterCount } from "./node/load-policy.js";
export { acquireRunLock, LOCK_FILE, type LockHolder, type RunLock } from "./node/run-lock.js";
export {
  parseRunArguments,
  type RunArguments,
  type RunSettingsInput,
  resolveRunPaths,
  resolveRunSettings,
} from "./node/run-settings.js";
export {
  ADAPTERS_DIR,
  NodeRunStorage,
  type NodeRunStorageOptions,
  prepareRunFolder,
  VSTAR_CACHE_FILE,
} from "./node/storage.js";
export {
  checkSweepSettings,
  completedRun,
  runSeedSweep,
  SWEEP_FILES,
  seedFolder,
  seedRunSettings,
  writeSweepSummary,
} from "./node/sweep.js";
