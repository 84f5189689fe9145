/**
 * A buffer's size in bytes, remembered. `GPUBuffer.size` is a native getter: in a decoding step's
 * recording, the matmul's size checks alone took about 4% of the time (measured on lavapipe). A
 * buffer's size never changes, so a WeakMap keeps it (and lets the buffer go).
 */
const sizes = new WeakMap<GPUBuffer, number>();

export function bufferBytes(buffer: GPUBuffer): number {
  let size = sizes.get(buffer);
  if (size === undefined) {
    size = buffer.size;
    sizes.set(buffer, size);
  }
  return size;
}
