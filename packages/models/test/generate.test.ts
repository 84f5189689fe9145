import {
  type Backend,
  noGrad,
  tensor,
  type WebGpuBackend,
  webGpuBackend,
  writeSlice,
} from "@ragen/tensor-webgpu";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type GenerateOptions,
  type Generation,
  generate,
  NonFiniteLogitsError,
} from "../src/model/generate.js";
import { NormalSampler } from "../src/model/init.js";
import { PrefixCache } from "../src/model/prefix-cache.js";
import { Qwen2Model, type Qwen2Shape } from "../src/model/qwen2.js";
import { sampleToken } from "../src/model/sampling.js";

const tiny: Qwen2Shape = {
  vocabSize: 40,
  hiddenSize: 32,
  intermediateSize: 48,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: false,
  initializerRange: 0.5,
};

let gpu: Backend;
let model: Qwen2Model;
beforeAll(async () => {
  gpu = await webGpuBackend();
  model = Qwen2Model.random(tiny, 5, gpu);
});
afterAll(() => model.dispose());

function logSoftmaxAt(row: Float32Array, index: number): number {
  const max = Math.max(...row);
  const z = Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
  return row[index]! - max - z;
}

/** generate with separate and with packed projections, and the matmul products each recorded. */
async function bothWays(m: Qwen2Model, prompts: Int32Array[], options: GenerateOptions) {
  const products = vi.spyOn(gpu, "matmul");
  try {
    const separate = await generate(m, prompts, { ...options, packProjections: false });
    const separateProducts = products.mock.calls.length;
    products.mockClear();
    const packed = await generate(m, prompts, options);
    return { separate, packed, separateProducts, packedProducts: products.mock.calls.length };
  } finally {
    products.mockRestore();
  }
}

describe("generate", () => {
  it("decodes with the KV cache exactly as a full recomputation would (greedy, ragged batch)", async () => {
    const prompts = [
      Int32Array.from([3, 7, 11, 2]),
      Int32Array.from([9]),
      Int32Array.from([1, 2, 3, 4, 5, 6]),
    ];
    const out = await generate(model, prompts, { maxNewTokens: 6, temperature: 0 });
    for (let b = 0; b < prompts.length; b++) {
      const full = Int32Array.from([...prompts[b]!, ...out[b]!.tokens]);
      const logits = await noGrad(() => model.logits({ ids: full, batch: 1, seqLen: full.length })).floats();
      for (let t = 0; t < out[b]!.tokens.length; t++) {
        const row = logits.subarray((prompts[b]!.length - 1 + t) * 40, (prompts[b]!.length + t) * 40);
        // Greedy: each generated token is the argmax of the full recomputation at that position...
        let argmax = 0;
        for (let i = 1; i < 40; i++) if (row[i]! > row[argmax]!) argmax = i;
        expect(out[b]!.tokens[t]).toBe(argmax);
        // ...and its log-prob matches the recomputed one.
        expect(Math.abs(out[b]!.logProbs[t]! - logSoftmaxAt(row, argmax))).toBeLessThan(1e-4);
      }
    }
  });

  it("is reproducible for a seed and differs across seeds", async () => {
    const prompts = [Int32Array.from([4, 5]), Int32Array.from([6])];
    const a = await generate(model, prompts, { maxNewTokens: 12, temperature: 1, seed: 42 });
    const b = await generate(model, prompts, { maxNewTokens: 12, temperature: 1, seed: 42 });
    const c = await generate(model, prompts, { maxNewTokens: 12, temperature: 1, seed: 43 });
    expect(a.map((g) => Array.from(g.tokens))).toEqual(b.map((g) => Array.from(g.tokens)));
    expect(a.map((g) => Array.from(g.tokens))).not.toEqual(c.map((g) => Array.from(g.tokens)));
  });

  it("with rowSeeds, samples each prompt as it samples that prompt alone with its seed, whatever shares the batch", async () => {
    const prompts = [Int32Array.from([4, 5]), Int32Array.from([6]), Int32Array.from([7, 8, 9])];
    const options = { maxNewTokens: 10, temperature: 1 };
    const together = await generate(model, prompts, { ...options, rowSeeds: [5, 6, 7] });
    const reordered = await generate(model, [prompts[2]!, prompts[0]!], { ...options, rowSeeds: [7, 5] });
    for (const [b, prompt] of prompts.entries()) {
      const alone = await generate(model, [prompt], { ...options, seed: 5 + b });
      expect(Array.from(together[b]!.tokens)).toEqual(Array.from(alone[0]!.tokens));
      for (const [t, logProb] of alone[0]!.logProbs.entries())
        expect(Math.abs(together[b]!.logProbs[t]! - logProb)).toBeLessThan(1e-4);
    }
    expect(Array.from(reordered[0]!.tokens)).toEqual(Array.from(together[2]!.tokens));
    expect(Array.from(reordered[1]!.tokens)).toEqual(Array.from(together[0]!.tokens));
    // One stream for the batch draws differently from per-row streams.
    const shared = await generate(model, prompts, { ...options, seed: 5 });
    expect(shared.map((g) => Array.from(g.tokens))).not.toEqual(together.map((g) => Array.from(g.tokens)));
    await expect(generate(model, prompts, { ...options, rowSeeds: [1] })).rejects.toThrow(
      "generate(): 1 rowSeeds for 3 prompts",
    );
  });

  it("samples on the device the tokens sampleToken picks from read-back logits, finished rows still drawing", async () => {
    const prompts = [
      Int32Array.from([3, 7, 11, 2]),
      Int32Array.from([9]),
      Int32Array.from([1, 2, 3, 4, 5, 6]),
    ];
    const maxNewTokens = 8;
    const base = { maxNewTokens, temperature: 0.7, seed: 11 };
    // A stop token that ends row 1 early, so later draws of the other rows come after its finish.
    const unstopped = await generate(model, prompts, base);
    const options = { ...base, stopTokenIds: [unstopped[1]!.tokens[2]!] };
    const onDevice = vi.spyOn(gpu, "sampleRows");
    const out = await generate(model, prompts, options);
    expect(onDevice).toHaveBeenCalled();
    onDevice.mockRestore();
    expect(out[1]!.finishReason).toBe("stop");
    expect(out[1]!.tokens.length).toBeLessThan(maxNewTokens);
    expect(Math.max(...out.map((g) => g.tokens.length))).toBe(maxNewTokens);

    // generate's draws: one per row per step, in row order, finished rows included.
    const random = new NormalSampler(options.seed);
    const draws = Array.from({ length: maxNewTokens }, () => Array.from(prompts, () => random.uniform()));
    for (let b = 0; b < prompts.length; b++) {
      const full = Int32Array.from([...prompts[b]!, ...out[b]!.tokens]);
      const logits = await noGrad(() => model.logits({ ids: full, batch: 1, seqLen: full.length })).floats();
      for (let t = 0; t < out[b]!.tokens.length; t++) {
        const row = logits.subarray((prompts[b]!.length - 1 + t) * 40, (prompts[b]!.length + t) * 40);
        const expected = sampleToken(row, options, draws[t]![b]!);
        expect(out[b]!.tokens[t], `row ${b} token ${t}`).toBe(expected.token);
        expect(Math.abs(out[b]!.logProbs[t]! - expected.logProb)).toBeLessThan(1e-4);
      }
    }
  });

  it("records each step from the device's tokens before reading the previous step's, and frees every step", async () => {
    const ctx = (gpu as WebGpuBackend).ctx;
    const prompts = [Int32Array.from([3, 7]), Int32Array.from([9, 1, 4])];
    const greedy = await generate(model, prompts, { maxNewTokens: 6, temperature: 0 });
    await ctx.sync();
    const inUse = ctx.pool.stats.inUseBytes;
    const embeddings = vi.spyOn(gpu, "embedding");
    const recordedAt: number[] = [];
    // Both rows stop at their second token: the step recorded after that is dropped.
    const stopTokenIds = greedy.map((g) => g.tokens[1]!);
    const out = await generate(model, prompts, {
      maxNewTokens: 6,
      temperature: 0,
      stopTokenIds,
      onStep: () => recordedAt.push(embeddings.mock.calls.length),
    });
    embeddings.mockRestore();
    // At the first token the prefill and the next step had been recorded, not only the prefill.
    expect(recordedAt[0]).toBe(2);
    for (const [b, g] of out.entries()) {
      const firstStop = Array.from(greedy[b]!.tokens).findIndex((t) => stopTokenIds.includes(t));
      expect(Array.from(g.tokens)).toEqual(Array.from(greedy[b]!.tokens.slice(0, firstStop + 1)));
    }
    await ctx.sync();
    expect(ctx.pool.stats.inUseBytes).toBe(inUse);
  });

  it("runs a decoding step's q/k/v and gate/up projections as one product each, with the same results", async () => {
    const prompts = [Int32Array.from([3, 7, 11]), Int32Array.from([9])];
    const options = { maxNewTokens: 5, temperature: 1, seed: 3 };
    const { separate, packed, separateProducts, packedProducts } = await bothWays(model, prompts, options);
    // Three fewer products per layer in each of the 4 decoding steps after the prefill.
    expect(separateProducts - packedProducts).toBe(3 * tiny.numHiddenLayers * 4);
    for (const [b, g] of packed.entries()) {
      expect(Array.from(g.tokens)).toEqual(Array.from(separate[b]!.tokens));
      expect(Array.from(g.logProbs)).toEqual(Array.from(separate[b]!.logProbs));
    }
  });

  it("merges LoRA adapters into the packed weights: a decoding step runs no adapter products", async () => {
    const lora = Qwen2Model.random(tiny, 6, gpu);
    try {
      const adapters = lora.attachLora({ rank: 2, alpha: 4 });
      // B starts at zero (the adapted model equals its base): give every adapter an update.
      const sampler = new NormalSampler(4);
      noGrad(() => {
        for (const [name, b] of adapters.peftWeights()) {
          if (!name.includes("lora_B")) continue;
          const update = tensor(sampler.normals(b.size, 0.5), b.shape, { backend: gpu });
          writeSlice(b, update, 0, 0);
          update.dispose();
        }
      });
      const prompts = [Int32Array.from([3, 7, 11]), Int32Array.from([9])];
      const options = { maxNewTokens: 5, temperature: 0 };
      const { separate, packed, separateProducts, packedProducts } = await bothWays(lora, prompts, options);
      // Per layer and decoding step, 21 products (7 modules, each with its adapter's two) become 4 (q/k/v,
      // o, gate/up, down); packing merged 7 updates per layer once.
      const layers = tiny.numHiddenLayers;
      expect(separateProducts - packedProducts).toBe((21 - 4) * layers * 4 - 7 * layers);
      for (const [b, g] of packed.entries()) {
        expect(Array.from(g.tokens)).toEqual(Array.from(separate[b]!.tokens));
        for (const [t, logProb] of g.logProbs.entries())
          expect(Math.abs(logProb - separate[b]!.logProbs[t]!)).toBeLessThan(1e-5);
      }
    } finally {
      lora.dispose();
    }
  });

  it("packs no projections for runs that record gradients, nor for runs with other adapters", async () => {
    const packed = noGrad(() => model.packProjections());
    const cache = model.createCache(1, 4);
    try {
      const step = () =>
        model.run({ ids: Int32Array.from([1]), batch: 1, seqLen: 1 }, Int32Array.from([0]), cache, packed);
      expect(step).toThrow(/packed projections .* without gradients/);
      const lora = Qwen2Model.random(tiny, 7, gpu);
      lora.attachLora({ rank: 2, alpha: 4 });
      const loraCache = lora.createCache(1, 4);
      expect(() =>
        noGrad(() =>
          lora.run(
            { ids: Int32Array.from([1]), batch: 1, seqLen: 1 },
            Int32Array.from([0]),
            loraCache,
            packed,
          ),
        ),
      ).toThrow(/made without the LoRA adapters, and this run applies them/);
      loraCache.dispose();
      lora.dispose();
    } finally {
      cache.dispose();
      packed.dispose();
    }
  });

  it("samples top-k and top-p on the CPU", async () => {
    const onDevice = vi.spyOn(gpu, "sampleRows");
    const out = await generate(model, [Int32Array.from([4, 5])], { maxNewTokens: 6, topK: 3, seed: 1 });
    expect(onDevice).not.toHaveBeenCalled();
    onDevice.mockRestore();
    expect(out[0]!.tokens.length).toBe(6);
  });

  it("stops a sequence at a stop token and reports why", async () => {
    const greedy = await generate(model, [Int32Array.from([3, 7])], { maxNewTokens: 5, temperature: 0 });
    const stopAt = greedy[0]!.tokens[1]!;
    const out = await generate(model, [Int32Array.from([3, 7])], {
      maxNewTokens: 5,
      temperature: 0,
      stopTokenIds: [stopAt],
    });
    const firstStop = Array.from(greedy[0]!.tokens).indexOf(stopAt);
    expect(out[0]!.finishReason).toBe("stop");
    expect(Array.from(out[0]!.tokens)).toEqual(Array.from(greedy[0]!.tokens.slice(0, firstStop + 1)));
    expect(greedy[0]!.finishReason).toBe(greedy[0]!.tokens.length === 5 ? "length" : "stop");
  });

  it("rejects bad options clearly", async () => {
    await expect(generate(model, [Int32Array.from([1])], { maxNewTokens: 0 })).rejects.toThrow(
      /maxNewTokens/,
    );
    await expect(generate(model, [Int32Array.from([1])], { maxNewTokens: 2, topP: 0 })).rejects.toThrow(
      /topP/,
    );
    await expect(generate(model, [new Int32Array(0)], { maxNewTokens: 2 })).rejects.toThrow(
      /at least one token/,
    );
  });

  it("stops on logits that are not finite, naming the row and the step, and frees what it made", async () => {
    const prompts = [Int32Array.from([1, 2, 3]), Int32Array.from([4, 5])];
    for (const dtype of ["f32", "f16"] as const) {
      const broken = Qwen2Model.random(tiny, 5, gpu).toDtype(dtype);
      // A NaN in the final norm's weight makes every logit NaN.
      const norm = broken.params.get("model.norm.weight")!;
      writeSlice(
        norm,
        tensor(new Float32Array(norm.size).fill(Number.NaN), norm.shape, { backend: gpu }),
        0,
        0,
      );
      for (const options of [
        { maxNewTokens: 4, temperature: 1 },
        { maxNewTokens: 4, topK: 5 },
      ]) {
        await generate(model, prompts, options); // the kernels compiled, the pool filled
        const before = (gpu as WebGpuBackend).ctx.pool.stats.inUseBytes;
        const failure = generate(broken, prompts, options);
        await expect(failure).rejects.toThrow(NonFiniteLogitsError);
        await expect(failure).rejects.toThrow(/row 0's token at step 1 is NaN/);
        if (dtype === "f16") await expect(failure).rejects.toThrow(/f16's range \(65504\)/);
        else await expect(failure).rejects.not.toThrow(/f16/);
        expect((gpu as WebGpuBackend).ctx.pool.stats.inUseBytes).toBe(before);
      }
      broken.dispose();
    }
  });
});

describe("generate with the prefill in groups of rows", () => {
  const prompts = [
    Int32Array.from([3, 7, 11, 2]),
    Int32Array.from([9]),
    Int32Array.from([1, 2, 3, 4, 5, 6]),
    Int32Array.from([8, 8]),
    Int32Array.from([5, 4, 3, 2, 1]),
  ];
  const options = { maxNewTokens: 7, temperature: 1, seed: 4 };
  const same = (a: Generation[], b: Generation[]) => {
    expect(a.map((g) => Array.from(g.tokens))).toEqual(b.map((g) => Array.from(g.tokens)));
    for (const [r, g] of a.entries())
      for (const [t, lp] of g.logProbs.entries())
        expect(Math.abs(lp - b[r]!.logProbs[t]!)).toBeLessThan(1e-5);
  };

  it("samples the same tokens and log-probs as one pass, in groups that divide the batch or not", async () => {
    const whole = await generate(model, prompts, options);
    const runs = vi.spyOn(model, "run");
    try {
      // 6 tokens a row: 12 tokens a pass is 2 rows (groups of 2, 2 and 1); 6 or fewer is 1 row a pass.
      for (const [prefillTokens, passes] of [
        [12, 3],
        [6, 5],
        [1, 5],
      ] as const) {
        runs.mockClear();
        same(await generate(model, prompts, { ...options, prefillTokens }), whole);
        expect(runs.mock.calls.filter(([input]) => input.seqLen > 1).length).toBe(passes);
        expect(runs.mock.calls.filter(([input]) => input.seqLen > 1).map(([input]) => input.batch)).toEqual(
          prefillTokens === 12 ? [2, 2, 1] : [1, 1, 1, 1, 1],
        );
      }
      // Greedy and top-k (sampled on the host) agree too.
      same(
        await generate(model, prompts, { ...options, temperature: 0, prefillTokens: 12 }),
        await generate(model, prompts, { ...options, temperature: 0 }),
      );
      same(
        await generate(model, prompts, { ...options, topK: 5, prefillTokens: 12 }),
        await generate(model, prompts, { ...options, topK: 5 }),
      );
    } finally {
      runs.mockRestore();
    }
  });

  it("extends the rows a prefix cache filled, group by group", async () => {
    const cache = new PrefixCache();
    const turn1 = await generate(model, prompts, { ...options, prefixCache: cache, prefillTokens: 10 });
    const second = prompts.map((p, b) => Int32Array.from([...p, ...turn1[b]!.tokens, 30 + b, 31]));
    const grouped = await generate(model, second, {
      ...options,
      seed: 5,
      prefixCache: cache,
      prefillTokens: 6,
    });
    same(grouped, await generate(model, second, { ...options, seed: 5 }));
    expect(cache.stats.reusedTokens).toBeGreaterThan(0);
    cache.clear();
  });

  it("frees each group's cache and intermediates", async () => {
    await generate(model, prompts, { ...options, prefillTokens: 12 }); // compiles every kernel first
    const before = (gpu as WebGpuBackend).ctx.pool.stats.inUseBytes;
    await generate(model, prompts, { ...options, prefillTokens: 12 });
    expect((gpu as WebGpuBackend).ctx.pool.stats.inUseBytes).toBe(before);
  });

  it("rejects a prefillTokens that is not a positive integer", async () => {
    for (const prefillTokens of [0, -3, 2.5])
      await expect(generate(model, prompts, { ...options, prefillTokens })).rejects.toThrow(
        `generate(): prefillTokens must be a positive integer, got ${prefillTokens}`,
      );
  });
});

describe("sampleToken", () => {
  const logits = Float32Array.from([2, 1, 0.5, -1, 3]);
  it("samples in proportion to softmax(logits / T)", () => {
    const counts = new Array(5).fill(0);
    const n = 20000;
    for (let i = 0; i < n; i++) counts[sampleToken(logits, { temperature: 0.5 }, (i + 0.5) / n).token]++;
    const weights = Array.from(logits, (l) => Math.exp(l / 0.5));
    const total = weights.reduce((a, b) => a + b, 0);
    for (const [i, c] of counts.entries()) expect(Math.abs(c / n - weights[i]! / total)).toBeLessThan(0.002);
  });

  it("keeps only the top-k and the top-p nucleus", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 1000; i++) seen.add(sampleToken(logits, { topK: 2 }, i / 1000).token);
    expect([...seen].sort()).toEqual([0, 4]);
    const nucleus = new Set<number>();
    // p(4) ≈ 0.61, p(0) ≈ 0.22: top-p 0.7 keeps exactly those two.
    for (let i = 0; i < 1000; i++) nucleus.add(sampleToken(logits, { topP: 0.7 }, i / 1000).token);
    expect([...nucleus].sort()).toEqual([0, 4]);
  });
});

describe("generate with a prefix cache", () => {
  // Multi-turn prompts: each turn's prompt is the last one, the sampled tokens and some new text.
  const first = [
    Int32Array.from([3, 7, 11, 2, 5]),
    Int32Array.from([9, 1]),
    Int32Array.from([1, 2, 3, 4, 5, 6, 7]),
  ];
  const extra = [[8, 8, 3], [4], [6, 5, 4, 3, 2, 1, 30, 31]];
  const options = { maxNewTokens: 5, temperature: 1, seed: 9, stopTokenIds: [0] };

  // An f16 model's cache is f16: the reused rows give what recomputing them gives up to f16 rounding.
  for (const [dtype, tolerance] of [
    ["f32", 1e-4],
    ["f16", 3e-2],
  ] as const) {
    it(`gives the same tokens and log-probs as recomputing the whole prompts, computing far fewer tokens (${dtype})`, async () => {
      const m = dtype === "f32" ? model : Qwen2Model.random(tiny, 5, gpu).toDtype(dtype);
      const cache = new PrefixCache();
      const turn1 = await generate(m, first, { ...options, prefixCache: cache });
      const second = first.map((p, b) => Int32Array.from([...p, ...turn1[b]!.tokens, ...extra[b]!]));
      const computedBefore = cache.stats.computedTokens;
      const cached = await generate(m, second, { ...options, seed: 10, prefixCache: cache });
      const fresh = await generate(m, second, { ...options, seed: 10 });
      expect(cached.map((g) => Array.from(g.tokens))).toEqual(fresh.map((g) => Array.from(g.tokens)));
      cached.forEach((g, b) => {
        g.logProbs.forEach((lp, t) => {
          expect(Math.abs(lp - fresh[b]!.logProbs[t]!)).toBeLessThan(tolerance);
        });
      });
      // Only the new text (plus each row's last sampled token) ran: the longest is 9 tokens, for 3 rows.
      expect(cache.stats.computedTokens - computedBefore).toBe(3 * 9);
      expect(cache.stats.reusedTokens).toBeGreaterThan(0);
      cache.clear();
      if (m !== model) m.dispose();
    });
  }

  it("finds each prompt's prefix when rows are dropped, reordered or new", async () => {
    const cache = new PrefixCache();
    const turn1 = await generate(model, first, { ...options, prefixCache: cache });
    const continued = (b: number) => Int32Array.from([...first[b]!, ...turn1[b]!.tokens, ...extra[b]!]);
    // Env 1 finished; env 2 now comes first; a new env shares only two tokens with env 2.
    const second = [continued(2), continued(0), Int32Array.from([1, 2, 17, 18])];
    const cached = await generate(model, second, { ...options, seed: 3, prefixCache: cache });
    const fresh = await generate(model, second, { ...options, seed: 3 });
    expect(cached.map((g) => Array.from(g.tokens))).toEqual(fresh.map((g) => Array.from(g.tokens)));
    expect(cache.match([continued(0)])[0]).toEqual({ row: 1, length: continued(0).length - 1 });
    cache.clear();
    expect(cache.match([continued(0)])[0]!.length).toBe(0);
  });
});
