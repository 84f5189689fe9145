export * from "./decode-step.js";
export * from "./elementwise.js";
export * from "./fused-linear.js";
export * from "./losses.js";
export * from "./matmul.js";
export * from "./nn.js";
export { inF32, isHalf } from "./precision.js";
export * from "./reduce.js";
export {
  readSampledRows,
  type SampledRows,
  type SampledRowsOnDevice,
  sampleRows,
  sampleRowsOnDevice,
} from "./sampling.js";
export * from "./shape.js";
export { ShapeError } from "./util.js";
