/**
 * The GGUF format, version 3 (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), as llama.cpp
 * reads it, little-endian throughout:
 *
 *   "GGUF" · u32 version · u64 tensor count · u64 metadata count
 *   metadata: string key · u32 value type · value            (strings: u64 byte length + UTF-8)
 *   tensor infos: string name · u32 dims · u64 dims[] · u32 ggml type · u64 offset
 *   zero padding to the alignment, then each tensor's data at its offset (a multiple of the alignment)
 *
 * A tensor's dims run innermost first (ggml's ne[0] is the row length), the reverse of PyTorch's shape:
 * a [vocab, hidden] embedding is listed as (hidden, vocab). The data bytes are the same row-major f32s.
 *
 * Only f32 tensors are written: the file is for comparing engines, not for shipping quantised models.
 * Browser-safe: builds bytes in memory; "@ragen/models/node" streams them to a file.
 */
import { type NamedTensors, namedTensorEntries } from "./safetensors.js";

export const GGUF_MAGIC = "GGUF";
export const GGUF_VERSION = 3;
/** llama.cpp's alignment when `general.alignment` is absent; it is also written explicitly. */
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** ggml's type id for f32 tensor data. */
export const GGML_TYPE_F32 = 0;

/** gguf_type: the id written before each metadata value (and before an array's elements). */
export const GGUF_VALUE_TYPES = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

/** The element types this writer puts in arrays. */
export type GgufArrayItemType = "string" | "int32" | "uint32" | "float32";

/**
 * One metadata value with its GGUF type. The type matters: llama.cpp refuses a key whose stored type
 * differs from the one it reads (e.g. a uint64 block_count where it expects uint32).
 */
export type GgufValue =
  | { readonly type: "uint32" | "int32" | "float32" | "float64"; readonly value: number }
  | { readonly type: "uint64"; readonly value: bigint | number }
  | { readonly type: "bool"; readonly value: boolean }
  | { readonly type: "string"; readonly value: string }
  | { readonly type: "array"; readonly itemType: "string"; readonly value: readonly string[] }
  | {
      readonly type: "array";
      readonly itemType: Exclude<GgufArrayItemType, "string">;
      readonly value: readonly number[] | Int32Array | Uint32Array | Float32Array;
    };

export type GgufMetadata = ReadonlyMap<string, GgufValue>;

/** An f32 tensor's shape, PyTorch order (outermost first): the writer reverses it into ggml's dims. */
export interface GgufTensorSpec {
  readonly shape: readonly number[];
}

export interface GgufTensorToWrite extends GgufTensorSpec {
  /** Row-major values, `shape`'s product of them. */
  readonly data: Float32Array;
}

export interface PlannedGgufTensor<T extends GgufTensorSpec = GgufTensorSpec> {
  readonly name: string;
  readonly tensor: T;
  /** Where its data starts, relative to the data section (a multiple of the alignment). */
  readonly offset: number;
  readonly byteLength: number;
}

export interface GgufLayout<T extends GgufTensorSpec = GgufTensorSpec> {
  /** Everything before the data section, its padding included: write it, then the tensors in order. */
  readonly header: Uint8Array;
  readonly alignment: number;
  /** Tensors in file order, each followed by `paddingAfter` zero bytes up to the next offset. */
  readonly tensors: readonly (PlannedGgufTensor<T> & { readonly paddingAfter: number })[];
  /** Size of the whole file. */
  readonly byteLength: number;
}

/** Input that cannot be written as GGUF; the message names the key or tensor. */
export class GgufError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GgufError";
  }
}

const textEncoder = new TextEncoder();

/** Little-endian bytes appended to a growing buffer. */
class ByteWriter {
  private bytes = new Uint8Array(1024);
  private view = new DataView(this.bytes.buffer);
  length = 0;

  private reserve(count: number): number {
    const at = this.length;
    if (at + count > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, at + count));
      grown.set(this.bytes.subarray(0, at));
      this.bytes = grown;
      this.view = new DataView(grown.buffer);
    }
    this.length += count;
    return at;
  }

  // Each reserves first: growing replaces the buffer and view, so they are read only after it.
  u8(value: number): void {
    const at = this.reserve(1);
    this.view.setUint8(at, value);
  }
  u32(value: number): void {
    const at = this.reserve(4);
    this.view.setUint32(at, value, true);
  }
  i32(value: number): void {
    const at = this.reserve(4);
    this.view.setInt32(at, value, true);
  }
  u64(value: bigint | number): void {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(value), true);
  }
  f32(value: number): void {
    const at = this.reserve(4);
    this.view.setFloat32(at, value, true);
  }
  f64(value: number): void {
    const at = this.reserve(8);
    this.view.setFloat64(at, value, true);
  }
  raw(bytes: Uint8Array): void {
    const at = this.reserve(bytes.length);
    this.bytes.set(bytes, at);
  }
  string(value: string): void {
    const utf8 = textEncoder.encode(value);
    this.u64(utf8.length);
    this.raw(utf8);
  }
  zeros(count: number): void {
    this.reserve(count); // new capacity is zero-filled, and nothing is ever written twice
  }
  finish(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }
}

function alignUp(offset: number, alignment: number): number {
  return Math.ceil(offset / alignment) * alignment;
}

function checkInteger(key: string, value: number, min: number, max: number, type: string): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new GgufError(`metadata "${key}": ${value} is not a ${type}`);
  }
}

function writeScalar(out: ByteWriter, key: string, type: string, value: unknown): void {
  switch (type) {
    case "uint32":
      checkInteger(key, value as number, 0, 0xffff_ffff, "uint32");
      out.u32(value as number);
      return;
    case "int32":
      checkInteger(key, value as number, -0x8000_0000, 0x7fff_ffff, "int32");
      out.i32(value as number);
      return;
    case "uint64": {
      const big = BigInt(value as bigint | number);
      if (big < 0n || big >= 1n << 64n) throw new GgufError(`metadata "${key}": ${big} is not a uint64`);
      out.u64(big);
      return;
    }
    case "float32":
      out.f32(value as number);
      return;
    case "float64":
      out.f64(value as number);
      return;
    case "bool":
      out.u8(value ? 1 : 0);
      return;
    case "string":
      out.string(value as string);
      return;
    default:
      throw new GgufError(`metadata "${key}": unsupported value type "${type}"`);
  }
}

function writeMetadataValue(out: ByteWriter, key: string, entry: GgufValue): void {
  if (entry.type === "array") {
    out.u32(GGUF_VALUE_TYPES.array);
    out.u32(GGUF_VALUE_TYPES[entry.itemType]);
    out.u64(entry.value.length);
    for (const item of entry.value) writeScalar(out, key, entry.itemType, item);
    return;
  }
  out.u32(GGUF_VALUE_TYPES[entry.type]);
  writeScalar(out, key, entry.type, entry.value);
}

function checkTensorSpec(name: string, tensor: GgufTensorSpec): number {
  if (textEncoder.encode(name).length > 63) {
    // GGML_MAX_NAME is 64 bytes with the terminating NUL.
    throw new GgufError(`tensor "${name}": names are at most 63 bytes`);
  }
  if (tensor.shape.length === 0 || tensor.shape.length > 4) {
    throw new GgufError(`tensor "${name}": shape [${tensor.shape.join(", ")}] must have 1 to 4 dims`);
  }
  for (const dim of tensor.shape) {
    if (!Number.isSafeInteger(dim) || dim <= 0) {
      throw new GgufError(`tensor "${name}": shape [${tensor.shape.join(", ")}] must be positive integers`);
    }
  }
  return tensor.shape.reduce((product, dim) => product * dim, 1);
}

/**
 * The file's layout: header bytes (magic, counts, metadata, tensor infos, padding) and where each
 * tensor's data goes. Tensors keep the order given; metadata keeps its insertion order, with
 * `general.alignment` added when absent.
 */
export function planGguf<T extends GgufTensorSpec>(
  metadata: GgufMetadata,
  tensors: NamedTensors<T>,
): GgufLayout<T> {
  const alignmentEntry = metadata.get("general.alignment");
  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if (alignmentEntry !== undefined) {
    if (alignmentEntry.type !== "uint32" || alignmentEntry.value <= 0 || alignmentEntry.value % 8 !== 0) {
      throw new GgufError(`metadata "general.alignment" must be a uint32 multiple of 8`);
    }
    alignment = alignmentEntry.value;
  }
  const entries = [...metadata.entries()];
  if (alignmentEntry === undefined) entries.push(["general.alignment", { type: "uint32", value: alignment }]);

  const out = new ByteWriter();
  out.raw(textEncoder.encode(GGUF_MAGIC));
  out.u32(GGUF_VERSION);
  const tensorEntries = namedTensorEntries(tensors);
  out.u64(tensorEntries.length);
  out.u64(entries.length);
  for (const [key, value] of entries) {
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)*$/.test(key)) {
      throw new GgufError(`metadata key "${key}" must be dot-separated lower_snake_case`);
    }
    out.string(key);
    writeMetadataValue(out, key, value);
  }

  const planned: (PlannedGgufTensor<T> & { paddingAfter: number })[] = [];
  const names = new Set<string>();
  let offset = 0;
  for (const [name, tensor] of tensorEntries) {
    if (names.has(name)) throw new GgufError(`tensor "${name}" is listed twice`);
    names.add(name);
    const byteLength = checkTensorSpec(name, tensor) * 4;
    out.string(name);
    out.u32(tensor.shape.length);
    for (let i = tensor.shape.length - 1; i >= 0; i--) out.u64(tensor.shape[i]!);
    out.u32(GGML_TYPE_F32);
    out.u64(offset);
    const next = alignUp(offset + byteLength, alignment);
    planned.push({ name, tensor, offset, byteLength, paddingAfter: next - offset - byteLength });
    offset = next;
  }
  // The last tensor needs no padding after it.
  const last = planned.at(-1);
  if (last !== undefined) {
    offset -= last.paddingAfter;
    last.paddingAfter = 0;
  }
  out.zeros(alignUp(out.length, alignment) - out.length);
  const header = out.finish();
  return { header, alignment, tensors: planned, byteLength: header.length + offset };
}

/** A tensor's values as the file stores them: little-endian f32. */
export function encodeGgufTensorData(name: string, tensor: GgufTensorSpec, data: Float32Array): Uint8Array {
  const expected = checkTensorSpec(name, tensor);
  if (data.length !== expected) {
    throw new GgufError(
      `tensor "${name}": ${data.length} values for shape [${tensor.shape.join(", ")}] (${expected} expected)`,
    );
  }
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(i * 4, data[i]!, true);
  return bytes;
}

/** A whole GGUF file in memory. For large models, "@ragen/models/node"'s writeGgufFile streams instead. */
export function serializeGguf(metadata: GgufMetadata, tensors: NamedTensors<GgufTensorToWrite>): Uint8Array {
  const layout = planGguf(metadata, tensors);
  const file = new Uint8Array(layout.byteLength);
  file.set(layout.header);
  for (const { name, tensor, offset } of layout.tensors) {
    file.set(encodeGgufTensorData(name, tensor, tensor.data), layout.header.length + offset);
  }
  return file;
}
