import type { Backend, DType } from "./backend.js";
import { roundToHalves } from "./core/half-float.js";
import { Storage, shapeSize, Tensor } from "./tensor.js";

/**
 * The backend new tensors go to when none is named. Ops run on their inputs' backend; creation
 * functions (`tensor`, `zeros`, ...) use this one unless given `{ backend }`.
 */
let defaultBackend: Backend | undefined;

export function setDefaultBackend(backend: Backend): void {
  defaultBackend = backend;
}

export function getDefaultBackend(): Backend {
  if (!defaultBackend) {
    throw new Error(
      "No backend: call `await useWebGpu()` (or `useCpu()`) first, or pass { backend } when creating tensors",
    );
  }
  return defaultBackend;
}

/**
 * A tensor with uninitialised contents (ops fill it). f16 on a backend without it (WebGPU without the
 * shader-f16 feature) throws, naming the feature.
 */
export function emptyTensor(backend: Backend, shape: readonly number[], dtype: DType = "f32"): Tensor {
  const bytes = Math.max(4, Math.ceil((shapeSize(shape) * backend.elementBytes(dtype)) / 4) * 4);
  return new Tensor(new Storage(backend, backend.alloc(bytes), bytes), shape, dtype);
}

export interface CreateOptions {
  backend?: Backend;
  dtype?: DType;
  requiresGrad?: boolean;
  name?: string;
}

/** A tensor holding `data` (numbers, nested arrays or a typed array) with `shape` (inferred from nested arrays). */
export function tensor(
  data: ArrayLike<number> | readonly unknown[],
  shape?: readonly number[],
  options: CreateOptions = {},
): Tensor {
  const { values, inferred } = flatten(data);
  const finalShape = shape ?? inferred;
  const dtype = options.dtype ?? (data instanceof Int32Array ? "i32" : "f32");
  if (shapeSize(finalShape) !== values.length) {
    throw new RangeError(`tensor(): ${values.length} values do not fill shape [${finalShape.join(", ")}]`);
  }
  const backend = options.backend ?? getDefaultBackend();
  const t = emptyTensor(backend, finalShape, dtype);
  const typed = dtype === "i32" ? Int32Array.from(values) : Float32Array.from(values);
  if (typed.length > 0 && dtype === "f16") writeHalves(backend, t, typed as Float32Array);
  else if (typed.length > 0) backend.write(t.buffer, typed);
  t.requiresGrad = options.requiresGrad ?? false;
  t.name = options.name;
  return t;
}

/** f16 from f32 values: halves on the device are made by its own cast (fast, round to nearest even). */
function writeHalves(backend: Backend, t: Tensor, values: Float32Array): void {
  if (backend.elementBytes("f16") === 4) {
    backend.write(t.buffer, roundToHalves(values));
    return;
  }
  const staging = backend.alloc(values.byteLength);
  try {
    backend.write(staging, values);
    backend.cast({ x: staging, out: t.buffer, n: values.length, from: "f32", to: "f16" });
  } finally {
    backend.free(staging); // recorded work keeps using it safely (the pool reuses it only afterwards)
  }
}

function flatten(data: ArrayLike<number> | readonly unknown[]): {
  values: ArrayLike<number>;
  inferred: number[];
} {
  if (ArrayBuffer.isView(data))
    return { values: data as ArrayLike<number>, inferred: [(data as ArrayLike<number>).length] };
  const shape: number[] = [];
  let level: unknown = data;
  while (Array.isArray(level)) {
    shape.push(level.length);
    level = level[0];
  }
  const values = (data as unknown[]).flat(Number.POSITIVE_INFINITY) as number[];
  if (values.some((v) => typeof v !== "number"))
    throw new TypeError("tensor(): data must contain only numbers");
  if (shapeSize(shape) !== values.length) throw new RangeError("tensor(): nested arrays are ragged");
  return { values, inferred: shape };
}

/** A tensor filled with `value`. */
export function full(shape: readonly number[], value: number, options: CreateOptions = {}): Tensor {
  const backend = options.backend ?? getDefaultBackend();
  const t = emptyTensor(backend, shape, options.dtype ?? "f32");
  backend.fill({ out: t.buffer, n: t.size, value, dtype: t.dtype });
  t.requiresGrad = options.requiresGrad ?? false;
  t.name = options.name;
  return t;
}

export const zeros = (shape: readonly number[], options?: CreateOptions): Tensor => full(shape, 0, options);
export const ones = (shape: readonly number[], options?: CreateOptions): Tensor => full(shape, 1, options);
export const zerosLike = (t: Tensor): Tensor => full(t.shape, 0, { backend: t.backend, dtype: t.dtype });
export const onesLike = (t: Tensor): Tensor => full(t.shape, 1, { backend: t.backend, dtype: t.dtype });
