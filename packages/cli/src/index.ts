// The StarPO job behind `npm run quest`, for other examples to run their own experiments with.

export { type ArmExperiment, type ArmResult, type ArmRun, resolveArmConfigs, runArms } from "./arms.js";
export { type JobCliOptions, runQuestCli } from "./cli.js";
export {
  EMBEDDED_MODEL,
  learningRates,
  type QuestConfig,
  resolveQuestConfig,
  resolveQuestPaths,
  validationEnvs,
} from "./config.js";
export { SMOKE_RUN_SETTINGS, saveTinyModel, type TinyModelOptions } from "./tiny-model.js";
export { formatQuestSummary, type QuestSummary, type QuestSummaryRow, runQuest } from "./train.js";
