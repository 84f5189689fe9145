import {
  AdamW,
  add,
  asyncScope,
  backward,
  cast,
  createCpuBackend,
  crossEntropy,
  mean,
  noGrad,
  reshape,
  scope,
  sum,
  type Tensor,
  tensor,
  webGpuBackend,
  writeSlice,
} from "@ragen/tensor-webgpu";
import { describe, expect, it } from "vitest";
import { generate } from "../src/model/generate.js";
import { Qwen2Model, type Qwen2Shape, qwen2ParameterShapes } from "../src/model/qwen2.js";
import { Qwen2ValueModel } from "../src/model/value.js";
import { batchOf, tinyShape } from "./helpers/policy-loss.js";

const tiny: Qwen2Shape = { ...tinyShape, vocabSize: 32, numHiddenLayers: 2 };

/** Deterministic values in [-0.5, 0.5). */
const randomValues = (n: number) => Float32Array.from({ length: n }, (_, i) => ((i * 0.618034) % 1) - 0.5);

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** The language-model loss of `model` on a fixed batch, backward through `optimizer` (scaled when it scales). */
async function trainStep(model: Qwen2Model, optimizer: AdamW): Promise<{ loss: number; skipped: boolean }> {
  const { input, targets } = batchOf(tiny, 8);
  return asyncScope(async () => {
    const logits = reshape(model.logits(input), [input.batch * input.seqLen, tiny.vocabSize]);
    const loss = mean(
      crossEntropy(logits, tensor(targets, [targets.length], { backend: logits.backend, dtype: "i32" })),
    );
    backward(optimizer.scaleLoss(loss));
    const { gradNorm, clipScale } = optimizer.step();
    optimizer.zeroGrad();
    gradNorm.dispose();
    return { loss: await loss.item(), skipped: (await clipScale.item()) === 0 };
  });
}

// f16 tensors need the adapter's shader-f16 (lavapipe has it); without it these show as skipped.
const hasF16 = (await webGpuBackend()).ctx.info.features.shaderF16;

describe.runIf(hasF16)("Qwen2 in mixed precision (f16 weights)", () => {
  it("toDtype('f16') converts every weight in place, and the logits stay within f16's rounding of f32's", async () => {
    const backend = await webGpuBackend();
    const { input } = batchOf(tiny, 8);
    const full = Qwen2Model.random(tiny, 4, backend);
    const half = Qwen2Model.random(tiny, 4, backend).toDtype("f16");
    expect(full.dtype).toBe("f32");
    expect(half.dtype).toBe("f16");
    const params = [...half.params.entries()];
    expect(params.map(([name]) => name)).toEqual(qwen2ParameterShapes(tiny).map(([name]) => name));
    for (const [name, p] of params) {
      expect(p.dtype, name).toBe("f16");
      expect(p.requiresGrad, name).toBe(true);
      expect(p.name).toBe(name);
    }
    const logitsOf = (model: Qwen2Model) => noGrad(() => model.logits(input)).floats();
    const [a, b] = [await logitsOf(full), await logitsOf(half)];
    const spread = Math.max(...a.map(Math.abs));
    expect(maxAbsDiff(a, b)).toBeLessThan(spread * 2e-2);
    expect(maxAbsDiff(a, b)).toBeGreaterThan(0); // it did compute in f16
    // Log-probs come out f32, and so do the stored weights (a checkpoint is written from these).
    const { logProbs } = noGrad(() => half.sequenceLogProbs(input, batchOf(tiny, 8).targets));
    expect(logProbs.dtype).toBe("f32");
    logProbs.dispose();
    expect((await half.stateDict()).get("model.norm.weight")!.every((v) => v === 1)).toBe(true);
    expect(half.toDtype("f16")).toBe(half);
    full.dispose();
    half.dispose();
  });

  it("generates with an f16 KV cache; each token's log-prob matches a full forward's over the text", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 7, backend).toDtype("f16");
    const prompts = [Int32Array.from([1, 2, 3, 4]), Int32Array.from([5, 6])];
    const generations = await generate(model, prompts, { maxNewTokens: 6, temperature: 1, seed: 3 });
    const cache = model.createCache(1, 4);
    expect(cache.keys[0]!.dtype).toBe("f16");
    cache.dispose();
    for (const [row, generation] of generations.entries()) {
      const text = Int32Array.from([...prompts[row]!, ...generation.tokens]);
      const seqLen = text.length - 1;
      const input = { ids: text.subarray(0, seqLen), batch: 1, seqLen };
      const { logProbs, entropy } = noGrad(() => model.sequenceLogProbs(input, text.subarray(1)));
      const full = (await logProbs.floats()).subarray(prompts[row]!.length - 1);
      for (const t of [logProbs, entropy]) t.dispose();
      expect(maxAbsDiff(full, generation.logProbs), `row ${row}`).toBeLessThan(2e-2);
    }
    model.dispose();
  });

  it("decodes on the f16 weights in as many dispatches a step as in f32, LoRA updates merged in unless switched off", async () => {
    const backend = await webGpuBackend();
    const prompts = [Int32Array.from([1, 2, 3, 4]), Int32Array.from([5, 6])];
    const options = { maxNewTokens: 5, temperature: 1, seed: 4 };
    // Dispatches of the decoding steps alone: a run of 5 new tokens less a run of 1 (the same prefill).
    const stepDispatches = async (model: Qwen2Model) => {
      const counted = async (maxNewTokens: number) => {
        const before = backend.ctx.stats.dispatches;
        await generate(model, prompts, { ...options, maxNewTokens });
        return backend.ctx.stats.dispatches - before;
      };
      return ((await counted(5)) - (await counted(1))) / 4;
    };
    const full = Qwen2Model.random(tiny, 8, backend);
    const perStepF32 = await stepDispatches(full);
    full.dispose();
    const model = Qwen2Model.random(tiny, 8, backend).toDtype("f16");
    // Every kernel of a step reads and writes halves: no casts.
    expect(await stepDispatches(model)).toBe(perStepF32);
    const lora = model.attachLora({ rank: 2, alpha: 4, seed: 1 });
    // Non-zero B, so that the adapters change the outputs.
    for (const p of lora.parameters())
      writeSlice(p, tensor(randomValues(p.size), p.shape, { backend }), 0, 0);
    const sampled: number[][] = [];
    for (const adaptersOn of [true, false]) {
      const run = <T>(fn: () => T): T => (adaptersOn ? fn() : model.withoutAdapters(fn));
      const generations = await run(() => generate(model, prompts, options));
      // Each sampled token's log-prob is the full forward's with the adapters as they were, up to f16
      // rounding: generation applied them (merged) when on and left them out when off.
      for (const [row, generation] of generations.entries()) {
        const text = Int32Array.from([...prompts[row]!, ...generation.tokens]);
        const input = { ids: text.subarray(0, text.length - 1), batch: 1, seqLen: text.length - 1 };
        const { logProbs, entropy } = run(() =>
          noGrad(() => model.sequenceLogProbs(input, text.subarray(1))),
        );
        const full = (await logProbs.floats()).subarray(prompts[row]!.length - 1);
        for (const t of [logProbs, entropy]) t.dispose();
        expect(maxAbsDiff(full, generation.logProbs), `adapters ${adaptersOn}, row ${row}`).toBeLessThan(
          2e-2,
        );
        sampled.push(Array.from(generation.logProbs));
      }
    }
    // The adapters changed what was sampled, or how likely it was.
    expect(sampled.slice(0, 2)).not.toEqual(sampled.slice(2));
    model.dispose();
  });

  it("trains with AdamW's f32 master copies and loss scaling about as fast as in f32", async () => {
    const backend = await webGpuBackend();
    const curves: number[][] = [];
    for (const dtype of ["f32", "f16"] as const) {
      const model = Qwen2Model.random(tiny, 5, backend).toDtype(dtype);
      const optimizer = new AdamW(model.parameters(), {
        lr: 0.01,
        weightDecay: 0,
        lossScaling: dtype === "f16",
      });
      const losses: number[] = [];
      for (let step = 0; step < 30; step++) {
        const { loss, skipped } = await trainStep(model, optimizer);
        expect(skipped, `${dtype} step ${step}`).toBe(false);
        losses.push(loss);
      }
      expect(model.dtype).toBe(dtype);
      curves.push(losses);
      optimizer.dispose();
      model.dispose();
    }
    const [full, half] = curves as [number[], number[]];
    expect(half.at(-1)!).toBeLessThan(half[0]! * 0.5);
    expect(Math.abs(half.at(-1)! - full.at(-1)!)).toBeLessThan(0.1 * full.at(-1)! + 0.05);
  });

  it("LoRA on an f16 model: f16 adapters train, the base stays put; a value model keeps an f32 head", async () => {
    const backend = await webGpuBackend();
    const model = Qwen2Model.random(tiny, 6, backend).toDtype("f16");
    const q = "model.layers.0.self_attn.q_proj.weight";
    const before = await model.param(q).floats();
    model.attachLora({ rank: 4, alpha: 8, seed: 2 });
    expect(() => model.toDtype("f32")).toThrow(/convert the model before attachLora/);
    expect(model.parameters().every((p: Tensor) => p.dtype === "f16")).toBe(true);
    const optimizer = new AdamW(model.parameters(), { lr: 0.02, weightDecay: 0, lossScaling: true });
    const losses: number[] = [];
    for (let step = 0; step < 25; step++) losses.push((await trainStep(model, optimizer)).loss);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.7);
    expect(await model.param(q).floats()).toEqual(before);
    optimizer.dispose();
    model.dispose();

    const policy = Qwen2Model.random(tiny, 3, backend);
    const halfPolicy = Qwen2Model.random(tiny, 3, backend).toDtype("f16");
    const fromHalf = await Qwen2ValueModel.fromPolicy(halfPolicy, 1);
    expect(fromHalf.dtype).toBe("f16"); // a critic copies its policy's precision
    fromHalf.dispose();
    halfPolicy.dispose();
    const critic = await Qwen2ValueModel.fromPolicy(policy, 1);
    policy.dispose();
    const { input } = batchOf(tiny, 8);
    const valuesOf = () => noGrad(() => critic.values(input)).floats();
    const full = await valuesOf();
    critic.toDtype("f16");
    expect(critic.dtype).toBe("f16");
    expect(critic.scoreWeight.dtype).toBe("f32");
    const half = noGrad(() => critic.values(input));
    expect(half.dtype).toBe("f32");
    expect(maxAbsDiff(await half.floats(), full)).toBeLessThan(2e-2 * Math.max(...full.map(Math.abs)) + 1e-3);
    half.dispose();
    critic.dispose();
  });

  it("casts nothing in an f16 training step, forward or backward: every op runs on halves", async () => {
    let casts = 0;
    const cpu = createCpuBackend();
    const counting: typeof cpu = {
      ...cpu,
      cast: (args) => {
        casts++;
        cpu.cast(args);
      },
    };
    const model = Qwen2Model.random({ ...tiny, numHiddenLayers: 2 }, 2, counting).toDtype("f16");
    const { input } = batchOf(tiny, 8);
    casts = 0;
    scope(() => {
      const logits = model.logits(input);
      // The embedding, norms, RoPE, attention, SwiGLU, products, residual adds and the head.
      expect(casts).toBe(0);
      backward(mean(logits));
      expect(casts).toBe(0);
      cast(logits, "f32"); // the counter counts
      expect(casts).toBe(1);
    });
    model.dispose();
  });

  it("scores log-probs on the f16 head's logits without an f32 copy of them, whole or in chunks", async () => {
    const castSizes: number[] = [];
    const cpu = createCpuBackend();
    const counting: typeof cpu = {
      ...cpu,
      cast: (args) => {
        castSizes.push(args.n);
        cpu.cast(args);
      },
    };
    const shape = { ...tiny, vocabSize: 40 };
    const model = Qwen2Model.random(shape, 2, counting).toDtype("f16");
    const { input, targets } = batchOf(shape, 8);
    for (const chunkTokens of [Number.POSITIVE_INFINITY, 3]) {
      model.maxLogits = chunkTokens * shape.vocabSize;
      castSizes.length = 0;
      scope(() => {
        const { logProbs, entropy } = model.sequenceLogProbs(input, targets);
        expect([logProbs.dtype, entropy.dtype]).toEqual(["f32", "f32"]);
        backward(sum(add(logProbs, entropy)));
      });
      // No f32 copy of the logits, nor any other cast.
      expect(castSizes).toEqual([]);
    }
    scope(() => cast(model.logits(input), "f32")); // the counter counts
    expect(castSizes).toHaveLength(1);
    model.dispose();
  });

  it("rejects other element types, naming them", async () => {
    const model = Qwen2Model.random(tiny, 4, await webGpuBackend());
    expect(() => model.toDtype("bf16" as "f16")).toThrow(/dtype must be "f32" or "f16", got "bf16"/);
    model.dispose();
  });
});
