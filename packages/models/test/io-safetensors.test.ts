import { readFileSync } from "node:fs";
import { join } from "node:path";
import { float32ToBits } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import {
  MAX_SAFETENSORS_HEADER_BYTES,
  parseSafetensors,
  parseSafetensorsHeader,
  planSafetensors,
  SafetensorsError,
  serializeSafetensors,
  type TensorToWrite,
} from "../src/io/safetensors.js";

const FIXTURES = join(import.meta.dirname, "fixtures", "io");

/** Written by PyTorch + the safetensors Python library (see fixtures/io/make-fixtures.py). */
const mixedFile = new Uint8Array(readFileSync(join(FIXTURES, "mixed.safetensors")));
const expected = JSON.parse(readFileSync(join(FIXTURES, "mixed.expected.json"), "utf8")) as {
  inputs: Record<string, number[]>;
  widened: Record<string, number[]>;
  halfBits: number[];
  bfloatBits: number[];
};

function floatsFromBits(bits: readonly number[]): Float32Array {
  return new Float32Array(new Uint32Array(bits).buffer);
}

function bitsOf(values: Float32Array): number[] {
  return [...new Uint32Array(values.buffer, values.byteOffset, values.length)];
}

/** A safetensors file from a header object and data bytes, spelled out from the format's definition. */
function buildFile(header: unknown, data: Uint8Array = new Uint8Array(0), headerText?: string): Uint8Array {
  const json = new TextEncoder().encode(headerText ?? JSON.stringify(header));
  const file = new Uint8Array(8 + json.length + data.length);
  new DataView(file.buffer).setUint32(0, json.length, true);
  file.set(json, 8);
  file.set(data, 8 + json.length);
  return file;
}

function errorOf(action: () => unknown): SafetensorsError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(SafetensorsError);
    return error as SafetensorsError;
  }
  throw new Error("expected a SafetensorsError");
}

describe("reading a file written by the Python library", () => {
  const file = parseSafetensors(mixedFile, { fileName: "mixed.safetensors" });

  it("lists tensors, dtypes, shapes and metadata", () => {
    expect(file.metadata).toEqual({ format: "pt" });
    expect(file.names().sort()).toEqual(["a_half", "b_float", "c_brain", "d_scalar", "e_empty"]);
    expect(file.info("a_half")).toMatchObject({ dtype: "F16", shape: [18], elementCount: 18 });
    expect(file.info("c_brain")).toMatchObject({ dtype: "BF16", shape: [3, 4], elementCount: 12 });
    expect(file.info("d_scalar")).toMatchObject({ dtype: "F32", shape: [], elementCount: 1 });
    expect(file.info("e_empty")).toMatchObject({ dtype: "F32", shape: [0], elementCount: 0 });
  });

  it("widens F32, F16 and BF16 to the values PyTorch computes", () => {
    expect(bitsOf(file.toFloat32("b_float"))).toEqual(expected.inputs.b_float);
    expect([...file.toFloat32("d_scalar")]).toEqual([7]);
    expect(file.toFloat32("e_empty").length).toBe(0);
    expect(bitsOf(file.toFloat32("c_brain"))).toEqual(expected.widened.c_brain);
    // PyTorch widens the f16 NaN to a different NaN pattern; any NaN is right there.
    const half = file.toFloat32("a_half");
    expected.widened.a_half!.forEach((bits, i) => {
      const want = floatsFromBits([bits])[0]!;
      if (Number.isNaN(want)) expect(half[i]).toBeNaN();
      else expect(float32ToBits(half[i]!)).toBe(bits);
    });
  });

  it("gives raw bytes as a view into the file", () => {
    const raw = file.bytes("a_half");
    expect(raw.buffer).toBe(mixedFile.buffer);
    const words = [...Array(raw.length / 2).keys()].map((i) => raw[2 * i]! | (raw[2 * i + 1]! << 8));
    expect(words).toEqual(expected.halfBits);
  });

  it("reads the same from an unaligned copy and from an ArrayBuffer", () => {
    const shifted = new Uint8Array(mixedFile.length + 1);
    shifted.set(mixedFile, 1);
    const unaligned = parseSafetensors(shifted.subarray(1));
    const fromBuffer = parseSafetensors(mixedFile.slice().buffer);
    for (const name of file.names()) {
      expect(bitsOf(unaligned.toFloat32(name))).toEqual(bitsOf(file.toFloat32(name)));
      expect(bitsOf(fromBuffer.toFloat32(name))).toEqual(bitsOf(file.toFloat32(name)));
    }
  });

  it("fills a caller's array and checks its length", () => {
    const out = new Float32Array(6);
    expect(file.toFloat32("b_float", out)).toBe(out);
    expect(() => file.toFloat32("b_float", new Float32Array(5))).toThrow(/5 elements.*6/);
  });

  it("names the file and tensor when a tensor is missing", () => {
    expect(errorOf(() => file.info("nope")).message).toBe(
      'mixed.safetensors: tensor "nope": no such tensor in this file',
    );
  });
});

describe("writing", () => {
  it("produces the Python library's exact bytes for the same float32 inputs", () => {
    const tensors: Record<string, TensorToWrite> = {
      a_half: { dtype: "F16", shape: [18], data: floatsFromBits(expected.inputs.a_half!) },
      b_float: { dtype: "F32", shape: [2, 3], data: floatsFromBits(expected.inputs.b_float!) },
      c_brain: { dtype: "BF16", shape: [3, 4], data: floatsFromBits(expected.inputs.c_brain!) },
      d_scalar: { dtype: "F32", shape: [], data: new Float32Array([7]) },
      e_empty: { dtype: "F32", shape: [0], data: new Float32Array(0) },
    };
    const written = serializeSafetensors(tensors, { format: "pt" });
    expect(written.length).toBe(mixedFile.length);
    expect(Buffer.from(written).equals(Buffer.from(mixedFile))).toBe(true);
    // Insertion order does not matter.
    const reversed = new Map(Object.entries(tensors).reverse());
    expect(Buffer.from(serializeSafetensors(reversed, { format: "pt" })).equals(Buffer.from(mixedFile))).toBe(
      true,
    );
  });

  it("pads the header with spaces to a multiple of 8 and spells it compactly", () => {
    const bytes = serializeSafetensors({ x: { dtype: "F32", shape: [2], data: new Float32Array([1, 2]) } });
    const length = new DataView(bytes.buffer).getUint32(0, true);
    expect(length % 8).toBe(0);
    const header = new TextDecoder().decode(bytes.subarray(8, 8 + length));
    expect(header).toBe('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  ');
    expect([...bytes.subarray(8 + length)]).toEqual([0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
  });

  it("orders data by dtype width then name, metadata keys sorted", () => {
    const layout = planSafetensors(
      {
        b: { dtype: "F16", shape: [1], data: new Float32Array(1) },
        a: { dtype: "F16", shape: [1], data: new Float32Array(1) },
        z: { dtype: "F32", shape: [1], data: new Float32Array(1) },
        m: { dtype: "BF16", shape: [1], data: new Float32Array(1) },
      },
      { zeta: "1", alpha: "2" },
    );
    expect(layout.tensors.map((t) => t.name)).toEqual(["z", "m", "a", "b"]);
    const header = new TextDecoder().decode(layout.header.subarray(8));
    expect(header.startsWith('{"__metadata__":{"alpha":"2","zeta":"1"},"z":')).toBe(true);
  });

  it.each(["F32", "F16", "BF16"] as const)("round-trips %s tensors of every shape", (dtype) => {
    const values = [0, 1, -2, 0.5, 1024, -0.25, 3, 96];
    const shapes = [[], [1], [8], [2, 4], [2, 2, 2], [0], [3, 0, 2]];
    const tensors: Record<string, TensorToWrite> = {};
    shapes.forEach((shape, i) => {
      const count = shape.reduce((a, b) => a * b, 1);
      tensors[`t${i}`] = { dtype, shape, data: new Float32Array(values.slice(0, count)) };
    });
    const file = parseSafetensors(serializeSafetensors(tensors, { format: "pt", note: "ünïcode ✓" }));
    expect(file.metadata).toEqual({ format: "pt", note: "ünïcode ✓" });
    for (const [name, tensor] of Object.entries(tensors)) {
      expect(file.info(name)).toMatchObject({ dtype, shape: tensor.shape });
      expect([...file.toFloat32(name)]).toEqual([...tensor.data]);
    }
  });

  it("rounds to the stored dtype to nearest even", () => {
    const data = new Float32Array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8, 1 + 3 * 2 ** -8]);
    const file = parseSafetensors(
      serializeSafetensors({
        h: { dtype: "F16", shape: [4], data },
        b: { dtype: "BF16", shape: [4], data },
      }),
    );
    expect([...file.toFloat32("h")]).toEqual([1, 1 + 2 * 2 ** -10, 1 + 2 ** -8, 1 + 3 * 2 ** -8]);
    expect([...file.toFloat32("b")]).toEqual([1, 1, 1, 1 + 2 * 2 ** -7]);
  });

  it("refuses bad input with the tensor named", () => {
    const data = new Float32Array(3);
    expect(() => serializeSafetensors({ w: { dtype: "F32", shape: [2, 2], data } })).toThrow(
      'safetensors data: tensor "w": shape [2,2] has 4 elements, data has 3',
    );
    expect(() => serializeSafetensors({ w: { dtype: "I64" as "F32", shape: [3], data } })).toThrow(
      /cannot write dtype "I64"/,
    );
    expect(() => serializeSafetensors({ w: { dtype: "F32", shape: [-3], data } })).toThrow(
      /non-negative integers/,
    );
    expect(() => serializeSafetensors({ __metadata__: { dtype: "F32", shape: [3], data } })).toThrow(
      /reserved/,
    );
    expect(() => serializeSafetensors({}, { n: 1 as unknown as string })).toThrow(
      /metadata "n" must be a string/,
    );
  });
});

describe("raw dtypes", () => {
  // Spelled out by hand from the format description, independent of the writer.
  const data = new Uint8Array([
    ...[0x01, 0, 0, 0, 0xff, 0xff, 0xff, 0xff], // I32 [1, -1]
    ...[0x2a, 0, 0, 0, 0, 0, 0, 0], // I64 [42]
    ...[7, 255], // U8 [7, 255]
    ...[1, 0, 1], // BOOL [true, false, true]
  ]);
  const file = parseSafetensors(
    buildFile(
      {
        ints: { dtype: "I32", shape: [2], data_offsets: [0, 8] },
        long: { dtype: "I64", shape: [1], data_offsets: [8, 16] },
        bytes: { dtype: "U8", shape: [2], data_offsets: [16, 18] },
        flags: { dtype: "BOOL", shape: [3], data_offsets: [18, 21] },
        double: { dtype: "F64", shape: [0], data_offsets: [21, 21] },
      },
      data,
    ),
    { fileName: "raw.safetensors" },
  );

  it("reads them as raw bytes", () => {
    const ints = file.bytes("ints");
    expect([...new Int32Array(ints.slice().buffer)]).toEqual([1, -1]);
    expect(new DataView(file.bytes("long").slice().buffer).getBigInt64(0, true)).toBe(42n);
    expect([...file.bytes("bytes")]).toEqual([7, 255]);
    expect([...file.bytes("flags")]).toEqual([1, 0, 1]);
    expect(file.toFloat32("double").length).toBe(0);
  });

  it("refuses to convert integer tensors to float32", () => {
    expect(() => file.toFloat32("ints")).toThrow(
      'raw.safetensors: tensor "ints": dtype I32 cannot be read as float32',
    );
  });

  it("converts F64 to float32", () => {
    const bytes = new Uint8Array(16);
    new DataView(bytes.buffer).setFloat64(0, 0.1, true);
    new DataView(bytes.buffer).setFloat64(8, -3, true);
    const f64 = parseSafetensors(
      buildFile({ d: { dtype: "F64", shape: [2], data_offsets: [0, 16] } }, bytes),
    );
    expect([...f64.toFloat32("d")]).toEqual([Math.fround(0.1), -3]);
  });
});

describe("malformed files", () => {
  const ok = { w: { dtype: "F32", shape: [2], data_offsets: [0, 8] } };
  const parse = (bytes: Uint8Array) => parseSafetensors(bytes, { fileName: "bad.safetensors" });

  it("rejects files truncated anywhere", () => {
    const whole = buildFile(ok, new Uint8Array(8));
    expect(() => parse(whole)).not.toThrow();
    for (let length = 0; length < whole.length; length++) {
      const error = errorOf(() => parse(whole.subarray(0, length)));
      expect(error.fileName).toBe("bad.safetensors");
      expect(error.message).toMatch(/truncated/);
    }
  });

  it("rejects a header length that is absurd or too small", () => {
    const huge = new Uint8Array(16);
    new DataView(huge.buffer).setUint32(0, MAX_SAFETENSORS_HEADER_BYTES + 1, true);
    expect(errorOf(() => parse(huge)).message).toMatch(/exceeds the 100000000-byte limit/);
    const high = new Uint8Array(16);
    new DataView(high.buffer).setUint32(4, 1, true);
    expect(errorOf(() => parse(high)).message).toMatch(/exceeds/);
    expect(errorOf(() => parse(buildFile(undefined, undefined, "{"))).message).toMatch(/too small/);
  });

  it("rejects headers that are not a JSON object", () => {
    expect(errorOf(() => parse(buildFile(undefined, undefined, '{"w": {"dtype": "F32",'))).message).toMatch(
      /^bad.safetensors: header is not valid JSON/,
    );
    expect(errorOf(() => parse(buildFile([1, 2]))).message).toMatch(/header must be a JSON object/);
    const invalidUtf8 = buildFile(undefined, undefined, '{"a":1}');
    invalidUtf8[10] = 0xff;
    expect(errorOf(() => parse(invalidUtf8)).message).toMatch(/not valid UTF-8/);
  });

  it("rejects overlapping data", () => {
    const error = errorOf(() =>
      parse(
        buildFile(
          {
            a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
            b: { dtype: "F32", shape: [2], data_offsets: [4, 12] },
          },
          new Uint8Array(12),
        ),
      ),
    );
    expect(error.tensorName).toBe("b");
    expect(error.message).toBe(
      'bad.safetensors: tensor "b": data_offsets [4, 12] overlap those of "a" [0, 8]',
    );
    // Empty tensors overlap nothing, and gaps are allowed.
    const fine = buildFile(
      {
        a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
        e: { dtype: "F32", shape: [0], data_offsets: [4, 4] },
        b: { dtype: "F32", shape: [1], data_offsets: [12, 16] },
      },
      new Uint8Array(16),
    );
    expect(parse(fine).names()).toEqual(["a", "e", "b"]);
  });

  it("rejects sizes that disagree with shape and dtype", () => {
    const error = errorOf(() =>
      parse(buildFile({ w: { dtype: "BF16", shape: [3, 2], data_offsets: [0, 8] } }, new Uint8Array(8))),
    );
    expect(error.message).toBe(
      'bad.safetensors: tensor "w": data_offsets [0, 8] hold 8 bytes, but shape [3,2] of BF16 needs 12',
    );
    const tooBig = { w: { dtype: "F32", shape: [1], data_offsets: [0, 8] } };
    expect(errorOf(() => parse(buildFile(tooBig, new Uint8Array(8)))).message).toMatch(
      /hold 8 bytes, but shape \[1\] of F32 needs 4/,
    );
  });

  it("rejects offsets past the data, reversed, or malformed", () => {
    expect(errorOf(() => parse(buildFile(ok, new Uint8Array(4)))).message).toMatch(
      /run past the end of the data \(4 bytes\)/,
    );
    const reversed = { w: { dtype: "F32", shape: [0], data_offsets: [8, 0] } };
    expect(errorOf(() => parse(buildFile(reversed, new Uint8Array(8)))).message).toMatch(
      /end before they begin/,
    );
    const single = { w: { dtype: "F32", shape: [0], data_offsets: [0] } };
    expect(errorOf(() => parse(buildFile(single))).message).toMatch(/data_offsets must be \[begin, end\]/);
    const fractional = { w: { dtype: "F32", shape: [0], data_offsets: [0.5, 1] } };
    expect(errorOf(() => parse(buildFile(fractional, new Uint8Array(1)))).message).toMatch(
      /data_offsets must be/,
    );
  });

  it("rejects unknown dtypes and bad shapes", () => {
    const dtype = { w: { dtype: "F12", shape: [1], data_offsets: [0, 2] } };
    expect(errorOf(() => parse(buildFile(dtype, new Uint8Array(2)))).message).toMatch(
      /tensor "w": unknown dtype "F12"/,
    );
    const shape = { w: { dtype: "F32", shape: [-1], data_offsets: [0, 0] } };
    expect(errorOf(() => parse(buildFile(shape))).message).toMatch(
      /shape must be an array of non-negative integers/,
    );
    const entry = { w: [1, 2] };
    expect(errorOf(() => parse(buildFile(entry))).message).toMatch(/entry must be an object/);
  });

  it("rejects metadata that is not string to string", () => {
    const header = { __metadata__: { format: "pt", step: 3 } };
    expect(errorOf(() => parse(buildFile(header))).message).toMatch(
      /"__metadata__" entry "step" must be a string/,
    );
    expect(errorOf(() => parse(buildFile({ __metadata__: "pt" }))).message).toMatch(
      /must be an object of strings/,
    );
  });

  it("reads a header from a prefix of a larger file", () => {
    const whole = buildFile(ok, new Uint8Array(8));
    const prefixLength = whole.length - 8;
    const header = parseSafetensorsHeader(whole.subarray(0, prefixLength), { fileByteLength: whole.length });
    expect(header.tensors.map((t) => t.name)).toEqual(["w"]);
    expect(header.dataStart).toBe(prefixLength);
    expect(() => parseSafetensorsHeader(whole.subarray(0, 12), { fileByteLength: whole.length })).toThrow(
      /need the first/,
    );
  });
});
