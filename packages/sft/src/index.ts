// Supervised fine-tuning on env chats: the warm start of RL. Browser-safe; files are in "@ragen/sft/node".
export { generateSftDataset, type SftDatasetOptions } from "./dataset.js";
export {
  DEFAULT_SFT_FORMAT,
  type DrillOptions,
  generateReadingDrills,
  generateSftConversations,
  type SftConversation,
  type SftOptions,
  sftCorpus,
  sftFormat,
} from "./sft-data.js";
export { type TinyModel, type TinyModelOptions, tinyModel } from "./tiny-model.js";
export {
  answerTokenWeights,
  packBatch,
  tokenizeConversations,
  type WarmStartOptions,
  warmStart,
} from "./warm-start.js";
