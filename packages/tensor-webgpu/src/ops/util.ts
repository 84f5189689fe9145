import type { Backend, FloatDType } from "../backend.js";
import { shapeToString, type Tensor } from "../tensor.js";

export class ShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShapeError";
  }
}

/** The backend shared by all `tensors` (they must not mix backends). */
export function backendOf(op: string, ...tensors: (Tensor | undefined)[]): Backend {
  let backend: Backend | undefined;
  for (const t of tensors) {
    if (!t) continue;
    t.assertAlive();
    if (backend && t.backend !== backend) {
      throw new Error(`${op}: inputs live on different backends (${backend.name} and ${t.backend.name})`);
    }
    backend = t.backend;
  }
  if (!backend) throw new Error(`${op}: no tensor input`);
  return backend;
}

export function expectDType(op: string, t: Tensor, dtype: "f32" | "i32"): void {
  if (t.dtype !== dtype) throw new TypeError(`${op}: expected an ${dtype} tensor, got ${t.describe()}`);
}

/**
 * The float dtype every tensor given has (f32, or f16: an f16 model's halves, which the fused kernels read
 * as halves), or undefined for a mix or i32 (the caller then runs the separate ops).
 */
export function sharedFloatDtype(tensors: readonly Tensor[]): FloatDType | undefined {
  const dtype = tensors[0]?.dtype;
  if (dtype === undefined || dtype === "i32" || tensors.some((t) => t.dtype !== dtype)) return undefined;
  return dtype;
}

/** t's dtype when it is a float one (f32 or f16); a TypeError naming `op` otherwise. */
export function floatDtypeOf(op: string, t: Tensor): FloatDType {
  if (t.dtype === "i32") throw new TypeError(`${op}: expected an f32 or f16 tensor, got ${t.describe()}`);
  return t.dtype;
}

export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= shape[i]!;
  }
  return strides;
}

/** NumPy broadcasting of two shapes. */
export function broadcastShapes(op: string, a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new ShapeError(`${op}: shapes ${shapeToString(a)} and ${shapeToString(b)} do not broadcast`);
    }
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** Strides that read `shape` as if broadcast to `target` (0 along broadcast dimensions). */
export function broadcastStrides(shape: readonly number[], target: readonly number[]): number[] {
  const own = contiguousStrides(shape);
  const offset = target.length - shape.length;
  return target.map((d, i) => {
    const j = i - offset;
    if (j < 0) return 0;
    return shape[j] === 1 && d !== 1 ? 0 : own[j]!;
  });
}

/** Normalise a possibly negative axis. */
export function axisOf(op: string, axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(a) || a < 0 || a >= rank)
    throw new ShapeError(`${op}: axis ${axis} out of range for rank ${rank}`);
  return a;
}

/** Whether two shapes are the same dimensions. */
export function equalShapes(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function sameShape(op: string, a: Tensor, b: Tensor): void {
  if (!equalShapes(a.shape, b.shape)) {
    throw new ShapeError(`${op}: shapes ${shapeToString(a.shape)} and ${shapeToString(b.shape)} differ`);
  }
}

/**
 * Whether one kernel can append a step's `seqLen` tokens per sequence to `cache` at `positions` (i32, one
 * per token): caches of the same shape, [batch, capacity, kvHeads, headDim], in two different buffers (a
 * kernel may not write one buffer through two bindings).
 */
export function appendFits(
  cache: { keys: Tensor; values: Tensor },
  positions: Tensor,
  dims: { batch: number; seqLen: number; headDim: number },
): boolean {
  const { keys, values } = cache;
  return (
    equalShapes(keys.shape, values.shape) &&
    keys.shape[0] === dims.batch &&
    keys.buffer !== values.buffer &&
    keys.shape[3] === dims.headDim &&
    positions.dtype === "i32" &&
    positions.size === dims.batch * dims.seqLen
  );
}
