// The training job as a library. Browser-safe: file and process I/O live in "@ragen/trainer/node".

export { type EnvBaselines, measureBaselines } from "./run/baselines.js";
export {
  type KernelChoiceStore,
  KernelTuner,
  type TuningPass,
  tunesKernels,
} from "./run/kernel-tuning.js";
export {
  attachActorAdapters,
  checkLoraResume,
  createLoraCritic,
  criticCheckpointWeights,
  loraCheckpointState,
  loraOptions,
  usesLora,
} from "./run/lora.js";
export {
  checkMemoryFit,
  longestSequence,
  type MemorySettings,
  trainingMemoryOptions,
} from "./run/memory-fit.js";
export { MemoryRunStorage } from "./run/memory-storage.js";
export { MAX_NON_FINITE_LOSS_STEPS, NonFiniteLossGuard, nonFiniteLosses } from "./run/non-finite.js";
export {
  AdapterVersions,
  correctForSampler,
  emptyTally,
  freshTrajectories,
  type MismatchTally,
  type SamplerCorrection,
  type SamplerCorrectionOptions,
  targetLogProbs,
  truncatedImportanceWeights,
} from "./run/off-policy.js";
export { type LoadedPolicy, type PolicyLoader, parameterCount } from "./run/policy.js";
export { toTrajectoryRecord } from "./run/records.js";
export {
  adapterNameFor,
  type RemoteBatch,
  RemoteRollouts,
  type RemoteRolloutsContext,
  usesRemoteEngine,
} from "./run/remote-rollouts.js";
export { findResumePoint, nextCheckpointStep } from "./run/resume-point.js";
export type {
  CheckpointParts,
  CheckpointState,
  LoraCheckpointState,
  MetricsHistoryRow,
  RunLogs,
  RunStorage,
  StoredCheckpoint,
} from "./run/storage.js";
export {
  formatTrainingSummary,
  lastLogged,
  summaryRows,
  type TrainingSummary,
  type TrainingSummaryRow,
} from "./run/summary.js";
export {
  buildSweepReport,
  formatArmSweepMarkdown,
  formatSweepMarkdown,
  type MeanWithError,
  meanWithError,
  type SeedResult,
  type SeedRun,
  type SweepEnvSummary,
  type SweepSummary,
  summarizeSweep,
} from "./run/sweep.js";
export {
  GENERATED_TOKENS,
  generatedTokens,
  RUN_DOCUMENTS,
  runTraining,
  type SavedSettings,
  stepPerformance,
  type TrainingRun,
  VSTAR_GENERATED_TOKENS,
} from "./run/train.js";
export {
  astarpoConfig,
  createUpdater,
  type PolicyUpdater,
  starpoConfig,
  type UpdaterContext,
} from "./run/updaters.js";
export {
  actionBudget,
  localPolicyOptions,
  rolloutOptions,
  trainingGroups,
  trainingManager,
  trainingSeed,
  type ValidationResult,
  validate,
  validationEnvs,
  validationManager,
  validationSeeds,
  warnOnCollapse,
} from "./run/validation.js";
export {
  type APOSettings,
  EMBEDDED_MODEL,
  type FieldSpec,
  LIBRARY_DEFAULTS,
  type LoraSettings,
  ROLLOUT_ENGINES,
  type RolloutEngine,
  type RolloutSettings,
  SECTIONS,
  SETTINGS_FIELDS,
  type SectionName,
  type SettingsLayer,
  SIZE_LIMITS,
  type StarPOSettings,
  settingsFields,
  type TrainingSettings,
} from "./settings/fields.js";
export { checkSettingsFit, type ModelFit } from "./settings/fit.js";
export { describeProfileChoice, formatResolvedSettings } from "./settings/print.js";
export {
  ALGORITHM_PROFILES,
  autoProfile,
  canonicalProfile,
  isProfileName,
  LORA_PROFILE,
  PROFILE_ALIASES,
  PROFILES,
  type Profile,
  type ProfileName,
  SMALL_MODEL_PARAMETERS,
  SMALL_MODEL_PROFILE,
} from "./settings/profiles.js";
export {
  RAGEN_BASE_VALUES,
  RAGEN_LORA_VALUES,
  RAGEN_SOURCES,
  RAGEN2_CHANGED_VALUES,
  type RagenValue,
  ragen2Values,
  settingsLayerOf,
} from "./settings/ragen-configs.js";
export {
  type ResolvedSettings,
  remoteRolloutProblems,
  resolveSettings,
  type SettingSource,
  type SettingsFile,
  type SettingsInput,
} from "./settings/resolve.js";
export {
  describeProfiles,
  describeSettings,
  settingsHelp,
  settingsSchema,
} from "./settings/schema.js";
export { SMOKE_RUN_SETTINGS } from "./settings/smoke.js";
