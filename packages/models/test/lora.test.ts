import {
  AdamW,
  asyncScope,
  backward,
  crossEntropy,
  mean,
  noGrad,
  reshape,
  tensor,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { Qwen2Model, type Qwen2Shape, qwen2ParameterShapes } from "../src/model/qwen2.js";
import { tinyShape } from "./helpers/policy-loss.js";

const tiny: Qwen2Shape = { ...tinyShape, vocabSize: 32, numHiddenLayers: 2 };
const ids = Int32Array.from([1, 5, 9, 13, 17, 21, 25, 29]);
const targets = Int32Array.from([5, 9, 13, 17, 21, 25, 29, -100]);

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

describe("LoRA", () => {
  it("trains only the adapters, changes the outputs, and merges into the same function", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 4, backend);
    const logitsOf = () => noGrad(() => model.logits({ ids, batch: 1, seqLen: 8 })).floats();
    const base = await logitsOf();
    const qBefore = await model.param("model.layers.0.self_attn.q_proj.weight").floats();

    const lora = model.attachLora({ rank: 4, alpha: 8, seed: 1 });
    expect(model.parameters()).toHaveLength(2 * 7 * 2); // A and B for 7 modules in 2 layers
    expect(maxAbsDiff(await logitsOf(), base)).toBe(0); // B starts at zero

    const optimizer = new AdamW(model.parameters(), { lr: 0.02, weightDecay: 0 });
    const losses: number[] = [];
    for (let step = 0; step < 40; step++) {
      losses.push(
        await asyncScope(async () => {
          const loss = mean(
            crossEntropy(
              reshape(model.logits({ ids, batch: 1, seqLen: 8 }), [8, 32]),
              tensor(targets, [8], { backend, dtype: "i32" }),
            ),
          );
          backward(loss);
          const { gradNorm, clipScale } = optimizer.step();
          optimizer.zeroGrad();
          gradNorm.dispose();
          clipScale.dispose();
          return loss.item();
        }),
      );
    }
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.5);
    expect(await model.param("model.layers.0.self_attn.q_proj.weight").floats()).toEqual(qBefore);
    expect(model.param("model.layers.0.self_attn.q_proj.weight").grad).toBeUndefined();

    const adapted = await logitsOf();
    expect(maxAbsDiff(adapted, base)).toBeGreaterThan(0.01);
    expect((await lora.stateDict()).has("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight")).toBe(
      true,
    );

    model.mergeLora();
    expect(maxAbsDiff(await logitsOf(), adapted)).toBeLessThan(1e-4);
    expect(
      maxAbsDiff(await model.param("model.layers.0.self_attn.q_proj.weight").floats(), qBefore),
    ).toBeGreaterThan(0);
    expect(model.parameters()).toHaveLength(qwen2ParameterShapes(tiny).length); // the full model trains again
    optimizer.dispose();
    model.dispose();
  });

  it("rejects a bad rank", async () => {
    const model = Qwen2Model.random(tiny, 4, await webGpuBackend());
    expect(() => model.attachLora({ rank: 0, alpha: 8 })).toThrow(/rank/);
    model.dispose();
  });
});

describe("LoRA adapters switched off", () => {
  it("gives the base model's logits inside withoutAdapters, also while a promise is pending, and the adapted ones after", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 4, backend);
    const logitsOf = () => noGrad(() => model.logits({ ids, batch: 1, seqLen: 8 })).floats();
    const base = await logitsOf();
    const adapters = model.attachLora({ rank: 4, alpha: 8, seed: 1 });
    // B is zero at the start: give it values so the adapted model differs from the base.
    adapters.load(
      new Map(
        [...adapters.peftWeights()].map(([name, weight]) => [
          name,
          Float32Array.from({ length: weight.size }, (_, i) => Math.sin(i + name.length) * 0.3),
        ]),
      ),
    );
    const adapted = await logitsOf();
    expect(maxAbsDiff(adapted, base)).toBeGreaterThan(0.01);

    expect(await model.withoutAdapters(logitsOf)).toEqual(base);
    expect(model.withoutAdapters(() => "sync")).toBe("sync");
    expect(await logitsOf()).toEqual(adapted);
    // A throw inside switches them back on as well.
    expect(() =>
      model.withoutAdapters(() => {
        throw new Error("inside");
      }),
    ).toThrow("inside");
    await expect(model.withoutAdapters(async () => Promise.reject(new Error("later")))).rejects.toThrow(
      "later",
    );
    expect(await logitsOf()).toEqual(adapted);
    model.dispose();
  });

  it("recomputes a checkpointed layer with the adapters its forward ran with", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 4, backend);
    model.gradientCheckpointing = true;
    const adapters = model.attachLora({ rank: 2, alpha: 2, seed: 3 });
    adapters.load(
      new Map(
        [...adapters.peftWeights()].map(([name, weight]) => [
          name,
          Float32Array.from({ length: weight.size }, (_, i) => Math.cos(i) * 0.2),
        ]),
      ),
    );
    const gradientOf = async (switchOffDuringBackward: boolean) =>
      asyncScope(async () => {
        const loss = mean(
          crossEntropy(
            reshape(model.logits({ ids, batch: 1, seqLen: 8 }), [8, 32]),
            tensor(targets, [8], { backend, dtype: "i32" }),
          ),
        );
        if (switchOffDuringBackward) model.withoutAdapters(() => backward(loss));
        else backward(loss);
        const b = model.parameters()[1]!;
        const values = await b.grad!.floats();
        for (const p of model.parameters()) {
          p.grad?.dispose();
          p.grad = undefined;
        }
        return values;
      });
    expect(await gradientOf(true)).toEqual(await gradientOf(false));
    model.dispose();
  });

  it("refuses targets that are no linear module of Qwen2, and adapter values that do not fit", async () => {
    const model = Qwen2Model.random(tiny, 4, await webGpuBackend());
    expect(() => model.attachLora({ rank: 2, alpha: 2, targets: ["q_proj", "wq" as never] })).toThrow(
      /wq is not a linear module of Qwen2/,
    );
    expect(() => model.attachLora({ rank: 2, alpha: 2, targets: [] })).toThrow(/at least one/);
    const adapters = model.attachLora({ rank: 2, alpha: 2, targets: ["q_proj"] });
    const values = new Map([...adapters.peftWeights()].map(([n, w]) => [n, new Float32Array(w.size)]));
    const first = [...values.keys()][0]!;
    expect(() => adapters.load(new Map([...values].slice(1)), "ckpt")).toThrow(`ckpt: no tensor ${first}`);
    expect(() => adapters.load(new Map([...values, [first, new Float32Array(3)]]), "ckpt")).toThrow(
      /has 3 values/,
    );
    expect(() => adapters.load(new Map([...values, ["x.lora_A.weight", new Float32Array(1)]]))).toThrow(
      /x\.lora_A\.weight has no place/,
    );
    model.dispose();
  });
});
