import type { TensorReader } from "../io/safetensors.js";
import { type Qwen2Shape, qwen2ParameterShapes } from "./qwen2.js";

/**
 * f32 weights of every parameter the config needs, read from safetensors already in memory (a folder's
 * files in Node, fetched bytes in a browser). Absent names are left out, so Qwen2Model.fromWeights names them.
 */
export function readQwen2Weights(checkpoint: {
  readonly config: Qwen2Shape;
  readonly weights: TensorReader;
}): Map<string, Float32Array> {
  const weights = new Map<string, Float32Array>();
  for (const [name] of qwen2ParameterShapes(checkpoint.config)) {
    if (checkpoint.weights.has(name)) weights.set(name, checkpoint.weights.toFloat32(name));
  }
  return weights;
}
