import type { Backend } from "@ragen/tensor-webgpu";

/** A backend that counts the bytes of tensor storage it has handed out and not yet taken back. */
export interface CountingBackend {
  backend: Backend;
  /** Bytes allocated now. */
  liveBytes(): number;
  /** The most bytes allocated at once since creation or the last `resetPeak()`. */
  peakBytes(): number;
  /** Start a new peak from what is allocated now. */
  resetPeak(): void;
}

/**
 * Wraps `base` so that every allocation and release is counted by the bytes asked for: the tensors'
 * storage, which is what the memory estimate models (a WebGPU pool hands out buffers of a size class, up
 * to 25% larger; that slack is the allocator's, not the model's). Tensors made on the wrapper belong to
 * it: do not mix them with the base backend's.
 */
export function countingBackend(base: Backend): CountingBackend {
  let live = 0;
  let peak = 0;
  const asked = new WeakMap<object, number>();
  const backend: Backend = {
    ...base,
    alloc: (bytes) => {
      const buffer = base.alloc(bytes);
      asked.set(buffer as object, bytes);
      live += bytes;
      peak = Math.max(peak, live);
      return buffer;
    },
    free: (buffer) => {
      live -= asked.get(buffer as object) ?? 0;
      asked.delete(buffer as object);
      base.free(buffer);
    },
  };
  return {
    backend,
    liveBytes: () => live,
    peakBytes: () => peak,
    resetPeak: () => {
      peak = live;
    },
  };
}
