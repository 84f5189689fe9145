import { beforeAll, describe, expect, it } from "vitest";
import { backward, checkpoint, GraphFreedError, noGrad, record } from "../src/autograd.js";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import * as ops from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { scope, type Tensor } from "../src/tensor.js";
import { randomArray, testContext } from "./helpers.js";

let gpu: Backend;
beforeAll(async () => {
  gpu = createWebGpuBackend(await testContext());
});

/** The CPU backend with a count of the bytes it has handed out and not yet taken back. */
function countingCpuBackend(): { backend: Backend; liveBytes: () => number; peakBytes: () => number } {
  const base = createCpuBackend();
  let live = 0;
  let peak = 0;
  const backend: Backend = {
    ...(base as Backend),
    alloc: (bytes) => {
      const buffer = base.alloc(bytes);
      live += buffer.byteLength;
      peak = Math.max(peak, live);
      return buffer;
    },
    free: (buffer) => {
      live -= (buffer as ArrayBuffer).byteLength;
    },
  };
  return { backend, liveBytes: () => live, peakBytes: () => peak };
}

const width = 6;

interface Block {
  w1: Tensor;
  b1: Tensor;
  w2: Tensor;
}

function blocks(backend: Backend, count: number, requiresGrad = true): Block[] {
  const param = (shape: number[], seed: number) =>
    tensor(randomArray(shape[0]! * (shape[1] ?? 1), seed, 0.5), shape, { backend, requiresGrad }).keep();
  return Array.from({ length: count }, (_, i) => ({
    w1: param([width, width], 10 * i + 1),
    b1: param([width], 10 * i + 2),
    w2: param([width, width], 10 * i + 3),
  }));
}

/** x + w2·tanh(w1·x + b1): a residual block whose weights come from the closure, as a model layer's do. */
const residual = (block: Block) => (x: Tensor) =>
  ops.add(x, ops.linear(ops.tanh(ops.linear(x, block.w1, block.b1)), block.w2));

/** A loss through `layers` blocks, each recomputed in backward when `recompute`. */
function lossOf(x: Tensor, layers: Block[], recompute: boolean): Tensor {
  let h = ops.mul(x, x); // a recorded op in front, so the first block's input has a node
  for (const block of layers) {
    h = recompute ? checkpoint(([input]) => residual(block)(input!), [h]) : residual(block)(h);
  }
  const weights = tensor(randomArray(h.size, 77), h.shape, { backend: h.backend });
  return ops.sum(ops.mul(h, weights));
}

async function gradients(backend: Backend, recompute: boolean, frozenInput = false) {
  const layers = blocks(backend, 3);
  const x = tensor(randomArray(4 * width, 5), [4, width], { backend, requiresGrad: !frozenInput }).keep();
  scope(() => backward(lossOf(x, layers, recompute)));
  const params = layers.flatMap((l) => [l.w1, l.b1, l.w2]);
  const out = {
    x: frozenInput ? undefined : await x.grad!.floats(),
    params: await Promise.all(params.map((p) => p.grad!.floats())),
  };
  for (const t of [x, ...params]) t.dispose();
  return out;
}

describe("checkpoint (activation recomputation)", () => {
  for (const [name, backendOf] of [
    ["CPU reference", () => createCpuBackend() as Backend],
    ["WebGPU", () => gpu],
  ] as const) {
    it(`gives the same gradients as the recorded graph (${name})`, async () => {
      const plain = await gradients(backendOf(), false);
      const recomputed = await gradients(backendOf(), true);
      expect(recomputed.x).toEqual(plain.x);
      expect(recomputed.params).toEqual(plain.params);
      expect(plain.params[0]!.some((v) => v !== 0)).toBe(true);
    });
  }

  it("reaches parameters in its closure when its input needs no gradient (frozen embeddings, LoRA)", async () => {
    const cpu = createCpuBackend() as Backend;
    const plain = await gradients(cpu, false, true);
    const recomputed = await gradients(cpu, true, true);
    expect(recomputed.params).toEqual(plain.params);
  });

  it("adds to gradients the parameters already hold (accumulation across micro-batches)", async () => {
    const cpu = createCpuBackend() as Backend;
    const run = async (recompute: boolean) => {
      const layers = blocks(cpu, 2);
      const x = tensor(randomArray(4 * width, 5), [4, width], { backend: cpu, requiresGrad: true });
      scope(() => backward(lossOf(x, layers, false)));
      scope(() => backward(lossOf(x, layers, recompute)));
      return layers[0]!.w1.grad!.floats();
    };
    expect(await run(true)).toEqual(await run(false));
  });

  it("keeps only the inputs of each block alive between forward and backward", async () => {
    const peakOf = (recompute: boolean) => {
      const { backend, liveBytes, peakBytes } = countingCpuBackend();
      const layers = blocks(backend, 12);
      const x = tensor(randomArray(64 * width, 5), [64, width], { backend, requiresGrad: true }).keep();
      const before = liveBytes();
      let afterForward = 0;
      scope(() => {
        const loss = lossOf(x, layers, recompute);
        afterForward = liveBytes() - before;
        backward(loss);
      });
      return { afterForward, peak: peakBytes() - before };
    };
    const plain = peakOf(false);
    const recomputed = peakOf(true);
    // Per block the plain graph holds x, w1·x + b1 (twice: before and after the bias), its tanh and the
    // block's output; recomputation holds the output alone.
    expect(recomputed.afterForward).toBeLessThan(plain.afterForward / 2);
    expect(recomputed.peak).toBeLessThan(plain.peak * 0.75);
  });

  it("frees each node's saved tensors as soon as backward has used them", () => {
    const { backend, liveBytes } = countingCpuBackend();
    const n = 1024;
    const x = tensor(randomArray(n, 3), [n], { backend, requiresGrad: true }).keep();
    let liveWhenProbed = 0;
    const start = liveBytes();
    scope(() => {
      // A pass-through op first in the chain: its backward runs last and sees what is still alive.
      const probed = record("probe", ops.scale(x, 1), [x], [], (g) => {
        liveWhenProbed = liveBytes() - start;
        return [ops.scale(g, 1)];
      });
      // Each tanh saves its output (8 tensors of n floats); as a model layer does, the chain lets go of
      // them once used, so only the tape holds them.
      let h = probed;
      for (let i = 0; i < 8; i++) {
        const next = ops.tanh(h);
        h.dispose();
        h = next;
      }
      backward(ops.sum(h));
    });
    // Alive at the probe: the last tanh's output (the chain's result), the incoming gradient and x, not
    // the other seven saved outputs nor the temporaries of their backwards.
    expect(liveWhenProbed).toBeLessThan(4 * n * 4);
    expect(x.grad).toBeDefined();
  });

  it("runs the function once and records nothing without grad", () => {
    const cpu = createCpuBackend() as Backend;
    const [block] = blocks(cpu, 1);
    let calls = 0;
    const out = noGrad(() =>
      checkpoint(
        ([h]) => {
          calls++;
          return residual(block!)(h!);
        },
        [tensor(randomArray(width, 1), [1, width], { backend: cpu })],
      ),
    );
    expect(calls).toBe(1);
    expect(out.node).toBeUndefined();
  });

  it("leaves nothing to differentiate when no tensor it reads needs a gradient", () => {
    const cpu = createCpuBackend() as Backend;
    const [block] = blocks(cpu, 1, false);
    const out = checkpoint(
      ([h]) => residual(block!)(h!),
      [tensor(randomArray(width, 1), [1, width], { backend: cpu })],
    );
    expect(out.node).toBeUndefined();
    expect(out.requiresGrad).toBe(false);
  });

  it("names the problem when the function reads a recorded tensor that is not among its inputs", () => {
    const cpu = createCpuBackend() as Backend;
    const x = tensor(randomArray(width, 1), [1, width], { backend: cpu, requiresGrad: true });
    const outside = ops.tanh(x);
    expect(() => checkpoint(([h]) => ops.add(h!, outside), [ops.scale(x, 2)])).toThrow(
      /reads the output of a "tanh" recorded outside it; pass that tensor in the inputs/,
    );
  });

  it("frees its graph like any other node: a second backward fails", () => {
    const cpu = createCpuBackend() as Backend;
    const layers = blocks(cpu, 1);
    const x = tensor(randomArray(4 * width, 5), [4, width], { backend: cpu, requiresGrad: true });
    const loss = lossOf(x, layers, true);
    backward(loss);
    expect(() => backward(loss)).toThrow(GraphFreedError);
  });
});
