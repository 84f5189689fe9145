import type { FileHandle } from "node:fs/promises";

/** Writes every byte of `bytes` at the handle's position: one `write` may take fewer than asked. */
export async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
    written += bytesWritten;
  }
}

/** A tensor's values: already in memory, or read when the writer gets to it. */
export function valuesOf(
  tensor: { readonly data: Float32Array } | { read(): Promise<Float32Array> },
): Promise<Float32Array> | Float32Array {
  return "read" in tensor ? tensor.read() : tensor.data;
}

/** A caught value's message, for errors that name what failed. */
export function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
