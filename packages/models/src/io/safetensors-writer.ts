/**
 * Writing a safetensors file one tensor at a time (Node only). The layout is planned from dtypes and
 * shapes alone, the header is written, and then each tensor is read (e.g. from the GPU), encoded and
 * written before the next one is read, so the host holds about one tensor however large the file is.
 * The bytes equal serializeSafetensors' for the same tensors.
 */
import { type FileHandle, open, rm } from "node:fs/promises";
import type { Tensor } from "@ragen/tensor-webgpu";
import { reason, valuesOf, writeAll } from "./file-writes.js";
import {
  checkTensorData,
  encodeTensorData,
  type FloatDtype,
  type NamedTensors,
  planSafetensors,
  SafetensorsError,
  type TensorSpec,
  type TensorToWrite,
  tensorByteLength,
} from "./safetensors.js";

/** A tensor whose values are read only when the writer gets to it. */
export interface TensorToStream extends TensorSpec {
  /** The values as float32 (narrowed to `dtype` on writing); called once, in file order. */
  read(): Promise<Float32Array>;
}

/** A tensor to write: its values already in memory, or read when needed. */
export type TensorSource = TensorToWrite | TensorToStream;

export type TensorSources = NamedTensors<TensorSource>;

/** What was written: each tensor's data size, in file order (for a shard index). */
export interface WrittenSafetensors {
  readonly byteLength: number;
  readonly tensors: readonly { readonly name: string; readonly byteLength: number }[];
}

/** A tensor's values read from the device when the writer reaches it, stored as `dtype` (default F32). */
export function streamFromDevice(tensor: Tensor, dtype: FloatDtype = "F32"): TensorToStream {
  return { dtype, shape: tensor.shape, read: () => tensor.floats() };
}

/** Every tensor of `tensors` read lazily from the device, under the same names. */
export function streamAllFromDevice(
  tensors: Iterable<readonly [string, Tensor]>,
  dtype: FloatDtype = "F32",
): Map<string, TensorToStream> {
  return new Map([...tensors].map(([name, tensor]) => [name, streamFromDevice(tensor, dtype)]));
}

/**
 * Writes `tensors` (+ string metadata such as {format: "pt"}) to a new file at `path`, reading each
 * tensor's values only when its turn comes, and flushes the file to disk. The file must not exist yet.
 * On any failure (a read that throws, a full disk) the file is closed and removed, and the error is a
 * SafetensorsError naming the file and, where one was being written, the tensor; the cause is kept.
 */
export async function writeSafetensorsFile(
  path: string,
  tensors: TensorSources,
  metadata?: Readonly<Record<string, string>>,
): Promise<WrittenSafetensors> {
  const layout = planSafetensors(tensors, metadata);
  let handle: FileHandle;
  try {
    handle = await open(path, "wx");
  } catch (error) {
    throw new SafetensorsError(`cannot be created (${reason(error)})`, { fileName: path });
  }
  let tensorName: string | undefined;
  let step = "writing the header";
  try {
    await writeAll(handle, layout.header);
    for (const { name, tensor } of layout.tensors) {
      tensorName = name;
      step = "reading its values";
      const data = await valuesOf(tensor);
      checkTensorData(tensor, data, { fileName: path, tensorName: name });
      step = "writing";
      await writeAll(handle, encodeTensorData({ dtype: tensor.dtype, data }));
    }
    tensorName = undefined;
    step = "flushing to disk";
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(path, { force: true }).catch(() => {});
    if (error instanceof SafetensorsError) throw error;
    throw new SafetensorsError(`${step} failed (${reason(error)}); the file was removed`, {
      fileName: path,
      tensorName,
      cause: error,
    });
  }
  try {
    await handle.close();
  } catch (error) {
    await rm(path, { force: true }).catch(() => {});
    throw new SafetensorsError(`closing failed (${reason(error)}); the file was removed`, {
      fileName: path,
      cause: error,
    });
  }
  return {
    byteLength: layout.byteLength,
    tensors: layout.tensors.map(({ name, tensor }) => ({ name, byteLength: tensorByteLength(tensor) })),
  };
}
