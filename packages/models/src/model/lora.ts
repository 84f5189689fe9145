import {
  add,
  addLinear,
  type Backend,
  linear,
  matmul,
  noGrad,
  scale,
  type Tensor,
  tensor,
  writeSlice,
} from "@ragen/tensor-webgpu";
import { NormalSampler } from "./init.js";

/** The linear layers of a Qwen2 block, by their Hugging Face module names. */
export const QWEN2_LINEAR_MODULES = [
  "q_proj",
  "k_proj",
  "v_proj",
  "o_proj",
  "gate_proj",
  "up_proj",
  "down_proj",
] as const;

/** A linear module LoRA can adapt. */
export type LoraTarget = (typeof QWEN2_LINEAR_MODULES)[number];

export interface LoraOptions {
  /** Rank r of the update B·A (RAGEN's LoRA setting: 64). */
  rank: number;
  /** Scale numerator: the update is (alpha / rank)·B·A (RAGEN: 64). */
  alpha: number;
  /** Which linear modules get adapters (default all seven). */
  targets?: readonly LoraTarget[];
  seed?: number;
}

interface Adapter {
  /** [rank, in] */
  a: Tensor;
  /** [out, rank], zero at the start so the adapted model starts equal to the base. */
  b: Tensor;
}

/**
 * Low-rank adapters on linear layers: y = x·Wᵀ + (alpha/r)·(x·Aᵀ)·Bᵀ. Only A and B train; `merge` folds
 * them into W. Names follow PEFT (`base_model.model.<module>.lora_A.weight`) for export.
 */
export class LoraAdapters {
  readonly scale: number;
  private readonly adapters = new Map<string, Adapter>();

  constructor(
    /** Module name (e.g. model.layers.0.self_attn.q_proj) -> its weight's [out, in]. */
    modules: ReadonlyMap<string, readonly [number, number]>,
    readonly options: LoraOptions,
    private readonly backend: Backend,
    /** The adapters' element type: the base weights' (f16 for a model in mixed precision). */
    dtype: "f32" | "f16" = "f32",
  ) {
    if (!Number.isInteger(options.rank) || options.rank < 1)
      throw new RangeError(`LoRA rank must be a positive integer, got ${options.rank}`);
    if (!(options.alpha > 0)) throw new RangeError(`LoRA alpha must be positive, got ${options.alpha}`);
    this.scale = options.alpha / options.rank;
    const random = new NormalSampler(options.seed ?? 0);
    for (const [module, [out, inputs]] of modules) {
      // A ~ U(-1/sqrt(in), 1/sqrt(in)) as PEFT's Kaiming-uniform default; B = 0.
      const bound = 1 / Math.sqrt(inputs);
      const aValues = Float32Array.from(
        { length: options.rank * inputs },
        () => (2 * random.uniform() - 1) * bound,
      );
      this.adapters.set(module, {
        a: tensor(aValues, [options.rank, inputs], {
          backend,
          dtype,
          requiresGrad: true,
          name: `${module}.lora_A.weight`,
        }).keep(),
        b: tensor(new Float32Array(out * options.rank), [out, options.rank], {
          backend,
          dtype,
          requiresGrad: true,
          name: `${module}.lora_B.weight`,
        }).keep(),
      });
    }
  }

  has(module: string): boolean {
    return this.adapters.has(module);
  }

  /** base + the adapter's update for input x (base = x·Wᵀ (+ bias)). */
  apply(module: string, x: Tensor, base: Tensor): Tensor {
    const adapter = this.adapters.get(module);
    if (!adapter) return base;
    const down = linear(x, adapter.a);
    // base + scale · (x·Aᵀ)·Bᵀ in one kernel: the update never exists on its own.
    const out = addLinear(base, down, adapter.b, undefined, this.scale);
    // Only x·Aᵀ is read by a backward (B's gradient); the tape keeps it, so it need not wait for the
    // caller's scope.
    down.dispose();
    return out;
  }

  parameters(): Tensor[] {
    return [...this.adapters.values()].flatMap(({ a, b }) => [a, b]);
  }

  /** Fold every update into its weight in place: W += (alpha/r)·B·A. */
  mergeInto(weightOf: (module: string) => Tensor): void {
    for (const module of this.adapters.keys()) {
      const weight = weightOf(module);
      const merged = this.mergedWeight(module, weight)!;
      writeSlice(weight, merged, 0, 0);
      merged.dispose();
    }
  }

  /** A new tensor W + (alpha/r)·B·A for `module`'s weight W (no gradient), or undefined without an adapter. */
  mergedWeight(module: string, weight: Tensor): Tensor | undefined {
    const adapter = this.adapters.get(module);
    if (!adapter) return undefined;
    return noGrad(() => {
      const update = matmul(adapter.b, adapter.a);
      const scaled = scale(update, this.scale);
      update.dispose();
      const merged = add(weight, scaled);
      scaled.dispose();
      return merged;
    });
  }

  /** The adapters' tensors by their PEFT names (lora_A [rank, in], lora_B [out, rank]), for saving. */
  peftWeights(): Map<string, Tensor> {
    const out = new Map<string, Tensor>();
    for (const [module, { a, b }] of this.adapters) {
      out.set(`base_model.model.${module}.lora_A.weight`, a);
      out.set(`base_model.model.${module}.lora_B.weight`, b);
    }
    return out;
  }

  /**
   * Sets every adapter from values by PEFT name (as `peftWeights` names them: a saved adapter, a
   * checkpoint). Every adapter must be there with its size, and nothing else: throws naming `source`
   * and the first tensor that is missing, misshapen or has no place here.
   */
  load(values: ReadonlyMap<string, Float32Array>, source = "adapter"): void {
    const weights = this.peftWeights();
    for (const [name, weight] of weights) {
      const data = values.get(name);
      if (!data) throw new Error(`${source}: no tensor ${name}`);
      if (data.length !== weight.size)
        throw new Error(
          `${source}: ${name} has ${data.length} values, the adapter [${weight.shape.join(", ")}] needs ${weight.size}`,
        );
    }
    const extra = [...values.keys()].find((name) => !weights.has(name));
    if (extra !== undefined)
      throw new Error(
        `${source}: ${extra} has no place in these adapters (rank ${this.options.rank}, targets ${(this.options.targets ?? QWEN2_LINEAR_MODULES).join(", ")})`,
      );
    noGrad(() => {
      for (const [name, weight] of weights) {
        const data = tensor(values.get(name)!, weight.shape, { backend: this.backend });
        writeSlice(weight, data, 0, 0);
        data.dispose();
      }
    });
  }

  /** The adapters' values in PEFT's names. */
  async stateDict(): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    for (const [name, weight] of this.peftWeights()) out.set(name, await weight.floats());
    return out;
  }

  dispose(): void {
    for (const t of this.parameters()) t.dispose();
    this.adapters.clear();
  }
}
