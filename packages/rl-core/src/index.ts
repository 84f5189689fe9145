export {
  chunks,
  inputOf,
  type PackedBatch,
  packTrajectories,
  sampledTokenLogProbs,
  shuffled,
} from "./batching.js";
export { boundsProblem, type NumberBounds } from "./bounds.js";
export { maskedMean } from "./masked.js";
export { type Metrics, readMetrics } from "./metrics.js";
export { lengthMicroBatches, MICRO_BATCH_OVERHEAD_TOKENS } from "./micro-batches.js";
export { forwardRows, type MiniBatchTraining, trainMiniBatches } from "./minibatches.js";
