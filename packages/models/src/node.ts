// Node-only entry ("@ragen/models/node"): model folders on disk and the Hugging Face Hub.
export {
  CONFIG_FILE,
  findWeightFiles,
  GENERATION_CONFIG_FILE,
  isCompleteModelFolder,
  type ModelFolder,
  type ModelFolderContents,
  ModelFolderError,
  readModelFolder,
  TOKENIZER_CONFIG_FILE,
  TOKENIZER_FILE,
  type WriteModelFolderOptions,
  writeModelFolder,
} from "./io/folder.js";
export {
  type GgufTensorSource,
  type GgufTensorToStream,
  type WriteGgufFileOptions,
  writeGgufFile,
} from "./io/gguf-writer.js";
export {
  DEFAULT_HUB_URL,
  DEFAULT_REVISION,
  type DownloadProgress,
  huggingFaceCacheDir,
  loadModelFolder,
  ModelUnavailableError,
  type ResolvedModel,
  type ResolveModelOptions,
  repoCacheFolder,
  resolveModel,
} from "./io/hub.js";
export {
  streamAllFromDevice,
  streamFromDevice,
  type TensorSource,
  type TensorSources,
  type TensorToStream,
  type WrittenSafetensors,
  writeSafetensorsFile,
} from "./io/safetensors-writer.js";
export {
  type LoadedQwen2,
  type LoadQwen2Options,
  loadQwen2,
  type SaveQwen2Options,
  saveQwen2,
} from "./model/checkpoint.js";
export { type ExportQwen2GgufOptions, exportQwen2Gguf } from "./model/gguf-export.js";
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  type AdapterConfig,
  isLoraAdapterFolder,
  loadLoraAdapter,
  readAdapterConfig,
  readLoraAdapterWeights,
  writeLoraAdapterFiles,
} from "./model/lora-adapter-files.js";
// Also in the main entry; kept here so existing imports from "@ragen/models/node" go on working.
export { type ReadQwen2WeightsOptions, readQwen2ValueWeights, readQwen2Weights } from "./model/weights.js";
