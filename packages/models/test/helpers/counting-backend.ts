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

const sizeOf = (buffer: unknown): number =>
  buffer instanceof ArrayBuffer ? buffer.byteLength : (buffer as { size: number }).size;

/**
 * Wraps `base` so that every allocation and release is counted (the CPU backend keeps no count of its
 * own; on WebGPU this counts pooled buffers by their size class, as the pool does). Tensors made on the
 * wrapper belong to it: do not mix them with the base backend's.
 */
export function countingBackend(base: Backend): CountingBackend {
  let live = 0;
  let peak = 0;
  const backend: Backend = {
    ...base,
    alloc: (bytes) => {
      const buffer = base.alloc(bytes);
      live += sizeOf(buffer);
      peak = Math.max(peak, live);
      return buffer;
    },
    free: (buffer) => {
      live -= sizeOf(buffer);
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
