import { Qwen2Model } from "@ragen/models";
import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { AStarPO } from "../src/astar-po.js";
import { tinyModel, trajectory } from "./fixtures.js";

/** Three start states of different lengths, rewards above, at and below their V̂*. */
function mixedBatch(): { batch: TrajectoryBatch; vstar: Map<number, number> } {
  const rows: Trajectory[] = [
    trajectory({
      seed: 1,
      tokens: Int32Array.from([3, 5, 7, 9, 10, 2]),
      lossMask: Uint8Array.from([0, 0, 0, 1, 1, 0]),
      reward: 1,
    }),
    trajectory({
      seed: 2,
      tokens: Int32Array.from([3, 5, 11]),
      lossMask: Uint8Array.from([0, 0, 1]),
      reward: 0,
    }),
    trajectory({
      seed: 3,
      tokens: Int32Array.from([4, 6, 8, 12, 13, 14, 15]),
      lossMask: Uint8Array.from([0, 0, 0, 1, 1, 0, 1]),
      reward: 0.5,
    }),
  ];
  return {
    batch: { mode: "train", trajectories: rows, metrics: {} },
    vstar: new Map([
      [1, 0.4],
      [2, 0.3],
      [3, 0.5],
    ]),
  };
}

describe("AStarPO on WebGPU", () => {
  it("takes the same steps through the WGSL kernels as through the CPU reference", async () => {
    const gpu = await webGpuBackend();
    const cpuActor = tinyModel(32, 7);
    const weights = await cpuActor.stateDict();
    const cpuReference = Qwen2Model.fromWeights(
      cpuActor.config,
      weights,
      cpuActor.param("model.embed_tokens.weight").backend,
    );
    const gpuActor = Qwen2Model.fromWeights(cpuActor.config, weights, gpu);
    const gpuReference = Qwen2Model.fromWeights(cpuActor.config, weights, gpu);
    const config = { beta2: 0.5, lr: 1e-2, entropyCoeff: 0.01, microBatchSize: 2, miniBatchSize: 3 };
    const onCpu = new AStarPO({ actor: cpuActor, reference: cpuReference, config });
    const onGpu = new AStarPO({ actor: gpuActor, reference: gpuReference, config });
    const { batch, vstar } = mixedBatch();
    for (let step = 0; step < 3; step++) {
      const [a, b] = [
        await onCpu.update(batch, (t) => vstar.get(t.seed)),
        await onGpu.update(batch, (t) => vstar.get(t.seed)),
      ];
      for (const name of ["actor/apo_loss", "actor/grad_norm", "actor/entropy"]) {
        expect(b[name], name).toBeCloseTo(a[name]!, 4);
      }
    }
    const moved = await gpuActor.stateDict();
    let largest = 0;
    for (const [name, expected] of await cpuActor.stateDict()) {
      const actual = moved.get(name)!;
      for (let i = 0; i < expected.length; i++)
        largest = Math.max(largest, Math.abs(actual[i]! - expected[i]!));
    }
    expect(largest).toBeLessThan(1e-4);
    // The steps did move the weights: the comparison is not between two untouched copies.
    const start = weights.get("model.embed_tokens.weight")!;
    const end = moved.get("model.embed_tokens.weight")!;
    expect(start.some((w, i) => Math.abs(w - end[i]!) > 1e-3)).toBe(true);
    onCpu.dispose();
    onGpu.dispose();
  });
});
