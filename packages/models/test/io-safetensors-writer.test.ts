import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG } from "../src/io/config.js";
import {
  planSafetensors,
  SafetensorsError,
  serializeSafetensors,
  type TensorToWrite,
} from "../src/io/safetensors.js";
import {
  streamAllFromDevice,
  type TensorToStream,
  writeSafetensorsFile,
} from "../src/io/safetensors-writer.js";
import { Qwen2Model } from "../src/model/qwen2.js";

/**
 * The files this test's writer opens: each write and read is logged in `events`, closes are counted, and
 * once `fullAfter` is set, a write past that many bytes fails with ENOSPC (a disk that fills up).
 */
const disk: { fullAfter: number | undefined; closed: number; events: string[] } = {
  fullAfter: undefined,
  closed: 0,
  events: [],
};

vi.mock("node:fs/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs/promises")>();
  const open = async (...args: Parameters<typeof actual.open>): Promise<FileHandle> => {
    const handle = await actual.open(...args);
    let written = 0;
    return new Proxy(handle, {
      get(target, property) {
        if (property === "write") {
          return async (bytes: Uint8Array, offset: number, length: number) => {
            if (disk.fullAfter !== undefined && written + length > disk.fullAfter)
              throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
            written += length;
            disk.events.push(`write ${length}`);
            return target.write(bytes, offset, length);
          };
        }
        if (property === "close") {
          return async () => {
            disk.closed++;
            return target.close();
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  return { ...actual, open };
});

const scratch = mkdtempSync(join(tmpdir(), "ragen-safetensors-writer-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
beforeEach(() => {
  disk.fullAfter = undefined;
  disk.closed = 0;
  disk.events = [];
});

let counter = 0;
function freshFile(): string {
  counter++;
  return join(scratch, `${counter}.safetensors`);
}

function values(count: number, start: number): Float32Array {
  return Float32Array.from({ length: count }, (_, i) => start + i / 7 - (i % 3) * 1.3e-3);
}

/** Mixed dtypes, shapes with zero and one dimension and an empty tensor; names out of order on purpose. */
function mixedTensors(): Map<string, TensorToWrite> {
  return new Map<string, TensorToWrite>([
    ["z.half", { dtype: "F16", shape: [3, 5], data: values(15, -2) }],
    ["a.float", { dtype: "F32", shape: [4, 2], data: values(8, 1) }],
    ["m.brain", { dtype: "BF16", shape: [7], data: values(7, 100) }],
    ["scalar", { dtype: "F32", shape: [], data: new Float32Array([3.5]) }],
    ["empty", { dtype: "F16", shape: [0, 4], data: new Float32Array(0) }],
  ]);
}

/** The same tensors, each read only when the writer asks (logged in disk.events). */
function streamed(tensors: Map<string, TensorToWrite>): Map<string, TensorToStream> {
  return new Map(
    [...tensors].map(([name, { dtype, shape, data }]) => [
      name,
      {
        dtype,
        shape,
        read: async () => {
          disk.events.push(`read ${name}`);
          await new Promise((resolve) => setTimeout(resolve, 1));
          return data;
        },
      },
    ]),
  );
}

function errorOf(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: Error) => error,
  );
}

describe("writeSafetensorsFile", () => {
  it("writes exactly serializeSafetensors' bytes, reading each tensor only after the last is written", async () => {
    const tensors = mixedTensors();
    const path = freshFile();
    const written = await writeSafetensorsFile(path, streamed(tensors), { format: "pt" });
    const expected = serializeSafetensors(tensors, { format: "pt" });
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(expected))).toBe(true);
    const layout = planSafetensors(tensors, { format: "pt" });
    const order = layout.tensors.map(({ name }) => name);
    // The header, then read/write pairs (an empty tensor has nothing to write).
    expect(disk.events).toEqual([
      `write ${layout.header.length}`,
      ...layout.tensors.flatMap(({ name, dataOffsets: [begin, end] }) =>
        end > begin ? [`read ${name}`, `write ${end - begin}`] : [`read ${name}`],
      ),
    ]);
    expect(written.byteLength).toBe(expected.length);
    expect(written.tensors.map(({ name }) => name)).toEqual(order);
    expect(written.tensors.find(({ name }) => name === "z.half")?.byteLength).toBe(30);
    expect(disk.closed).toBe(1);
  });

  it("takes tensors already in memory too, and none at all", async () => {
    const tensors = mixedTensors();
    const path = freshFile();
    await writeSafetensorsFile(path, tensors);
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(serializeSafetensors(tensors)))).toBe(true);
    const emptyPath = freshFile();
    await writeSafetensorsFile(emptyPath, {}, { note: "none" });
    expect(
      Buffer.from(readFileSync(emptyPath)).equals(Buffer.from(serializeSafetensors({}, { note: "none" }))),
    ).toBe(true);
  });

  it("reads a model's weights from the device one at a time, to the same bytes as its stateDict", async () => {
    const config = {
      ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
      vocabSize: 16,
      hiddenSize: 8,
      intermediateSize: 16,
      numHiddenLayers: 2,
      numAttentionHeads: 2,
      numKeyValueHeads: 1,
      headDim: 4,
    };
    const model = Qwen2Model.random(config, 5, createCpuBackend());
    const path = freshFile();
    await writeSafetensorsFile(path, streamAllFromDevice(model.params, "BF16"));
    const state = await model.stateDict();
    const expected = serializeSafetensors(
      new Map(
        [...state].map(([name, data]) => [
          name,
          { dtype: "BF16" as const, shape: model.param(name).shape, data },
        ]),
      ),
    );
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(expected))).toBe(true);
  });

  it("removes the file and names it and the tensor when a read fails", async () => {
    const tensors = streamed(mixedTensors());
    const cause = new Error("device lost");
    tensors.set("m.brain", { dtype: "BF16", shape: [7], read: () => Promise.reject(cause) });
    const path = freshFile();
    const error = await errorOf(writeSafetensorsFile(path, tensors));
    expect(error).toBeInstanceOf(SafetensorsError);
    expect(error.message).toBe(
      `${path}: tensor "m.brain": reading its values failed (device lost); the file was removed`,
    );
    expect(error.cause).toBe(cause);
    expect(existsSync(path)).toBe(false);
    expect(disk.closed).toBe(1);
  });

  it("removes the file and names the tensor when the disk fills up", async () => {
    disk.fullAfter = 200;
    const tensors = new Map<string, TensorToStream>([
      ["first", { dtype: "F32", shape: [16], read: async () => values(16, 0) }],
      ["second", { dtype: "F32", shape: [64], read: async () => values(64, 0) }],
    ]);
    const path = freshFile();
    const error = await errorOf(writeSafetensorsFile(path, tensors));
    expect(error.message).toMatch(
      new RegExp(`^${path}: tensor "second": writing failed \\(ENOSPC: no space left on device, write\\)`),
    );
    expect((error.cause as NodeJS.ErrnoException).code).toBe("ENOSPC");
    expect(existsSync(path)).toBe(false);
    expect(disk.closed).toBe(1);
  });

  it("refuses values that do not fill the tensor's shape, removing the file", async () => {
    const path = freshFile();
    const error = await errorOf(
      writeSafetensorsFile(path, {
        w: { dtype: "F32", shape: [2, 3], read: async () => new Float32Array(5) },
      }),
    );
    expect(error.message).toBe(`${path}: tensor "w": shape [2,3] has 6 elements, data has 5`);
    expect(existsSync(path)).toBe(false);
  });

  it("plans before reading anything: a bad shape fails with no read and no file", async () => {
    const path = freshFile();
    const read = vi.fn(async () => new Float32Array(1));
    await expect(writeSafetensorsFile(path, { w: { dtype: "F32", shape: [-1], read } })).rejects.toThrow(
      /tensor "w": shape must be an array of non-negative integers/,
    );
    expect(read).not.toHaveBeenCalled();
    expect(existsSync(path)).toBe(false);
  });

  it("never replaces an existing file", async () => {
    const path = freshFile();
    writeFileSync(path, "keep me");
    await expect(writeSafetensorsFile(path, mixedTensors())).rejects.toThrow(
      new RegExp(`^${path}: cannot be created \\(EEXIST`),
    );
    expect(readFileSync(path, "utf8")).toBe("keep me");
    expect(readdirSync(scratch)).toContain(path.split("/").at(-1));
  });
});
