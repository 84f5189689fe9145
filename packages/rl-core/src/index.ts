export { chunks, inputOf, type PackedBatch, packTrajectories, shuffled } from "./batching.js";
export { maskedMean } from "./masked.js";
export { type Metrics, readMetrics } from "./metrics.js";
export { forwardRows, type MiniBatchTraining, trainMiniBatches } from "./minibatches.js";
