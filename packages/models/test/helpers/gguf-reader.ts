/**
 * A minimal GGUF v3 reader for tests, written from the format description independently of the writer:
 * header, metadata, tensor infos and f32 tensor data.
 */

export interface ReadGgufTensor {
  name: string;
  /** ggml order: innermost dim first. */
  dims: number[];
  type: number;
  /** Absolute offset of its data in the file. */
  fileOffset: number;
}

export interface ReadGguf {
  version: number;
  metadata: Map<string, { type: number; value: unknown }>;
  tensors: Map<string, ReadGgufTensor>;
  alignment: number;
  /** Absolute offset of the data section. */
  dataStart: number;
}

export function readGguf(bytes: Uint8Array): ReadGguf {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let at = 0;
  const u32 = () => {
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const u64 = () => {
    const v = view.getBigUint64(at, true);
    at += 8;
    return Number(v);
  };
  const str = () => {
    const length = u64();
    const s = decoder.decode(bytes.subarray(at, at + length));
    at += length;
    return s;
  };
  const scalar = (type: number): unknown => {
    switch (type) {
      case 0:
        return view.getUint8(at++);
      case 4:
        return u32();
      case 5: {
        const v = view.getInt32(at, true);
        at += 4;
        return v;
      }
      case 6: {
        const v = view.getFloat32(at, true);
        at += 4;
        return v;
      }
      case 7:
        return view.getUint8(at++) === 1;
      case 8:
        return str();
      case 10: {
        const v = view.getBigUint64(at, true);
        at += 8;
        return v;
      }
      case 12: {
        const v = view.getFloat64(at, true);
        at += 8;
        return v;
      }
      default:
        throw new Error(`unexpected value type ${type} at byte ${at}`);
    }
  };

  const magic = decoder.decode(bytes.subarray(0, 4));
  if (magic !== "GGUF") throw new Error(`bad magic ${JSON.stringify(magic)}`);
  at = 4;
  const version = u32();
  const tensorCount = u64();
  const kvCount = u64();
  const metadata = new Map<string, { type: number; value: unknown }>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    const type = u32();
    if (type === 9) {
      const itemType = u32();
      const length = u64();
      const items: unknown[] = [];
      for (let j = 0; j < length; j++) items.push(scalar(itemType));
      metadata.set(key, { type: 9, value: { itemType, items } });
    } else {
      metadata.set(key, { type, value: scalar(type) });
    }
  }
  const infos: { name: string; dims: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const nDims = u32();
    const dims = Array.from({ length: nDims }, () => u64());
    const type = u32();
    const offset = u64();
    infos.push({ name, dims, type, offset });
  }
  const alignment = (metadata.get("general.alignment")?.value as number | undefined) ?? 32;
  const dataStart = Math.ceil(at / alignment) * alignment;
  const tensors = new Map<string, ReadGgufTensor>();
  for (const info of infos) {
    tensors.set(info.name, {
      name: info.name,
      dims: info.dims,
      type: info.type,
      fileOffset: dataStart + info.offset,
    });
  }
  return { version, metadata, tensors, alignment, dataStart };
}

/** An f32 tensor's values, copied out of the file. */
export function ggufTensorValues(bytes: Uint8Array, tensor: ReadGgufTensor): Float32Array {
  if (tensor.type !== 0) throw new Error(`${tensor.name}: type ${tensor.type} is not f32`);
  const count = tensor.dims.reduce((a, b) => a * b, 1);
  const view = new DataView(bytes.buffer, bytes.byteOffset + tensor.fileOffset, count * 4);
  return Float32Array.from({ length: count }, (_, i) => view.getFloat32(i * 4, true));
}
