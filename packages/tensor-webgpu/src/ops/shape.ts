import { record } from "../autograd.js";
import type { DType } from "../backend.js";
import { emptyTensor } from "../runtime.js";
import { shapeSize, shapeToString, type Tensor, Tensor as TensorClass } from "../tensor.js";
import {
  axisOf,
  backendOf,
  broadcastShapes,
  broadcastStrides,
  contiguousStrides,
  ShapeError,
} from "./util.js";

/** Same data, new shape (free: shares storage). One dimension may be -1. */
export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  x.assertAlive();
  const known = shape.filter((d) => d !== -1);
  const inferred = shape.length - known.length;
  if (inferred > 1) throw new ShapeError(`reshape: more than one -1 in ${shapeToString(shape)}`);
  const knownSize = shapeSize(known);
  const finalShape = shape.map((d) => (d === -1 ? (knownSize === 0 ? 0 : x.size / knownSize) : d));
  if (shapeSize(finalShape) !== x.size || finalShape.some((d) => !Number.isInteger(d))) {
    throw new ShapeError(`reshape: cannot view ${x.describe()} as ${shapeToString(shape)}`);
  }
  const out = new TensorClass(x.storage.retain(), finalShape, x.dtype);
  return record("reshape", out, [x], [], (g) => [reshape(g, x.shape)]);
}

/** Reorder dimensions (a copy: tensors stay contiguous). */
export function permute(x: Tensor, perm: readonly number[]): Tensor {
  const backend = backendOf("permute", x);
  if (perm.length !== x.rank || [...perm].sort().some((p, i) => p !== i)) {
    throw new ShapeError(`permute: ${shapeToString(perm)} is not a permutation of ${x.rank} dimensions`);
  }
  const strides = contiguousStrides(x.shape);
  const shape = perm.map((p) => x.shape[p]!);
  const out = emptyTensor(backend, shape, x.dtype);
  backend.stridedCopy({
    x: x.buffer,
    out: out.buffer,
    shape,
    xStrides: perm.map((p) => strides[p]!),
    dtype: x.dtype,
  });
  const inverse = perm.map((_, i) => perm.indexOf(i));
  return record("permute", out, [x], [], (g) => [permute(g, inverse)]);
}

/** Swap two dimensions. */
export function transpose(x: Tensor, dim0 = -2, dim1 = -1): Tensor {
  const a = axisOf("transpose", dim0, x.rank);
  const b = axisOf("transpose", dim1, x.rank);
  const perm = x.shape.map((_, i) => i);
  perm[a] = b;
  perm[b] = a;
  return permute(x, perm);
}

/** `length` entries of `axis` starting at `start` (a copy). */
export function narrow(x: Tensor, axis: number, start: number, length: number): Tensor {
  const backend = backendOf("narrow", x);
  const a = axisOf("narrow", axis, x.rank);
  const dim = x.shape[a]!;
  if (
    !Number.isInteger(start) ||
    !Number.isInteger(length) ||
    start < 0 ||
    length < 0 ||
    start + length > dim
  ) {
    throw new ShapeError(`narrow: [${start}, ${start + length}) is outside axis ${a} of ${x.describe()}`);
  }
  const shape = [...x.shape];
  shape[a] = length;
  const strides = contiguousStrides(x.shape);
  const out = emptyTensor(backend, shape, x.dtype);
  backend.stridedCopy({
    x: x.buffer,
    out: out.buffer,
    shape,
    xStrides: strides,
    xOffset: start * strides[a]!,
    dtype: x.dtype,
  });
  return record("narrow", out, [x], [], (g) => {
    const grad = emptyTensor(backend, x.shape, g.dtype);
    backend.fill({ out: grad.buffer, n: grad.size, value: 0, dtype: g.dtype });
    backend.stridedCopy({
      x: g.buffer,
      out: grad.buffer,
      shape,
      xStrides: contiguousStrides(shape),
      outStrides: strides,
      outOffset: start * strides[a]!,
      dtype: g.dtype,
    });
    return [grad];
  });
}

/** Join tensors along `axis`. */
export function concat(tensors: readonly Tensor[], axis = 0): Tensor {
  if (tensors.length === 0) throw new ShapeError("concat: no tensors");
  const backend = backendOf("concat", ...tensors);
  const first = tensors[0]!;
  const a = axisOf("concat", axis, first.rank);
  for (const t of tensors) {
    if (
      t.rank !== first.rank ||
      t.dtype !== first.dtype ||
      t.shape.some((d, i) => i !== a && d !== first.shape[i])
    ) {
      throw new ShapeError(`concat: ${t.describe()} does not fit ${first.describe()} along axis ${a}`);
    }
  }
  const shape = [...first.shape];
  shape[a] = tensors.reduce((s, t) => s + t.shape[a]!, 0);
  const out = emptyTensor(backend, shape, first.dtype);
  const outStrides = contiguousStrides(shape);
  let offset = 0;
  for (const t of tensors) {
    backend.stridedCopy({
      x: t.buffer,
      out: out.buffer,
      shape: [...t.shape],
      xStrides: contiguousStrides(t.shape),
      outStrides,
      outOffset: offset * outStrides[a]!,
      dtype: t.dtype,
    });
    offset += t.shape[a]!;
  }
  const starts = tensors.map((_, i) => tensors.slice(0, i).reduce((s, t) => s + t.shape[a]!, 0));
  return record("concat", out, tensors, [], (g) =>
    tensors.map((t, i) => narrow(g, a, starts[i]!, t.shape[a]!)),
  );
}

/** Repeat along broadcast dimensions to reach `shape` (a copy). */
export function broadcastTo(x: Tensor, shape: readonly number[]): Tensor {
  const backend = backendOf("broadcastTo", x);
  const target = broadcastShapes("broadcastTo", x.shape, shape);
  if (target.some((d, i) => d !== shape[i])) {
    throw new ShapeError(`broadcastTo: ${x.describe()} cannot broadcast to ${shapeToString(shape)}`);
  }
  const out = emptyTensor(backend, shape, x.dtype);
  backend.stridedCopy({
    x: x.buffer,
    out: out.buffer,
    shape: [...shape],
    xStrides: broadcastStrides(x.shape, shape),
    dtype: x.dtype,
  });
  return record("broadcastTo", out, [x], [], (g) => [sumToShapeHook!(g, x.shape)]);
}

/** Set by reduce.ts (sum over broadcast dimensions), avoiding an import cycle. */
let sumToShapeHook: ((g: Tensor, shape: readonly number[]) => Tensor) | undefined;
export function setSumToShape(fn: (g: Tensor, shape: readonly number[]) => Tensor): void {
  sumToShapeHook = fn;
}

/**
 * Convert between dtypes: f32 <-> f16 (rounding to nearest even; differentiable: the gradient is cast
 * back to the input's dtype) and f32 <-> i32 (not differentiable). i32 <-> f16 goes through f32.
 */
export function cast(x: Tensor, dtype: DType): Tensor {
  const backend = backendOf("cast", x);
  if (x.dtype === dtype) return reshape(x, x.shape);
  if (x.dtype === "i32" || dtype === "i32") {
    if (x.dtype === "f16" || dtype === "f16")
      throw new TypeError(`cast: ${x.describe()} to ${dtype} must go through f32`);
    const out = emptyTensor(backend, x.shape, dtype);
    backend.cast({ x: x.buffer, out: out.buffer, n: x.size, from: x.dtype, to: dtype });
    return out;
  }
  const out = emptyTensor(backend, x.shape, dtype);
  backend.cast({ x: x.buffer, out: out.buffer, n: x.size, from: x.dtype, to: dtype });
  const from = x.dtype;
  return record("cast", out, [x], [], (g) => [cast(g, from)]);
}

/**
 * Write `source` into `target` starting at index `start` of `axis`, in place (not differentiable: KV
 * caches and buffers the caller owns). `source` must match `target` on every other axis; f16 and f32
 * values are converted to the target's type (an f16 model's keys going into an f32 cache).
 */
export function writeSlice(target: Tensor, source: Tensor, axis: number, start: number): void {
  const backend = backendOf("writeSlice", target, source);
  const a = axisOf("writeSlice", axis, target.rank);
  const converts = source.dtype !== target.dtype && source.dtype !== "i32" && target.dtype !== "i32";
  if (
    source.rank !== target.rank ||
    (source.dtype !== target.dtype && !converts) ||
    source.shape.some((d, i) => (i === a ? start + d > target.shape[i]! : d !== target.shape[i])) ||
    start < 0
  ) {
    throw new ShapeError(
      `writeSlice: ${source.describe()} does not fit ${target.describe()} at ${start} along axis ${a}`,
    );
  }
  const converted = converts ? emptyTensor(backend, source.shape, target.dtype) : source;
  if (converts)
    backend.cast({
      x: source.buffer,
      out: converted.buffer,
      n: source.size,
      from: source.dtype,
      to: target.dtype,
    });
  const outStrides = contiguousStrides(target.shape);
  backend.stridedCopy({
    x: converted.buffer,
    out: target.buffer,
    shape: [...source.shape],
    xStrides: contiguousStrides(source.shape),
    outStrides,
    outOffset: start * outStrides[a]!,
    dtype: target.dtype,
  });
  if (converted !== source) converted.dispose();
}

/**
 * Copies `count` elements of `source` from flat index `sourceOffset` into `target` at `targetOffset`, in
 * place and without gradient (e.g. moving a sequence's cached keys to other slots of a KV cache).
 */
export function copyElements(
  source: Tensor,
  sourceOffset: number,
  target: Tensor,
  targetOffset: number,
  count: number,
): void {
  const backend = backendOf("copyElements", source, target);
  if (
    source.dtype !== target.dtype ||
    ![sourceOffset, targetOffset, count].every((n) => Number.isInteger(n) && n >= 0) ||
    sourceOffset + count > source.size ||
    targetOffset + count > target.size
  ) {
    throw new ShapeError(
      `copyElements: ${count} elements from ${sourceOffset} of ${source.describe()} do not fit ${target.describe()} at ${targetOffset}`,
    );
  }
  if (count === 0) return;
  backend.stridedCopy({
    x: source.buffer,
    out: target.buffer,
    shape: [count],
    xStrides: [1],
    outStrides: [1],
    xOffset: sourceOffset,
    outOffset: targetOffset,
    dtype: source.dtype,
  });
}
