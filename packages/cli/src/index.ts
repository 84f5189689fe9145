// The job behind `ragen train` and `npm run quest` (StarPO / A*-PO on multi-turn envs), its evaluation and
// supervised fine-tuning, for examples and users to run their own experiments with.

export { type EnvListing, formatEnvListing, listEnvironments } from "./commands/envs.js";
export { runRagen } from "./commands/main.js";
export { type PlayStreams, playCommand } from "./commands/play.js";
export { type ArmExperiment, type ArmResult, type ArmRun, resolveArmConfigs, runArms } from "./job/arms.js";
export { type CheckpointState, checkpointActorDir, findCheckpoint } from "./job/checkpoint.js";
export {
  EMBEDDED_MODEL,
  type QuestConfig,
  questConfigSchema,
  type ResolveOptions,
  resolveQuestConfig,
  resolveQuestPaths,
  type SizeDependentSettings,
  SMALL_MODEL_PARAMETERS,
  sizeDependentSettings,
  trainingGroups,
  validationEnvs,
} from "./job/config.js";
export { type ConfigFile, ConfigFileError, readConfigFile } from "./job/config-file.js";
export { describeConfigFields } from "./job/config-help.js";
export {
  type EvalRow,
  type EvalSummary,
  evalModelSource,
  formatEvalSummary,
  runEval,
} from "./job/evaluate.js";
export {
  type JobArgs,
  type JobCliOptions,
  jobHelp,
  parseJobArgs,
  resolveJobConfig,
  runJob,
  runQuestCli,
} from "./job/job-cli.js";
export { type LoadedPolicy, loadPolicy, parameterCount } from "./job/model.js";
export { toTrajectoryRecord } from "./job/records.js";
export { SMOKE_RUN_SETTINGS, saveTinyModel, type TinyModelOptions } from "./job/tiny-model.js";
export { formatQuestSummary, type QuestSummary, type QuestSummaryRow, runQuest } from "./job/train.js";
export {
  actionBudget,
  rolloutOptions,
  type ValidationResult,
  validate,
  validationManager,
  validationSeeds,
} from "./job/validate.js";
export { readSftJsonl, writeSftJsonl } from "./sft/data-file.js";
export { generateSftDataset, type SftDatasetOptions } from "./sft/dataset.js";
export {
  type FineTuneOptions,
  type FineTuneResult,
  fineTune,
  type LoraTarget,
  saveMergedPolicy,
} from "./sft/fine-tune.js";
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  type AdapterConfig,
  loadLoraAdapter,
  readAdapterConfig,
  saveLoraAdapter,
} from "./sft/lora-adapter.js";
export {
  DEFAULT_SFT_FORMAT,
  type DrillOptions,
  generateReadingDrills,
  generateSftConversations,
  type SftConversation,
  type SftOptions,
  sftCorpus,
  sftFormat,
} from "./sft/sft-data.js";
export {
  answerTokenWeights,
  packBatch,
  tokenizeConversations,
  type WarmStartOptions,
  warmStart,
} from "./sft/warm-start.js";
