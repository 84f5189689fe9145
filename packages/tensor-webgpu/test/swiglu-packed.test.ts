import { describe, expect, it } from "vitest";
import { backward } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend, type WebGpuBackend } from "../src/backends/webgpu.js";
import { limitBindingsForTesting } from "../src/kernels/binding-windows.js";
import * as ops from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { randomArray, testContext } from "./helpers.js";

const dispatches = (backend: Backend) => (backend as Partial<WebGpuBackend>).ctx?.stats.dispatches ?? 0;

/** swigluPacked of [rows, 2·width] values, and swiglu of the two halves split on the host. */
async function bothWays(backend: Backend, rows: number, width: number, seed: number) {
  const values = randomArray(rows * 2 * width, seed, 4);
  const gate = new Float32Array(rows * width);
  const up = new Float32Array(rows * width);
  for (let r = 0; r < rows; r++) {
    gate.set(values.subarray(2 * r * width, (2 * r + 1) * width), r * width);
    up.set(values.subarray((2 * r + 1) * width, (2 * r + 2) * width), r * width);
  }
  const gateUp = tensor(values, [1, rows, 2 * width], { backend });
  const before = dispatches(backend);
  const packed = ops.swigluPacked(gateUp);
  const packedDispatches = dispatches(backend) - before;
  const separate = ops.swiglu(
    tensor(gate, [1, rows, width], { backend }),
    tensor(up, [1, rows, width], { backend }),
  );
  expect(packed.shape).toEqual([1, rows, width]);
  return { packed: await packed.floats(), separate: await separate.floats(), packedDispatches };
}

describe("swigluPacked (swiglu of a fused gate/up projection)", () => {
  for (const width of [344, 6]) {
    it(`gives swiglu's bits in one dispatch on WebGPU, width ${width}`, async () => {
      const gpu = createWebGpuBackend(await testContext());
      const { packed, separate, packedDispatches } = await bothWays(gpu, 3, width, width);
      expect(packedDispatches).toBe(1);
      expect(Array.from(packed)).toEqual(Array.from(separate));
    });
  }

  it("splits the halves on the CPU backend and where gateUp exceeds one binding", async () => {
    const onCpu = await bothWays(createCpuBackend(), 2, 5, 1);
    expect(onCpu.packed).toEqual(onCpu.separate);
    const gpu = createWebGpuBackend(await testContext());
    limitBindingsForTesting(1024);
    try {
      const { packed, separate, packedDispatches } = await bothWays(gpu, 4, 64, 2);
      expect(packedDispatches).toBeGreaterThan(1);
      expect(Array.from(packed)).toEqual(Array.from(separate));
    } finally {
      limitBindingsForTesting(undefined);
    }
  });

  it("is differentiable: the gradient of gateUp is swiglu's two gradients side by side", async () => {
    const gpu = createWebGpuBackend(await testContext());
    const values = randomArray(2 * 8, 5, 3);
    const gateUp = tensor(values, [2, 8], { backend: gpu, requiresGrad: true });
    backward(ops.sum(ops.swigluPacked(gateUp)));
    const gate = tensor(
      values.filter((_, i) => i % 8 < 4),
      [2, 4],
      { backend: gpu, requiresGrad: true },
    );
    const up = tensor(
      values.filter((_, i) => i % 8 >= 4),
      [2, 4],
      { backend: gpu, requiresGrad: true },
    );
    backward(ops.sum(ops.swiglu(gate, up)));
    const [dGate, dUp, dPacked] = await Promise.all([
      gate.grad!.floats(),
      up.grad!.floats(),
      gateUp.grad!.floats(),
    ]);
    const expected = [
      ...dGate.subarray(0, 4),
      ...dUp.subarray(0, 4),
      ...dGate.subarray(4),
      ...dUp.subarray(4),
    ];
    expect(Array.from(dPacked)).toEqual(expected);
  });

  it("names the shape it expected", () => {
    const x = tensor(new Float32Array(6), [2, 3], { backend: createCpuBackend() });
    expect(() => ops.swigluPacked(x)).toThrow(/expected gateUp \[\.\.\., 2 x width\], got .*\[2, 3\]/);
  });
});
