/**
 * Writing a GGUF file one tensor at a time (Node only): the header is planned from shapes alone, then
 * each tensor is read (e.g. from the GPU), encoded and written before the next one is read. The bytes
 * equal serializeGguf's for the same input.
 */
import { type FileHandle, open, rm } from "node:fs/promises";
import { reason, valuesOf, writeAll } from "./file-writes.js";
import {
  encodeGgufTensorData,
  GgufError,
  type GgufMetadata,
  type GgufTensorSpec,
  type GgufTensorToWrite,
  planGguf,
} from "./gguf.js";
import type { NamedTensors } from "./safetensors.js";

/** An f32 tensor whose values are read only when the writer gets to it. */
export interface GgufTensorToStream extends GgufTensorSpec {
  read(): Promise<Float32Array>;
}

export type GgufTensorSource = GgufTensorToWrite | GgufTensorToStream;

export interface WriteGgufFileOptions {
  /** Replace an existing file (default: refuse). */
  overwrite?: boolean;
}

/**
 * Writes `metadata` and `tensors` (in the order given) as a GGUF file at `path` and flushes it to disk.
 * On any failure the partial file is removed and the error is a GgufError naming the file and tensor.
 */
export async function writeGgufFile(
  path: string,
  metadata: GgufMetadata,
  tensors: NamedTensors<GgufTensorSource>,
  options: WriteGgufFileOptions = {},
): Promise<{ byteLength: number }> {
  const layout = planGguf(metadata, tensors);
  let handle: FileHandle;
  try {
    handle = await open(path, options.overwrite ? "w" : "wx");
  } catch (error) {
    throw new GgufError(`${path}: cannot be created (${reason(error)})`, { cause: error });
  }
  let step = "writing the header";
  try {
    await writeAll(handle, layout.header);
    for (const { name, tensor, paddingAfter } of layout.tensors) {
      step = `reading tensor "${name}"`;
      const data = await valuesOf(tensor);
      step = `writing tensor "${name}"`;
      await writeAll(handle, encodeGgufTensorData(name, tensor, data));
      if (paddingAfter > 0) await writeAll(handle, new Uint8Array(paddingAfter));
    }
    step = "flushing to disk";
    await handle.sync();
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(path, { force: true }).catch(() => {});
    throw new GgufError(`${path}: ${step} failed (${reason(error)}); the file was removed`, { cause: error });
  }
  return { byteLength: layout.byteLength };
}
