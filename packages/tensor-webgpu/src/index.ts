// Device and low-level recording

export {
  backward,
  checkpoint,
  GraphFreedError,
  isGradEnabled,
  noGrad,
  noGradAsync,
  record,
} from "./autograd.js";
// Tensors, memory scopes and autograd
export type { Backend, BinaryOp, DType, FloatDType, ReduceOp, UnaryOp } from "./backend.js";
// Backends
export { type CpuBackend, createCpuBackend } from "./backends/cpu.js";
export {
  createWebGpuBackend,
  MissingFeatureError,
  type WebGpuBackend,
  webGpuBackend,
} from "./backends/webgpu.js";
// The binary16 / bfloat16 converter (checkpoints, f16 tensors; @ragen/models re-exports it)
export {
  bfloat16ArrayToFloat32,
  bfloat16BitsToFloat32,
  bitsToFloat32,
  float16ArrayToFloat32,
  float16BitsToFloat32,
  float16BitsToFloat32Bits,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
  float32BitsToBfloat16Bits,
  float32BitsToFloat16Bits,
  float32ToBfloat16Bits,
  float32ToBits,
  float32ToFloat16Bits,
} from "./core/half-float.js";
export { BufferPool, type PoolStats, sizeClass } from "./gpu/buffer-pool.js";
export {
  type Binding,
  type ContextOptions,
  type ContextStats,
  GpuContext,
  GpuValidationError,
  grid,
  type Resource,
  type TextureBinding,
} from "./gpu/context.js";
export {
  type AcquiredDevice,
  type AdapterSummary,
  acquireDevice,
  DeviceLostError,
  type DeviceOptions,
  NoAdapterError,
} from "./gpu/device.js";
export { fullGarbageCollector } from "./gpu/garbage-collector.js";
export type { KernelProfile, KernelTime } from "./gpu/kernel-profiler.js";
export {
  type PooledTexture,
  TexturePool,
  type TexturePoolStats,
  textureSizeClass,
} from "./gpu/texture-pool.js";
export { blockFor, waitForGpu } from "./gpu/wait.js";
// Kernels measured per adapter: matmul kernels, attention tiles and forms, their tables and tuners
export { timeAttentionForms, tuneAttentionForms } from "./kernels/attention/form-tuning.js";
export {
  ATTENTION_FORMS,
  type AttentionForm,
  type AttentionFormProblem,
  type AttentionFormTable,
  type AttentionPass,
  attentionForms,
  disableAttentionFormTuning,
  enableAttentionFormTuning,
  parseAttentionFormEntries,
  type TunedAttentionForm,
} from "./kernels/attention/forms.js";
export {
  type AttentionTileTable,
  attentionTiles,
  disableAttentionTuning,
  enableAttentionTuning,
  parseAttentionEntries,
  type Tile,
  type TiledDispatch,
  type TunedTile,
  tileName,
} from "./kernels/attention/tile-choices.js";
export { timeAttentionTiles, tuneAttentionTiles } from "./kernels/attention/tile-tuning.js";
// Which attention kernels run (tile lists by adapter kind, the texture kernels on software adapters, the
// forward's and backward's forms)
export { attentionTuning } from "./kernels/attention/tiles.js";
export {
  disableKernelTuning,
  enableKernelTuning,
  KERNEL_TUNING_FORMAT,
  type KernelTuningFile,
  type KernelTuningOptions,
  type KernelTuningPass,
  loadKernelTuning,
  measuredKernelProblems,
  pendingKernelProblems,
  saveKernelTuning,
  tuneKernels,
} from "./kernels/kernel-tuning.js";
export {
  adapterKey,
  type CandidateTime,
  choiceName,
  disableMatmulTuning,
  enableMatmulTuning,
  KernelTuningFileError,
  type MatmulChoice,
  MatmulChoiceTable,
  type MatmulShape,
  type MatmulVariant,
  matmulChoices,
  matmulShapeKey,
  parseMatmulEntries,
  type RejectedKernel,
  type TunedMatmul,
} from "./kernels/matmul-choices.js";
export type { BlockedTile, MatrixTile } from "./kernels/matmul-gpu.js";
export {
  matmulCandidates,
  type TuneOptions,
  timeMatmulCandidates,
  tuneMatmuls,
} from "./kernels/matmul-tuning.js";
export { RESULT_TOLERANCE, resultMismatch } from "./kernels/tuning-check.js";
export type { TuningTable } from "./kernels/tuning-table.js";
export {
  type CandidateTimes,
  REPLACE_MARGIN,
  type RejectedCandidate,
  type TimingOptions,
  type TuningPassOptions,
} from "./kernels/tuning-timer.js";
export * from "./ops/index.js";
export {
  AdamW,
  type AdamWMoments,
  type AdamWOptions,
  type AdamWState,
  type LossScalingOptions,
  type StepResult,
} from "./optim.js";
export {
  type CreateOptions,
  emptyTensor,
  full,
  getDefaultBackend,
  ones,
  onesLike,
  setDefaultBackend,
  tensor,
  zeros,
  zerosLike,
} from "./runtime.js";
export { asyncScope, Storage, scope, shapeSize, Tensor, TensorDisposedError } from "./tensor.js";
export { useCpu, useWebGpu } from "./use.js";
