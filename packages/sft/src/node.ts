// Node-only entry ("@ragen/sft/node"): SFT data files, fine-tuning with saved results, LoRA adapters, tiny models.
export { readSftJsonl, writeSftJsonl } from "./node/data-file.js";
export {
  type FineTunedPolicy,
  type FineTuneOptions,
  type FineTuneResult,
  fineTune,
  type LoraTarget,
  saveMergedPolicy,
} from "./node/fine-tune.js";
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  type AdapterConfig,
  loadLoraAdapter,
  readAdapterConfig,
  saveLoraAdapter,
} from "./node/lora-adapter.js";
export { saveTinyModel } from "./node/tiny-model.js";
