import { asyncScope, createCpuBackend, tensor } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { maskedMean } from "../src/masked.js";
import { readMetrics } from "../src/metrics.js";

const backend = createCpuBackend();

describe("maskedMean", () => {
  it("averages the masked positions only, every token alike", async () => {
    const mean = await asyncScope(async () => {
      const values = tensor([1, 2, 3, 4, 5, 6], [2, 3], { backend });
      const mask = tensor([1, 0, 1, 0, 0, 1], [2, 3], { backend });
      return maskedMean(values, mask).item();
    });
    expect(mean).toBeCloseTo((1 + 3 + 6) / 3, 6);
  });

  it("gives 0 for an all-zero mask, not NaN", async () => {
    const mean = await asyncScope(async () =>
      maskedMean(tensor([[5, 7]], undefined, { backend }), tensor([[0, 0]], undefined, { backend })).item(),
    );
    expect(mean).toBe(0);
  });
});

describe("readMetrics", () => {
  it("reads scalars under their names, skips absent ones and disposes what it read", async () => {
    const loss = tensor([0.5], [], { backend });
    const kl = tensor([-0.25], [], { backend });
    const read = await readMetrics({ "actor/loss": loss, "actor/kl": kl, "actor/entropy": undefined });
    expect(read).toEqual({ "actor/loss": 0.5, "actor/kl": -0.25 });
    expect(loss.isDisposed && kl.isDisposed).toBe(true);
  });
});
