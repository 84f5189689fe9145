/**
 * Work on buffers larger than one storage binding may be (maxStorageBufferBindingSize: 128 MiB on lavapipe,
 * less than [512, 151936] f32 logits or a 151936 x 896 embedding table) is split into batches, each
 * binding only the window of bytes it touches. A window's offset must be a multiple of
 * minStorageBufferOffsetAlignment, so it starts at the aligned address at or below the batch's first byte
 * and the kernel skips `shift` elements. Binding exact windows also keeps a pooled buffer that is larger
 * than the limit (pooled buffers are larger than asked) bindable when its contents are not.
 */
import { bufferBytes } from "../gpu/buffer-bytes.js";
import type { Binding, GpuContext } from "../gpu/context.js";

let testingLimit: number | undefined;

/** Pretend bindings may be at most `bytes` long (to test batching on small data); undefined restores. */
export function limitBindingsForTesting(bytes: number | undefined): void {
  testingLimit = bytes;
}

function alignment(ctx: GpuContext): number {
  return ctx.device.limits.minStorageBufferOffsetAlignment;
}

/** The most bytes one storage binding may span here (the device's limit, or the testing limit). */
export function maxBindingBytes(ctx: GpuContext): number {
  return Math.min(ctx.device.limits.maxStorageBufferBindingSize, testingLimit ?? Number.POSITIVE_INFINITY);
}

/** Bytes one batch may span, leaving room for the misalignment a window may start with. */
function batchCapacity(ctx: GpuContext): number {
  const limit = Math.min(
    ctx.device.limits.maxStorageBufferBindingSize,
    testingLimit ?? Number.POSITIVE_INFINITY,
  );
  return limit - alignment(ctx);
}

export interface Batch {
  /** First unit of the batch. */
  first: number;
  /** Units in the batch. */
  count: number;
}

/**
 * Splits `total` units (rows, tokens, elements) of `unitBytes` bytes into batches that each fit one binding;
 * batch sizes are multiples of `multipleOf` (except the last). One batch when everything fits.
 */
export function batches(ctx: GpuContext, total: number, unitBytes: number, multipleOf = 1): Batch[] {
  const perBatch = Math.floor(batchCapacity(ctx) / unitBytes / multipleOf) * multipleOf;
  if (perBatch < 1 && total > 0) {
    throw new RangeError(
      `${unitBytes * multipleOf} bytes do not fit one storage binding (at most ${batchCapacity(ctx)} here)`,
    );
  }
  const result: Batch[] = [];
  for (let first = 0; first < total || result.length === 0; first += perBatch) {
    result.push({ first, count: Math.min(perBatch, total - first) });
  }
  return result;
}

export interface BindingWindow {
  binding: Binding;
  /** Elements of `elementBytes` between the window's start and the first byte asked for. */
  shift: number;
}

/**
 * The binding of bytes [start, start + bytes) of `buffer`, starting at the aligned address at or below
 * `start`; `start` must be a multiple of `elementBytes`.
 */
export function bindingWindow(
  ctx: GpuContext,
  buffer: GPUBuffer,
  start: number,
  bytes: number,
  elementBytes: number,
): BindingWindow {
  const offset = Math.floor(start / alignment(ctx)) * alignment(ctx);
  const size = Math.max(16, Math.ceil((start - offset + bytes) / 4) * 4);
  return {
    binding: { buffer, offset, size: Math.min(size, bufferBytes(buffer) - offset) },
    shift: (start - offset) / elementBytes,
  };
}

/**
 * Windows of the same byte range [batch.first * unitBytes, +batch.count * unitBytes) in several buffers of
 * the same layout; they share one shift (in elements of `elementBytes`).
 */
export function batchWindows(
  ctx: GpuContext,
  buffers: GPUBuffer[],
  batch: Batch,
  unitBytes: number,
  elementBytes: number,
): { bindings: Binding[]; shift: number } {
  const windows = buffers.map((buffer) =>
    bindingWindow(ctx, buffer, batch.first * unitBytes, batch.count * unitBytes, elementBytes),
  );
  return { bindings: windows.map((w) => w.binding), shift: windows[0]?.shift ?? 0 };
}

/**
 * A buffer bound from its start, indexed at random (so not batchable): at most the binding limit of it.
 * Its contents must fit within that limit.
 */
export function wholeBinding(ctx: GpuContext, buffer: GPUBuffer): Binding {
  const limit = Math.min(
    ctx.device.limits.maxStorageBufferBindingSize,
    testingLimit ?? Number.POSITIVE_INFINITY,
  );
  return { buffer, offset: 0, size: Math.min(bufferBytes(buffer), Math.floor(limit / 16) * 16) };
}
