// Browser-safe entry: checkpoint formats on in-memory bytes. Files, folders and the Hub are in "@ragen/models/node".

export {
  bfloat16ArrayToFloat32,
  bfloat16BitsToFloat32,
  float16ArrayToFloat32,
  float16BitsToFloat32,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from "@ragen/tensor-webgpu";
export {
  formatHuggingFaceJson,
  type ParseQwen2ConfigOptions,
  parseQwen2Config,
  pythonFloatRepr,
  QWEN2_5_0_5B_INSTRUCT_CONFIG,
  type Qwen2Config,
  Qwen2ConfigError,
  qwen2ConfigToJson,
  serializeQwen2Config,
  type TorchDtype,
} from "./io/config.js";
export {
  encodeGgufTensorData,
  GGML_TYPE_F32,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_VALUE_TYPES,
  GGUF_VERSION,
  type GgufArrayItemType,
  GgufError,
  type GgufLayout,
  type GgufMetadata,
  type GgufTensorSpec,
  type GgufTensorToWrite,
  type GgufValue,
  type PlannedGgufTensor,
  planGguf,
  serializeGguf,
} from "./io/gguf.js";
export {
  type Qwen2GgufMetadataOptions,
  qwen2GgufMetadata,
  qwen2GgufTensorName,
  qwen2GgufTensors,
} from "./io/gguf-qwen2.js";
export {
  checkTensorData,
  decodeToFloat32,
  encodeTensorData,
  type FloatDtype,
  MAX_SAFETENSORS_HEADER_BYTES,
  type NamedTensors,
  namedTensorEntries,
  type ParseSafetensorsOptions,
  type PlannedTensor,
  parseSafetensors,
  parseSafetensorsHeader,
  planSafetensors,
  SAFETENSORS_DTYPE_BYTES,
  type SafetensorsDtype,
  SafetensorsError,
  SafetensorsFile,
  type SafetensorsHeader,
  type SafetensorsLayout,
  type SafetensorsTensorInfo,
  serializeSafetensors,
  type TensorReader,
  type TensorSpec,
  type TensorsToWrite,
  type TensorToWrite,
  tensorByteLength,
} from "./io/safetensors.js";
export {
  buildShardIndex,
  parseShardIndex,
  SAFETENSORS_INDEX_FILE,
  SAFETENSORS_SINGLE_FILE,
  ShardedSafetensors,
  type ShardIndex,
} from "./io/sharded.js";
export {
  DEFAULT_PREFILL_TOKENS,
  type GenerateOptions,
  type Generation,
  generate,
  NonFiniteLogitsError,
  prefillRows,
} from "./model/generate.js";
export { NormalSampler } from "./model/init.js";
export { LoraAdapters, type LoraOptions, type LoraTarget, QWEN2_LINEAR_MODULES } from "./model/lora.js";
export {
  estimateTrainingMemory,
  MemoryEstimateError,
  PRECISION_BYTES,
  type Precision,
  type TrainingMemoryBreakdown,
  type TrainingMemoryEstimate,
  type TrainingMemoryOptions,
} from "./model/memory.js";
export { type PackedLayer, PackedProjections } from "./model/packed-projections.js";
export { PrefixCache, type PrefixMatch } from "./model/prefix-cache.js";
export {
  KvCache,
  type ModelDtype,
  Qwen2Model,
  type Qwen2Shape,
  Qwen2WeightsError,
  qwen2ParameterShapes,
  type TokenBatch,
} from "./model/qwen2.js";
export {
  checkSamplingOptions,
  type SampledToken,
  type SamplingOptions,
  sampleToken,
} from "./model/sampling.js";
export { Qwen2ValueModel, type ValueHeadInit } from "./model/value.js";
export { type ReadQwen2WeightsOptions, readQwen2ValueWeights, readQwen2Weights } from "./model/weights.js";
