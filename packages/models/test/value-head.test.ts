import { createCpuBackend, noGrad } from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import { Qwen2ValueModel } from "../src/model/value.js";
import { tinyShape } from "./helpers/policy-loss.js";

const tiny: Qwen2Shape = { ...tinyShape, numHiddenLayers: 2 };

const cpu = createCpuBackend();
const input = { ids: Int32Array.from([1, 5, 9, 3, 7, 2]), batch: 2, seqLen: 3 };

async function valuesOf(critic: Qwen2ValueModel): Promise<Float32Array> {
  return noGrad(() => critic.values(input)).floats();
}

describe("Qwen2ValueModel.fromPolicy", () => {
  it("draws the score head from the seed by default, so a fresh critic's values vary by token", async () => {
    const policy = Qwen2Model.random(tiny, 1, cpu);
    const values = await valuesOf(await Qwen2ValueModel.fromPolicy(policy, 7));
    expect(Math.max(...values) - Math.min(...values)).toBeGreaterThan(1e-3);
  });

  it('starts the score head at zero with headInit "zero": every value is 0 and the backbone is the policy\'s', async () => {
    const policy = Qwen2Model.random(tiny, 1, cpu);
    const critic = await Qwen2ValueModel.fromPolicy(policy, 7, "zero");
    expect([...(await valuesOf(critic))]).toEqual(new Array(6).fill(0));
    const weights = await critic.stateDict();
    expect([...weights.get("score.weight")!]).toEqual(new Array(tiny.hiddenSize).fill(0));
    const policyWeights = await policy.stateDict();
    expect(weights.get("model.norm.weight")).toEqual(policyWeights.get("model.norm.weight"));
    // The policy's own weights are untouched by the critic's head.
    expect(policyWeights.has("score.weight")).toBe(false);
  });

  it("lists every weight it saves in params, by the same names, with Hugging Face's shapes", async () => {
    const critic = Qwen2ValueModel.random(tiny, 3, cpu);
    expect([...critic.params.keys()]).toEqual([...(await critic.stateDict()).keys()]);
    expect(critic.params.get("score.weight")!.shape).toEqual([1, tiny.hiddenSize]);
    expect(critic.params.get("score.bias")!.shape).toEqual([1]);
  });
});
