import type { Trajectory, TrajectoryBatch } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { AStarPO } from "../src/astar-po.js";
import { frozenCopy, tinyModel, trajectory } from "./fixtures.js";

const PROMPT = [3, 5, 7];

function batch(): TrajectoryBatch {
  const trajectories: Trajectory[] = [
    trajectory({
      seed: 1,
      tokens: Int32Array.from([...PROMPT, 9, 10]),
      lossMask: Uint8Array.from([0, 0, 0, 1, 1]),
      reward: 1,
    }),
    trajectory({
      seed: 2,
      tokens: Int32Array.from([...PROMPT, 11]),
      lossMask: Uint8Array.from([0, 0, 0, 1]),
      reward: 0,
    }),
  ];
  return { mode: "train", trajectories, metrics: {} };
}
const vstar = () => 0.5;

describe("AStarPO with LoRA adapters", () => {
  it("takes the actor as its own reference (adapters off): the same updates as with a frozen copy, base weights untouched", async () => {
    const own = tinyModel(32, 3);
    const copied = tinyModel(32, 3);
    const frozen = await frozenCopy(copied);
    const base = await own.stateDict();
    own.attachLora({ rank: 2, alpha: 4, seed: 1 });
    copied.attachLora({ rank: 2, alpha: 4, seed: 1 });
    const config = { beta2: 0.5, lr: 1e-2, microBatchSize: 1, miniBatchSize: 2 };
    const ownTrainer = new AStarPO({ actor: own, reference: own, config });
    const copiedTrainer = new AStarPO({ actor: copied, reference: frozen, config });
    const learned = (m: Record<string, number>) =>
      Object.fromEntries(Object.entries(m).filter(([key]) => !key.startsWith("timing_s/")));
    for (let update = 0; update < 3; update++)
      expect(learned(await ownTrainer.update(batch(), vstar))).toEqual(
        learned(await copiedTrainer.update(batch(), vstar)),
      );
    expect(await own.adapters!.stateDict()).toEqual(await copied.adapters!.stateDict());
    expect(await own.stateDict()).toEqual(base);
  });
});
