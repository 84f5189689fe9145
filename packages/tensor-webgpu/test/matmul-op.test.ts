import { beforeAll, describe, expect, it } from "vitest";
import type { Backend } from "../src/backend.js";
import { createCpuBackend } from "../src/backends/cpu.js";
import { createWebGpuBackend } from "../src/backends/webgpu.js";
import * as ops from "../src/ops/index.js";
import { tensor } from "../src/runtime.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

type MatmulCall = Parameters<Backend["matmul"]>[0];

/** The backend with its matmul calls recorded (batch, m, n, k of each). */
function spied(backend: Backend): { backend: Backend; calls: Pick<MatmulCall, "batch" | "m" | "n" | "k">[] } {
  const calls: Pick<MatmulCall, "batch" | "m" | "n" | "k">[] = [];
  const matmul = backend.matmul.bind(backend);
  const wrapped = Object.create(backend) as Backend;
  wrapped.matmul = (args) => {
    calls.push({ batch: args.batch, m: args.m, n: args.n, k: args.k });
    matmul(args);
  };
  return { backend: wrapped, calls };
}

describe("matmul op: how products reach the kernels", () => {
  let gpu: Backend;
  const cpu = createCpuBackend();
  beforeAll(async () => {
    gpu = createWebGpuBackend(await testContext());
  });

  it("runs x · Wᵀ of a weight shared over the batch as one product of batch · m rows", async () => {
    // Decoding's shape: 6 sequences, one token each, reading W once for all of them.
    const { backend, calls } = spied(gpu);
    const x = randomArray(6 * 1 * 16, 1);
    const w = randomArray(24 * 16, 2);
    const b = randomArray(24, 3);
    const residual = randomArray(6 * 24, 4);
    const out = ops.addLinear(
      tensor(residual, [6, 1, 24], { backend }),
      tensor(x, [6, 1, 16], { backend }),
      tensor(w, [24, 16], { backend }),
      tensor(b, [24], { backend }),
    );
    expect(out.shape).toEqual([6, 1, 24]);
    expect(calls).toEqual([{ batch: 1, m: 6, n: 24, k: 16 }]);
    const expected = ops.addLinear(
      tensor(residual, [6, 1, 24], { backend: cpu }),
      tensor(x, [6, 1, 16], { backend: cpu }),
      tensor(w, [24, 16], { backend: cpu }),
      tensor(b, [24], { backend: cpu }),
    );
    expectClose(await out.floats(), await expected.floats(), 1e-5, 1e-5);
  });

  it("keeps the batch where B is per batch or A is stored transposed", async () => {
    const { backend, calls } = spied(gpu);
    const a = tensor(randomArray(2 * 3 * 4, 5), [2, 3, 4], { backend });
    ops.matmul(a, tensor(randomArray(2 * 4 * 5, 6), [2, 4, 5], { backend }));
    ops.matmul(a, tensor(randomArray(3 * 5, 7), [3, 5], { backend }), { transA: true });
    ops.matmul(a, tensor(randomArray(4 * 5, 8), [4, 5], { backend }));
    expect(calls).toEqual([
      { batch: 2, m: 3, n: 5, k: 4 },
      { batch: 2, m: 4, n: 5, k: 3 },
      { batch: 1, m: 6, n: 5, k: 4 },
    ]);
  });
});
