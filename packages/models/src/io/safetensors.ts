/**
 * The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * header length N, N bytes of JSON `{name: {dtype, shape, data_offsets: [begin, end]},
 * "__metadata__"?: {string: string}}` (space-padded to 8-byte alignment), then the raw
 * little-endian tensor data; data_offsets are relative to the start of the data.
 *
 * Browser-safe: works on in-memory bytes only.
 */
import {
  bfloat16ArrayToFloat32,
  float16ArrayToFloat32,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
} from "@ragen/tensor-webgpu";

/** Every dtype with a whole number of bytes per element that the reference implementation defines. */
export type SafetensorsDtype =
  | "BOOL"
  | "U8"
  | "I8"
  | "F8_E5M2"
  | "F8_E4M3"
  | "I16"
  | "U16"
  | "F16"
  | "BF16"
  | "I32"
  | "U32"
  | "F32"
  | "F64"
  | "I64"
  | "U64";

/** The dtypes this package converts from and to float32. */
export type FloatDtype = "F32" | "F16" | "BF16";

export const SAFETENSORS_DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
};

/**
 * Writers order tensors by this rank, largest first, then by name, so every tensor stays aligned
 * to its element size. Same order as the reference implementation's dtype enum.
 */
const DTYPE_WRITE_RANK: Readonly<Record<SafetensorsDtype, number>> = {
  BOOL: 0,
  U8: 1,
  I8: 2,
  F8_E5M2: 3,
  F8_E4M3: 4,
  I16: 5,
  U16: 6,
  F16: 7,
  BF16: 8,
  I32: 9,
  U32: 10,
  F32: 11,
  F64: 12,
  I64: 13,
  U64: 14,
};

/** Same limit as the reference implementation: a larger header is a corrupt or hostile file. */
export const MAX_SAFETENSORS_HEADER_BYTES = 100_000_000;

const METADATA_KEY = "__metadata__";

/** A malformed or unusable safetensors file; the message names the file, the tensor and the problem. */
export class SafetensorsError extends Error {
  readonly fileName: string | undefined;
  readonly tensorName: string | undefined;

  constructor(
    problem: string,
    context: { fileName?: string | undefined; tensorName?: string | undefined; cause?: unknown },
  ) {
    const where = context.fileName ?? "safetensors data";
    const tensor = context.tensorName === undefined ? "" : ` tensor "${context.tensorName}":`;
    super(`${where}:${tensor} ${problem}`, "cause" in context ? { cause: context.cause } : undefined);
    this.name = "SafetensorsError";
    this.fileName = context.fileName;
    this.tensorName = context.tensorName;
  }
}

export interface SafetensorsTensorInfo {
  readonly name: string;
  readonly dtype: SafetensorsDtype;
  readonly shape: readonly number[];
  /** [begin, end) in bytes, relative to the start of the data section. */
  readonly dataOffsets: readonly [number, number];
  readonly elementCount: number;
}

export interface SafetensorsHeader {
  /** Bytes before the data section: 8 + the JSON header's length. */
  readonly dataStart: number;
  /** Tensors in data order. */
  readonly tensors: readonly SafetensorsTensorInfo[];
  readonly metadata: Readonly<Record<string, string>>;
}

export interface ParseSafetensorsOptions {
  /** Used in error messages. */
  fileName?: string;
}

/** Read access to named tensors, from one safetensors file or several shards. */
export interface TensorReader {
  names(): string[];
  has(name: string): boolean;
  /** Throws a SafetensorsError naming the tensor when it is absent. */
  info(name: string): SafetensorsTensorInfo;
  /** The tensor's raw little-endian bytes, a view into the file's bytes (no copy). */
  bytes(name: string): Uint8Array;
  /** The tensor as float32 values (F32, F16, BF16 or F64), in a new array or in `out`. */
  toFloat32(name: string, out?: Float32Array): Float32Array;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isDtype(value: unknown): value is SafetensorsDtype {
  return typeof value === "string" && Object.hasOwn(SAFETENSORS_DTYPE_BYTES, value);
}

function isByteCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function asBytes(data: ArrayBuffer | Uint8Array): Uint8Array {
  return data instanceof Uint8Array ? data : new Uint8Array(data);
}

/** Reads the header's length from the first 8 bytes, checking it against the file's size. */
function readHeaderLength(bytes: Uint8Array, fileName: string | undefined, fileByteLength: number): number {
  if (fileByteLength < 8) {
    throw new SafetensorsError(
      `file is truncated: ${fileByteLength} bytes, but the header length alone takes 8`,
      { fileName },
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const high = view.getUint32(4, true);
  const length = high * 2 ** 32 + view.getUint32(0, true);
  if (high !== 0 || length > MAX_SAFETENSORS_HEADER_BYTES) {
    throw new SafetensorsError(
      `header length ${length} exceeds the ${MAX_SAFETENSORS_HEADER_BYTES}-byte limit (not a safetensors file?)`,
      { fileName },
    );
  }
  if (length < 2)
    throw new SafetensorsError(`header length ${length} is too small for a JSON object`, { fileName });
  if (8 + length > fileByteLength) {
    throw new SafetensorsError(
      `file is truncated: the header needs ${length} bytes after the first 8, but the file has ${fileByteLength - 8}`,
      { fileName },
    );
  }
  return length;
}

function parseMetadata(value: unknown, fileName: string | undefined): Record<string, string> {
  if (!isPlainObject(value)) {
    throw new SafetensorsError(`"${METADATA_KEY}" must be an object of strings, got ${describe(value)}`, {
      fileName,
    });
  }
  const metadata: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") {
      throw new SafetensorsError(
        `"${METADATA_KEY}" entry "${key}" must be a string, got ${describe(entry)}`,
        {
          fileName,
        },
      );
    }
    metadata[key] = entry;
  }
  return metadata;
}

function parseTensorEntry(
  name: string,
  value: unknown,
  dataByteLength: number,
  fileName: string | undefined,
): SafetensorsTensorInfo {
  const fail = (problem: string) => new SafetensorsError(problem, { fileName, tensorName: name });
  if (!isPlainObject(value)) throw fail(`entry must be an object, got ${describe(value)}`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (!isDtype(dtype)) {
    throw fail(
      `unknown dtype ${describe(dtype)} (known: ${Object.keys(SAFETENSORS_DTYPE_BYTES).join(", ")})`,
    );
  }
  if (!Array.isArray(shape) || !shape.every(isByteCount)) {
    throw fail(`shape must be an array of non-negative integers, got ${describe(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isByteCount)) {
    throw fail(`data_offsets must be [begin, end] byte offsets, got ${describe(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin) throw fail(`data_offsets [${begin}, ${end}] end before they begin`);
  if (end > dataByteLength) {
    throw fail(
      `data_offsets [${begin}, ${end}] run past the end of the data (${dataByteLength} bytes): file truncated?`,
    );
  }
  const elementCount = shape.reduce((product: number, dim: number) => product * dim, 1);
  const expectedBytes = elementCount * SAFETENSORS_DTYPE_BYTES[dtype];
  if (!Number.isSafeInteger(expectedBytes)) throw fail(`shape ${describe(shape)} is too large`);
  if (end - begin !== expectedBytes) {
    throw fail(
      `data_offsets [${begin}, ${end}] hold ${end - begin} bytes, but shape ${describe(shape)} of ${dtype} needs ${expectedBytes}`,
    );
  }
  return { name, dtype, shape: [...shape], dataOffsets: [begin, end], elementCount };
}

/** Rejects tensors whose byte ranges overlap (empty tensors overlap nothing). */
function checkNoOverlap(tensors: SafetensorsTensorInfo[], fileName: string | undefined): void {
  let previous: SafetensorsTensorInfo | undefined;
  for (const tensor of tensors) {
    const [begin, end] = tensor.dataOffsets;
    if (begin === end) continue;
    if (previous !== undefined && begin < previous.dataOffsets[1]) {
      throw new SafetensorsError(
        `data_offsets [${begin}, ${end}] overlap those of "${previous.name}" [${previous.dataOffsets.join(", ")}]`,
        { fileName, tensorName: tensor.name },
      );
    }
    previous = tensor;
  }
}

/**
 * Parses and validates the header. `bytes` must hold at least the first 8 + N bytes of the file;
 * `fileByteLength` (default: bytes.length) is the whole file's size, used to check data offsets.
 */
export function parseSafetensorsHeader(
  data: ArrayBuffer | Uint8Array,
  options: ParseSafetensorsOptions & { fileByteLength?: number } = {},
): SafetensorsHeader {
  const bytes = asBytes(data);
  const { fileName } = options;
  const fileByteLength = options.fileByteLength ?? bytes.length;
  const headerLength = readHeaderLength(bytes, fileName, fileByteLength);
  if (bytes.length < 8 + headerLength) {
    throw new SafetensorsError(`need the first ${8 + headerLength} bytes to read the header`, { fileName });
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(
      bytes.subarray(8, 8 + headerLength),
    );
  } catch {
    throw new SafetensorsError("header is not valid UTF-8", { fileName });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SafetensorsError(`header is not valid JSON (${(error as Error).message})`, { fileName });
  }
  if (!isPlainObject(json))
    throw new SafetensorsError(`header must be a JSON object, got ${describe(json)}`, { fileName });

  const dataStart = 8 + headerLength;
  const dataByteLength = fileByteLength - dataStart;
  let metadata: Record<string, string> = {};
  const tensors: SafetensorsTensorInfo[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (name === METADATA_KEY) metadata = parseMetadata(value, fileName);
    else tensors.push(parseTensorEntry(name, value, dataByteLength, fileName));
  }
  tensors.sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1]);
  checkNoOverlap(tensors, fileName);
  return { dataStart, tensors, metadata };
}

const hostIsLittleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Little-endian 16-bit words of `bytes` (which may be unaligned) as a Uint16Array. */
function readUint16LE(bytes: Uint8Array): Uint16Array {
  const count = bytes.length / 2;
  if (hostIsLittleEndian && bytes.byteOffset % 2 === 0)
    return new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  const words = new Uint16Array(count);
  for (let i = 0; i < count; i++) words[i] = bytes[2 * i]! | (bytes[2 * i + 1]! << 8);
  return words;
}

function checkOutput(
  length: number,
  out: Float32Array | undefined,
  context: { fileName?: string; tensorName: string },
) {
  if (out !== undefined && out.length !== length) {
    throw new SafetensorsError(`output array has ${out.length} elements, the tensor has ${length}`, context);
  }
  return out ?? new Float32Array(length);
}

/** Converts a tensor's raw little-endian bytes to float32. */
export function decodeToFloat32(
  dtype: SafetensorsDtype,
  bytes: Uint8Array,
  out?: Float32Array,
  context: { fileName?: string; tensorName?: string } = {},
): Float32Array {
  const tensorName = context.tensorName ?? "(unnamed)";
  const where = { ...context, tensorName };
  const count = bytes.length / SAFETENSORS_DTYPE_BYTES[dtype];
  switch (dtype) {
    case "F32": {
      const result = checkOutput(count, out, where);
      if (hostIsLittleEndian) {
        new Uint8Array(result.buffer, result.byteOffset, bytes.length).set(bytes);
      } else {
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
        for (let i = 0; i < count; i++) result[i] = view.getFloat32(4 * i, true);
      }
      return result;
    }
    case "F16":
      return float16ArrayToFloat32(readUint16LE(bytes), checkOutput(count, out, where));
    case "BF16":
      return bfloat16ArrayToFloat32(readUint16LE(bytes), checkOutput(count, out, where));
    case "F64": {
      const result = checkOutput(count, out, where);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
      for (let i = 0; i < count; i++) result[i] = view.getFloat64(8 * i, true);
      return result;
    }
    default:
      throw new SafetensorsError(`dtype ${dtype} cannot be read as float32; use bytes() for raw data`, where);
  }
}

/** A parsed safetensors file held in memory. */
export class SafetensorsFile implements TensorReader {
  readonly fileName: string | undefined;
  readonly header: SafetensorsHeader;
  private readonly fileBytes: Uint8Array;
  private readonly byName: ReadonlyMap<string, SafetensorsTensorInfo>;

  constructor(data: ArrayBuffer | Uint8Array, options: ParseSafetensorsOptions = {}) {
    this.fileBytes = asBytes(data);
    this.fileName = options.fileName;
    this.header = parseSafetensorsHeader(this.fileBytes, options);
    this.byName = new Map(this.header.tensors.map((tensor) => [tensor.name, tensor]));
  }

  get metadata(): Readonly<Record<string, string>> {
    return this.header.metadata;
  }

  /** Tensor names in data order. */
  names(): string[] {
    return this.header.tensors.map((tensor) => tensor.name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  info(name: string): SafetensorsTensorInfo {
    const tensor = this.byName.get(name);
    if (tensor === undefined) {
      throw new SafetensorsError("no such tensor in this file", {
        fileName: this.fileName,
        tensorName: name,
      });
    }
    return tensor;
  }

  bytes(name: string): Uint8Array {
    const [begin, end] = this.info(name).dataOffsets;
    const start = this.header.dataStart;
    return this.fileBytes.subarray(start + begin, start + end);
  }

  toFloat32(name: string, out?: Float32Array): Float32Array {
    const context = { tensorName: name, ...(this.fileName === undefined ? {} : { fileName: this.fileName }) };
    return decodeToFloat32(this.info(name).dtype, this.bytes(name), out, context);
  }
}

/** Parses and validates a whole safetensors file. */
export function parseSafetensors(
  data: ArrayBuffer | Uint8Array,
  options: ParseSafetensorsOptions = {},
): SafetensorsFile {
  return new SafetensorsFile(data, options);
}

// ---------------------------------------------------------------------------------------------
// Writing

/** What a file's layout needs to know of a tensor: no values, so a writer can plan before reading any. */
export interface TensorSpec {
  /** The dtype stored in the file; float32 values are narrowed to it with round-to-nearest-even. */
  readonly dtype: FloatDtype;
  readonly shape: readonly number[];
}

export interface TensorToWrite extends TensorSpec {
  readonly data: Float32Array;
}

/** Tensors by name, as a plain object or a Map. */
export type NamedTensors<T> = Readonly<Record<string, T>> | ReadonlyMap<string, T>;

export type TensorsToWrite = NamedTensors<TensorToWrite>;

export interface PlannedTensor<T extends TensorSpec = TensorToWrite> {
  readonly name: string;
  readonly tensor: T;
  /** [begin, end) relative to the start of the data section. */
  readonly dataOffsets: readonly [number, number];
}

/** Where everything goes in a file to be written; lets a writer stream one tensor at a time. */
export interface SafetensorsLayout<T extends TensorSpec = TensorToWrite> {
  /** The 8-byte length followed by the space-padded JSON header. */
  readonly header: Uint8Array;
  /** Tensors in the order their data follows the header. */
  readonly tensors: readonly PlannedTensor<T>[];
  readonly byteLength: number;
}

/** The entries of tensors given as a plain object or a Map, in insertion order. */
export function namedTensorEntries<T>(tensors: NamedTensors<T>): [string, T][] {
  return tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors as Record<string, T>);
}

function elementCountOf(shape: readonly number[]): number {
  return shape.reduce((product, dim) => product * dim, 1);
}

/** How many bytes a tensor's data takes in the file. */
export function tensorByteLength(tensor: TensorSpec): number {
  return elementCountOf(tensor.shape) * SAFETENSORS_DTYPE_BYTES[tensor.dtype];
}

const utf8 = new TextEncoder();

/** Orders strings by their UTF-8 bytes, as byte-wise string comparison elsewhere does. */
function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const left = utf8.encode(a);
  const right = utf8.encode(b);
  const length = Math.min(left.length, right.length);
  for (let i = 0; i < length; i++) if (left[i] !== right[i]) return left[i]! - right[i]!;
  return left.length - right.length;
}

function validateTensorSpec(name: string, tensor: TensorSpec): void {
  const fail = (problem: string) => new SafetensorsError(problem, { tensorName: name });
  if (name === METADATA_KEY) throw fail(`"${METADATA_KEY}" is reserved for metadata`);
  if (tensor.dtype !== "F32" && tensor.dtype !== "F16" && tensor.dtype !== "BF16") {
    throw fail(`cannot write dtype ${describe(tensor.dtype)} (F32, F16 or BF16)`);
  }
  if (!Array.isArray(tensor.shape) || !tensor.shape.every(isByteCount)) {
    throw fail(`shape must be an array of non-negative integers, got ${describe(tensor.shape)}`);
  }
  if (!Number.isSafeInteger(tensorByteLength(tensor)))
    throw fail(`shape ${describe(tensor.shape)} is too large`);
}

/** Checks that `data` holds exactly the values `tensor`'s shape calls for. */
export function checkTensorData(
  tensor: TensorSpec,
  data: unknown,
  context: { fileName?: string; tensorName: string },
): asserts data is Float32Array {
  if (!(data instanceof Float32Array)) throw new SafetensorsError("data must be a Float32Array", context);
  const elementCount = elementCountOf(tensor.shape);
  if (elementCount !== data.length) {
    throw new SafetensorsError(
      `shape ${describe(tensor.shape)} has ${elementCount} elements, data has ${data.length}`,
      context,
    );
  }
}

/**
 * Lays out a file the way the reference Python implementation does, so equal inputs give equal
 * bytes: data sorted by dtype (widest first) then by name, the header holding `__metadata__` first
 * (keys sorted) and then the tensors in data order, compact JSON padded with spaces to 8 bytes.
 * Only dtypes and shapes are needed; tensors that carry `data` have it checked against their shape.
 */
export function planSafetensors<T extends TensorSpec = TensorToWrite>(
  tensors: NamedTensors<T>,
  metadata?: Readonly<Record<string, string>>,
): SafetensorsLayout<T> {
  const entries = namedTensorEntries(tensors);
  for (const [name, tensor] of entries) {
    validateTensorSpec(name, tensor);
    if ("data" in tensor) checkTensorData(tensor, tensor.data, { tensorName: name });
  }
  entries.sort(
    ([nameA, a], [nameB, b]) =>
      DTYPE_WRITE_RANK[b.dtype] - DTYPE_WRITE_RANK[a.dtype] || compareUtf8(nameA, nameB),
  );

  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    const sorted: Record<string, string> = {};
    for (const key of Object.keys(metadata).sort(compareUtf8)) {
      const value = metadata[key];
      if (typeof value !== "string") {
        throw new SafetensorsError(`metadata "${key}" must be a string, got ${describe(value)}`, {});
      }
      sorted[key] = value;
    }
    header[METADATA_KEY] = sorted;
  }
  let offset = 0;
  const planned: PlannedTensor<T>[] = [];
  for (const [name, tensor] of entries) {
    const end = offset + tensorByteLength(tensor);
    header[name] = { dtype: tensor.dtype, shape: [...tensor.shape], data_offsets: [offset, end] };
    planned.push({ name, tensor, dataOffsets: [offset, end] });
    offset = end;
  }

  const json = utf8.encode(JSON.stringify(header));
  const paddedLength = Math.ceil(json.length / 8) * 8;
  const headerBytes = new Uint8Array(8 + paddedLength).fill(0x20, 8 + json.length);
  headerBytes.set(json, 8);
  const view = new DataView(headerBytes.buffer);
  view.setUint32(0, paddedLength % 2 ** 32, true);
  view.setUint32(4, Math.floor(paddedLength / 2 ** 32), true);
  return { header: headerBytes, tensors: planned, byteLength: headerBytes.length + offset };
}

/** A tensor's data as little-endian bytes of its dtype (F32 data on a little-endian host: no copy). */
export function encodeTensorData(tensor: Pick<TensorToWrite, "dtype" | "data">): Uint8Array {
  let words: Float32Array | Uint16Array;
  if (tensor.dtype === "F32") words = tensor.data;
  else if (tensor.dtype === "F16") words = float32ArrayToFloat16(tensor.data);
  else words = float32ArrayToBfloat16(tensor.data);
  const bytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
  if (hostIsLittleEndian) return bytes;
  // Big-endian host: swap each element's bytes into file order.
  const size = words.BYTES_PER_ELEMENT;
  const swapped = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i += size) {
    for (let j = 0; j < size; j++) swapped[i + j] = bytes[i + size - 1 - j]!;
  }
  return swapped;
}

/** Serialises tensors (+ string metadata such as {format: "pt"}) into one safetensors file. */
export function serializeSafetensors(
  tensors: TensorsToWrite,
  metadata?: Readonly<Record<string, string>>,
): Uint8Array<ArrayBuffer> {
  const layout = planSafetensors(tensors, metadata);
  const file = new Uint8Array(layout.byteLength);
  file.set(layout.header, 0);
  for (const { tensor, dataOffsets } of layout.tensors) {
    file.set(encodeTensorData(tensor), layout.header.length + dataOffsets[0]);
  }
  return file;
}
