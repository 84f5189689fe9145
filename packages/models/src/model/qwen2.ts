/**
 * The Qwen2 causal language model (Qwen2ForCausalLM) on @ragen/tensor-webgpu, in one readable file.
 * Parameter names are Hugging Face's, so checkpoints move both ways without renaming.
 *
 *   x = embed(ids)
 *   per layer: h = x + o_proj(attention(rope(q(norm(x))), rope(k(norm(x))), v(norm(x))))
 *              x = h + down(silu(gate(norm(h))) * up(norm(h)))
 *   logits = lm_head(norm(x))          (lm_head = embed_tokens when tied)
 */
import {
  addLinear,
  attention,
  type Backend,
  type CacheAppend,
  cast,
  checkpoint,
  concat,
  copyElements,
  decodeAttention,
  decodeAttentionPacked,
  embedding,
  entropy,
  isGradEnabled,
  linear,
  narrow,
  noGrad,
  normLinear,
  reshape,
  rmsNorm,
  rope,
  ropeAppend,
  ropeAppendPacked,
  scope,
  swiglu,
  swigluLinear,
  swigluPacked,
  type Tensor,
  tensor,
  tokenLogProbs,
  writeSlice,
  zeros,
} from "@ragen/tensor-webgpu";
import type { Qwen2Config } from "../io/config.js";
import { NormalSampler } from "./init.js";
import { LoraAdapters, type LoraOptions, QWEN2_LINEAR_MODULES } from "./lora.js";
import { type PackedLayer, PackedProjections } from "./packed-projections.js";

/** The parts of a config the network's shape depends on. */
export type Qwen2Shape = Pick<
  Qwen2Config,
  | "vocabSize"
  | "hiddenSize"
  | "intermediateSize"
  | "numHiddenLayers"
  | "numAttentionHeads"
  | "numKeyValueHeads"
  | "rmsNormEps"
  | "ropeTheta"
  | "tieWordEmbeddings"
> & { initializerRange?: number };

/** A batch of token sequences, left-padded to a common length. */
export interface TokenBatch {
  /**
   * [batch * seqLen] token ids, row-major. Padding ids are arbitrary valid ids (they are masked). An i32
   * tensor on the model's backend keeps them on the device (decoding from tokens sampled there); such a
   * run cannot be differentiated.
   */
  ids: Int32Array | Tensor;
  batch: number;
  seqLen: number;
  /** Per sequence, the index of its first real token (left padding before it); default 0. */
  start?: Int32Array;
}

/** What every decoder layer of one `run` shares. */
interface LayerRun {
  batch: number;
  seqLen: number;
  /** i32 [batch, seqLen] absolute positions. */
  positions: Tensor;
  heads: { numHeads: number; numKvHeads: number; kvStart: Tensor | undefined };
  cache: KvCache | undefined;
  /** One token after cached ones. */
  decoding: boolean;
  /** Several tokens after cached ones. */
  extending: boolean;
  /** The adapters this run applies (none when they are switched off), fixed for its recomputations too. */
  adapters: LoraAdapters | undefined;
  /** Stacked q/k/v and gate/up weights for cached steps (see PackedProjections). */
  packed: PackedProjections | undefined;
}

/** Name and shape of every parameter, in Hugging Face's order. */
export function qwen2ParameterShapes(c: Qwen2Shape): [string, number[]][] {
  const headDim = c.hiddenSize / c.numAttentionHeads;
  const kvDim = c.numKeyValueHeads * headDim;
  const shapes: [string, number[]][] = [["model.embed_tokens.weight", [c.vocabSize, c.hiddenSize]]];
  for (let i = 0; i < c.numHiddenLayers; i++) {
    const p = `model.layers.${i}`;
    shapes.push(
      [`${p}.input_layernorm.weight`, [c.hiddenSize]],
      [`${p}.self_attn.q_proj.weight`, [c.hiddenSize, c.hiddenSize]],
      [`${p}.self_attn.q_proj.bias`, [c.hiddenSize]],
      [`${p}.self_attn.k_proj.weight`, [kvDim, c.hiddenSize]],
      [`${p}.self_attn.k_proj.bias`, [kvDim]],
      [`${p}.self_attn.v_proj.weight`, [kvDim, c.hiddenSize]],
      [`${p}.self_attn.v_proj.bias`, [kvDim]],
      [`${p}.self_attn.o_proj.weight`, [c.hiddenSize, c.hiddenSize]],
      [`${p}.post_attention_layernorm.weight`, [c.hiddenSize]],
      [`${p}.mlp.gate_proj.weight`, [c.intermediateSize, c.hiddenSize]],
      [`${p}.mlp.up_proj.weight`, [c.intermediateSize, c.hiddenSize]],
      [`${p}.mlp.down_proj.weight`, [c.hiddenSize, c.intermediateSize]],
    );
  }
  shapes.push(["model.norm.weight", [c.hiddenSize]]);
  if (!c.tieWordEmbeddings) shapes.push(["lm_head.weight", [c.vocabSize, c.hiddenSize]]);
  return shapes;
}

export class Qwen2WeightsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "Qwen2WeightsError";
  }
}

/** Element types a model's weights may have (f16: mixed precision, see Qwen2Model.toDtype). */
export type ModelDtype = "f32" | "f16";

/** Keys and values of every layer for the tokens seen so far: [batch, capacity, kvHeads, headDim] each. */
export class KvCache {
  /** Tokens written so far (the same for every sequence of the batch). */
  length = 0;
  constructor(
    readonly keys: Tensor[],
    readonly values: Tensor[],
    readonly capacity: number,
  ) {}

  /**
   * Copy `count` positions of every layer's keys and values into `target`, from position `from` of this
   * cache to position `to` of target's; a position is row · capacity + slot, so the positions of
   * consecutive rows follow each other.
   */
  copyTo(target: KvCache, from: number, to: number, count: number): void {
    const perPosition = this.keys[0]!.size / (this.keys[0]!.shape[0]! * this.capacity);
    for (let layer = 0; layer < this.keys.length; layer++) {
      for (const kind of ["keys", "values"] as const)
        copyElements(
          this[kind][layer]!,
          from * perPosition,
          target[kind][layer]!,
          to * perPosition,
          count * perPosition,
        );
    }
  }

  dispose(): void {
    for (const t of [...this.keys, ...this.values]) t.dispose();
  }
}

/**
 * The most logits `sequenceLogProbs` keeps alive at once, by default: 2^26 values (256 MiB in f32), 441
 * tokens of Qwen2's 151,936-token vocabulary. Whole, a micro-batch of 4 × 656 tokens makes 1.6 GB of
 * logits and twice that in their gradients.
 */
export const DEFAULT_MAX_LOGITS = 2 ** 26;

/** Tokens per chunk of the head when at most `maxLogits` logits may be alive at once. */
export function logitsChunkTokens(vocabSize: number, maxLogits = DEFAULT_MAX_LOGITS): number {
  return Math.max(1, Math.floor(maxLogits / vocabSize));
}

export class Qwen2Model {
  readonly headDim: number;
  /**
   * Activation recomputation: each decoder layer keeps only its input for the backward, which runs the
   * layer's forward again to get its gradients. Training memory for activations drops from every layer's
   * intermediates to one layer's plus each layer's input, for about one more forward per step (see
   * estimateTrainingMemory). Applies to runs that record gradients; generation is unchanged.
   */
  gradientCheckpointing = false;
  /**
   * The most logits `sequenceLogProbs` keeps alive at once. Past it, the head runs over chunks of tokens,
   * each recomputed in the backward (one more pass of lm_head over the tokens): the logits and their
   * gradients take a chunk's memory instead of the whole micro-batch's. Infinity turns chunking off.
   */
  maxLogits = DEFAULT_MAX_LOGITS;
  private lora: LoraAdapters | undefined;
  /** Open `withoutAdapters` scopes: while above 0, forwards skip the adapters. */
  private adaptersOff = 0;
  private constructor(
    readonly config: Qwen2Shape,
    private readonly weights: Map<string, Tensor>,
  ) {
    this.headDim = config.hiddenSize / config.numAttentionHeads;
  }

  /** Every weight by its Hugging Face name. */
  get params(): ReadonlyMap<string, Tensor> {
    return this.weights;
  }

  /** The weights' element type: f32, or f16 after `toDtype("f16")`. */
  get dtype(): ModelDtype {
    return this.param("model.embed_tokens.weight").dtype as ModelDtype;
  }

  /**
   * Store every weight in `dtype`, in place: "f16" is mixed precision. Products then take halves and
   * accumulate in f32 (tensor cores where the adapter has them); norms, RoPE and attention read and write
   * halves and compute in f32; log-probs come out f32; `generate` decodes on the f16 weights with an f16
   * KV cache (createCache). Train an
   * f16 model with AdamW, which keeps an f32 master copy of each f16 weight, and with its `lossScaling`,
   * so that small gradients survive f16's range. LoRA adapters attached later take the same type.
   * Converting twice to the same type does nothing; make optimizers after converting.
   */
  toDtype(dtype: ModelDtype): this {
    if (dtype !== "f32" && dtype !== "f16")
      throw new RangeError(`toDtype(): dtype must be "f32" or "f16", got ${JSON.stringify(dtype)}`);
    if (dtype === this.dtype) return this;
    if (this.lora)
      throw new Error("toDtype(): LoRA adapters are attached; convert the model before attachLora()");
    for (const [name, weight] of this.weights) {
      const converted = noGrad(() => cast(weight, dtype));
      converted.requiresGrad = weight.requiresGrad;
      converted.name = weight.name;
      this.weights.set(name, converted.keep());
      weight.dispose();
    }
    return this;
  }

  /**
   * A randomly initialised model: weights N(0, initializerRange²) (0.02 by default, as transformers),
   * norms 1, biases 0. The same seed gives the same model.
   */
  static random(config: Qwen2Shape, seed: number, backend: Backend): Qwen2Model {
    const sampler = new NormalSampler(seed);
    const std = config.initializerRange ?? 0.02;
    const weights = new Map<string, Float32Array>();
    for (const [name, shape] of qwen2ParameterShapes(config)) {
      const size = shape.reduce((a, b) => a * b, 1);
      if (name.endsWith("norm.weight")) weights.set(name, new Float32Array(size).fill(1));
      else if (name.endsWith(".bias")) weights.set(name, new Float32Array(size));
      else weights.set(name, sampler.normals(size, std));
    }
    return Qwen2Model.fromWeights(config, weights, backend);
  }

  /** A model from named f32 weights (e.g. read from safetensors); checks every name and shape. */
  static fromWeights(
    config: Qwen2Shape,
    weights: ReadonlyMap<string, Float32Array>,
    backend: Backend,
  ): Qwen2Model {
    const params = new Map<string, Tensor>();
    const expected = qwen2ParameterShapes(config);
    const missing = expected.filter(([name]) => !weights.has(name)).map(([name]) => name);
    if (missing.length > 0) {
      throw new Qwen2WeightsError(
        `missing weights: ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ` and ${missing.length - 5} more` : ""}`,
      );
    }
    for (const [name, shape] of expected) {
      const data = weights.get(name)!;
      const size = shape.reduce((a, b) => a * b, 1);
      if (data.length !== size) {
        throw new Qwen2WeightsError(
          `${name}: expected ${size} values for shape [${shape.join(", ")}], got ${data.length}`,
        );
      }
      params.set(name, tensor(data, shape, { backend, requiresGrad: true, name }).keep());
    }
    return new Qwen2Model(config, params);
  }

  param(name: string): Tensor {
    const p = this.params.get(name);
    if (!p) throw new Qwen2WeightsError(`no parameter "${name}"`);
    return p;
  }

  /** Trainable parameters: the adapters' when LoRA is attached, else every weight in Hugging Face order. */
  parameters(): Tensor[] {
    return this.lora ? this.lora.parameters() : [...this.params.values()];
  }

  /** Absolute positions of a left-padded batch: padding gets 0, real tokens 0, 1, 2, ... */
  static positions(batch: TokenBatch): Int32Array {
    const out = new Int32Array(batch.batch * batch.seqLen);
    for (let b = 0; b < batch.batch; b++) {
      const start = batch.start?.[b] ?? 0;
      for (let t = 0; t < batch.seqLen; t++) out[b * batch.seqLen + t] = Math.max(0, t - start);
    }
    return out;
  }

  /** The final hidden states [batch, seqLen, hidden] (after the last norm). */
  hidden(input: TokenBatch): Tensor {
    return this.run(input, Qwen2Model.positions(input));
  }

  /**
   * Run the layers on `input` at absolute `positions`. With a `cache`, each layer's keys and values are
   * appended to it and the queries attend over everything cached before them: an empty cache is a
   * prefill, one token a decode step, several tokens a chunk after a cached prefix. All rows share the
   * cache's slots (left padding, `input.start`, masks the slots before a row's first token).
   * `packed` (from packProjections(), for these weights and adapters) runs the cached steps' q/k/v and
   * gate/up projections as one product each, with any LoRA adapters merged into the weights.
   */
  run(input: TokenBatch, positionIds: Int32Array, cache?: KvCache, packed?: PackedProjections): Tensor {
    const c = this.config;
    const { batch, seqLen } = input;
    const idCount = input.ids instanceof Int32Array ? input.ids.length : input.ids.size;
    if (idCount !== batch * seqLen) {
      throw new RangeError(`run(): ${idCount} ids do not fill ${batch}x${seqLen}`);
    }
    // With tokens already cached, one token is a decode step and several a chunk that extends the cache.
    const decoding = cache !== undefined && cache.length > 0 && seqLen === 1;
    const extending = cache !== undefined && cache.length > 0 && seqLen > 1;
    const adapters = this.adaptersOff > 0 ? undefined : this.lora;
    if (packed && isGradEnabled())
      throw new Error(
        "run(): packed projections are copies of the weights, for runs without gradients (noGrad)",
      );
    if (packed && packed.withAdapters !== (adapters !== undefined))
      throw new Error(
        `run(): the packed projections were made ${packed.withAdapters ? "with" : "without"} the LoRA adapters, and this run applies ${adapters ? "them" : "none"}`,
      );
    if (cache && cache.length + seqLen > cache.capacity)
      throw new RangeError(
        `run(): ${seqLen} more tokens do not fit the cache (${cache.length} of ${cache.capacity} used)`,
      );
    const backend = this.param("model.embed_tokens.weight").backend;
    const positions = tensor(positionIds, [batch, seqLen], { backend, dtype: "i32" });
    const kvStart = input.start ? tensor(input.start, [batch], { backend, dtype: "i32" }) : undefined;
    const heads = { numHeads: c.numAttentionHeads, numKvHeads: c.numKeyValueHeads, kvStart };
    const layerRun: LayerRun = {
      batch,
      seqLen,
      positions,
      heads,
      cache,
      decoding,
      extending,
      adapters,
      packed,
    };
    // Recomputation only pays where a backward will need the activations: recorded runs without a cache.
    const recompute = this.gradientCheckpointing && !cache && isGradEnabled();
    let x = embedding(this.param("model.embed_tokens.weight"), input.ids, [batch, seqLen]);
    for (let i = 0; i < c.numHiddenLayers; i++) {
      const layerInput = x;
      // Positions and the padding starts are inputs too, so that a recomputation finds them alive
      // after this run has let go of them.
      const inputs = kvStart ? [layerInput, positions, kvStart] : [layerInput, positions];
      const layer = ([h, p, s]: Tensor[]) =>
        this.decoderLayer(i, h!, { ...layerRun, positions: p!, heads: { ...heads, kvStart: s } });
      // The scope frees the layer's intermediates that no backward needs (the tape keeps the rest).
      x = scope(() => (recompute ? checkpoint(layer, inputs) : layer(inputs)));
      layerInput.dispose();
    }
    if (cache) cache.length += seqLen;
    const out = rmsNorm(x, this.param("model.norm.weight"), c.rmsNormEps);
    for (const t of [x, positions, kvStart]) t?.dispose();
    return out;
  }

  /**
   * Decoder layer `i` on its input x: x + attention, then + MLP. With a cache its keys and values are
   * written to it and the queries attend over it.
   */
  private decoderLayer(i: number, x: Tensor, run: LayerRun): Tensor {
    const c = this.config;
    const { batch, seqLen } = run;
    const layer = `model.layers.${i}`;
    // Cached steps may run the stacked projections, which have any adapters merged in.
    const packed = run.decoding || run.extending ? run.packed?.layers[i] : undefined;
    const adapters = packed ? undefined : run.adapters;
    const inputNorm = this.param(`${layer}.input_layernorm.weight`);
    const attended = packed
      ? this.packedSelfAttention(i, x, inputNorm, run, packed)
      : this.selfAttention(i, rmsNorm(x, inputNorm, c.rmsNormEps), run);
    // The residual connections are added in the projections' epilogues.
    const afterAttention = this.project(
      `${layer}.self_attn.o_proj`,
      reshape(attended, [batch, seqLen, c.hiddenSize]),
      adapters,
      x,
      packed?.oWeight,
    );
    const postNorm = this.param(`${layer}.post_attention_layernorm.weight`);
    const down = `${layer}.mlp.down_proj`;
    // Stacked, each norm rides in the product after it and the SwiGLU in the down projection, where
    // the backend can (a GPU's few-row decoding products): one dispatch instead of two, three times.
    if (packed && !this.params.has(`${down}.bias`)) {
      const gateUp = normLinear(afterAttention, postNorm, c.rmsNormEps, packed.gateUpWeight);
      return swigluLinear(gateUp, packed.downWeight ?? this.param(`${down}.weight`), afterAttention);
    }
    const m = rmsNorm(afterAttention, postNorm, c.rmsNormEps);
    const gated = packed
      ? swigluPacked(linear(m, packed.gateUpWeight))
      : swiglu(
          this.project(`${layer}.mlp.gate_proj`, m, run.adapters),
          this.project(`${layer}.mlp.up_proj`, m, run.adapters),
        );
    return this.project(down, gated, adapters, afterAttention, packed?.downWeight);
  }

  /** Layer i's attention of the normed input h, with separate q, k and v projections. */
  private selfAttention(i: number, h: Tensor, run: LayerRun): Tensor {
    const c = this.config;
    const { batch, seqLen, positions, heads, cache } = run;
    const module = `model.layers.${i}.self_attn`;
    // RoPE, attention and the cache (createCache) hold the projections' dtype: f16 ones are read and
    // written as halves by the kernels, with nothing cast.
    const asHeads = (t: Tensor, count: number) => reshape(t, [batch, seqLen, count, this.headDim]);
    const q = asHeads(this.project(`${module}.q_proj`, h, run.adapters), c.numAttentionHeads);
    const k = asHeads(this.project(`${module}.k_proj`, h, run.adapters), c.numKeyValueHeads);
    const v = asHeads(this.project(`${module}.v_proj`, h, run.adapters), c.numKeyValueHeads);
    if (run.decoding || run.extending)
      return this.attendCached(i, run, (append) => ropeAppend(q, k, v, positions, c.ropeTheta, append));
    const qr = rope(q, positions, c.ropeTheta);
    const kr = rope(k, positions, c.ropeTheta);
    if (cache) {
      writeSlice(cache.keys[i]!, kr, 1, cache.length);
      writeSlice(cache.values[i]!, v, 1, cache.length);
    }
    return attention(qr, kr, v, heads);
  }

  /** Layer i's attention of a cached step from one stacked q/k/v product of its input x, normed in it. */
  private packedSelfAttention(
    i: number,
    x: Tensor,
    inputNorm: Tensor,
    run: LayerRun,
    packed: PackedLayer,
  ): Tensor {
    const c = this.config;
    const headCount = c.numAttentionHeads + 2 * c.numKeyValueHeads;
    const stacked = normLinear(x, inputNorm, c.rmsNormEps, packed.qkvWeight, packed.qkvBias);
    const qkv = reshape(stacked, [run.batch, run.seqLen, headCount, this.headDim]);
    const cache = run.cache!;
    if (run.decoding) {
      // Rotation, cache append and attention in one kernel where the backend has it.
      const append = { keys: cache.keys[i]!, values: cache.values[i]!, at: cache.length };
      return decodeAttentionPacked(qkv, run.positions, c.ropeTheta, append, {
        ...run.heads,
        kvLen: cache.length + 1,
      });
    }
    return this.attendCached(i, run, (append) =>
      ropeAppendPacked(qkv, run.positions, c.ropeTheta, append, run.heads),
    );
  }

  /**
   * A cached step's attention: `rotateAppend` rotates the queries and keys and appends the keys and values
   * to layer i's cache (in one kernel), then the queries attend over everything cached.
   */
  private attendCached(i: number, run: LayerRun, rotateAppend: (append: CacheAppend) => Tensor): Tensor {
    const cache = run.cache!;
    const [keys, values] = [cache.keys[i]!, cache.values[i]!];
    const qr = rotateAppend({ keys, values, at: cache.length });
    const options = { ...run.heads, kvLen: cache.length + run.seqLen };
    return run.decoding ? decodeAttention(qr, keys, values, options) : attention(qr, keys, values, options);
  }

  /**
   * Every layer's q/k/v and gate/up weights stacked, for `run`'s cached steps (see PackedProjections),
   * with the LoRA adapters merged in where they apply: copies of the current weights, to rebuild after
   * they change and to dispose when done.
   */
  packProjections(): PackedProjections {
    return PackedProjections.build(
      this.config.numHiddenLayers,
      (name) => this.param(name),
      (name) => this.params.get(name),
      this.adaptersOff > 0 ? undefined : this.lora,
    );
  }

  /**
   * x·Wᵀ (+ bias) for a linear module, plus its LoRA update when the run applies adapters, plus
   * `residual` when given (added in the matmul's epilogue). `merged` replaces W (a merged LoRA weight).
   */
  private project(
    module: string,
    x: Tensor,
    adapters: LoraAdapters | undefined,
    residual?: Tensor,
    merged?: Tensor,
  ): Tensor {
    const weight = merged ?? this.param(`${module}.weight`);
    const bias = this.params.get(`${module}.bias`);
    const base = residual ? addLinear(residual, x, weight, bias) : linear(x, weight, bias);
    if (!adapters) return base;
    const adapted = adapters.apply(module, x, base);
    if (adapted !== base) base.dispose();
    return adapted;
  }

  /**
   * Attach LoRA adapters to the linear layers: the base weights stop requiring gradients, and
   * `parameters()` returns only the adapters'. Returns them (for saving; `mergeLora()` folds them in).
   */
  attachLora(options: LoraOptions): LoraAdapters {
    if (this.lora) throw new Error("attachLora(): adapters are already attached; merge or detach them first");
    const targets = new Set(options.targets ?? QWEN2_LINEAR_MODULES);
    const unknown = [...targets].filter((t) => !(QWEN2_LINEAR_MODULES as readonly string[]).includes(t));
    if (unknown.length > 0 || targets.size === 0)
      throw new RangeError(
        `attachLora(): targets must be among ${QWEN2_LINEAR_MODULES.join(", ")}${unknown.length > 0 ? `; ${unknown.join(", ")} is not a linear module of Qwen2` : ", at least one"}`,
      );
    const modules = new Map<string, readonly [number, number]>();
    for (const [name, shape] of qwen2ParameterShapes(this.config)) {
      const match = /^(model\.layers\.\d+\.(?:self_attn|mlp)\.(\w+))\.weight$/.exec(name);
      if (match && targets.has(match[2] as (typeof QWEN2_LINEAR_MODULES)[number])) {
        modules.set(match[1]!, [shape[0]!, shape[1]!]);
      }
    }
    const backend = this.param("model.embed_tokens.weight").backend;
    this.lora = new LoraAdapters(modules, options, backend, this.dtype);
    for (const p of this.params.values()) p.requiresGrad = false;
    return this.lora;
  }

  /** The attached LoRA adapters, if any. */
  get adapters(): LoraAdapters | undefined {
    return this.lora;
  }

  /**
   * Runs `fn` with the adapters switched off: every forward inside it (log-probs, generation) is the
   * base model's, so a LoRA-trained model is its own frozen reference without a second copy of the
   * weights. When `fn` returns a promise they stay off until it settles, so nothing else may run the
   * model meanwhile. Without adapters it just runs `fn`.
   */
  withoutAdapters<T>(fn: () => T): T {
    this.adaptersOff++;
    let result: T;
    try {
      result = fn();
    } catch (error) {
      this.adaptersOff--;
      throw error;
    }
    if (result instanceof Promise)
      return result.finally(() => {
        this.adaptersOff--;
      }) as T;
    this.adaptersOff--;
    return result;
  }

  /** Fold the attached adapters into the weights (W += (alpha/r)·B·A) and detach them. */
  mergeLora(): void {
    if (!this.lora) throw new Error("mergeLora(): no adapters attached");
    this.lora.mergeInto((module) => this.param(`${module}.weight`));
    this.detachLora();
  }

  /** Drop the adapters without merging; the base weights train again. */
  detachLora(): void {
    this.lora?.dispose();
    this.lora = undefined;
    for (const p of this.params.values()) p.requiresGrad = true;
  }

  /** An empty KV cache for `batch` sequences of up to `capacity` tokens, in the weights' dtype. */
  createCache(batch: number, capacity: number): KvCache {
    const { backend, dtype } = this.param("model.embed_tokens.weight");
    const shape = [batch, capacity, this.config.numKeyValueHeads, this.headDim];
    const make = () =>
      Array.from({ length: this.config.numHiddenLayers }, () => zeros(shape, { backend, dtype }).keep());
    return new KvCache(make(), make(), capacity);
  }

  /** Next-token logits [batch, seqLen, vocab]. */
  logits(input: TokenBatch): Tensor {
    const hidden = this.hidden(input);
    const logits = this.lmHead(hidden);
    hidden.dispose(); // the head's backward keeps what it needs; the caller's scope need not hold it
    return logits;
  }

  /**
   * Log-probabilities of `targets` ([batch·seqLen] ids: the token each position predicts) under
   * softmax(logits / temperature), and the entropy of that distribution, per position — what PPO's
   * ratio and entropy bonus need, with gradients. Both are [batch, seqLen].
   *
   * `needed` ([batch·seqLen], nonzero where a result is read: a loss mask) runs the head on those
   * positions alone and gives 0 elsewhere. The head is the costliest part of a small model's step (a
   * 151,936-token vocabulary), and an RL loss reads only the sampled tokens, not the prompt, the
   * environment's turns or the padding. When nothing is needed, position 0 is computed anyway, so that a
   * loss on the results stays connected to the weights.
   */
  sequenceLogProbs(
    input: TokenBatch,
    targets: Int32Array,
    temperature = 1,
    needed?: ArrayLike<number>,
  ): { logProbs: Tensor; entropy: Tensor } {
    const tokens = input.batch * input.seqLen;
    if (targets.length !== tokens) {
      throw new RangeError(
        `sequenceLogProbs(): ${targets.length} targets for ${input.batch}x${input.seqLen} positions`,
      );
    }
    if (needed !== undefined && needed.length !== tokens) {
      throw new RangeError(
        `sequenceLogProbs(): a mask of ${needed.length} for ${input.batch}x${input.seqLen} positions`,
      );
    }
    // The positions the head runs on, when not all of them.
    const picked = needed === undefined ? undefined : neededPositions(needed);
    const gathered = picked && picked.length < tokens ? picked : undefined;
    const hidden = this.hidden(input);
    const flat = reshape(hidden, [tokens, this.config.hiddenSize]);
    // Gathered rows take their gradient back to `flat` (the embedding's scatter-add).
    const rows = gathered ? embedding(flat, gathered) : flat;
    const rowTargets = gathered ? gathered.map((position) => targets[position]!) : targets;
    const head = this.headLogProbs(rows, rowTargets, temperature);
    const shaped = (values: Tensor) => {
      const full = gathered ? scatterRows(values, gathered, tokens) : values;
      const out = reshape(full, [input.batch, input.seqLen]);
      for (const t of new Set([values, full])) t.dispose();
      return out;
    };
    const out = { logProbs: shaped(head.logProbs), entropy: shaped(head.entropy) };
    // The logits are the largest tensors of a step: let the tape alone hold what feeds them, so the
    // backward frees them once past them instead of the caller's scope at its end.
    for (const t of new Set([hidden, flat, rows])) t.dispose();
    return out;
  }

  /**
   * Log-probs and entropies ([rows] each) of `targets` from hidden states [rows, hidden]. Past maxLogits
   * the head runs over chunks of tokens: each chunk's logits are made, read and dropped, and made again
   * in the backward (checkpoint), so no more than a chunk's are ever alive.
   */
  private headLogProbs(
    hidden: Tensor,
    targets: Int32Array,
    temperature: number,
  ): { logProbs: Tensor; entropy: Tensor } {
    const tokens = targets.length;
    const vocab = this.config.vocabSize;
    const backend = hidden.backend;
    const chunk = logitsChunkTokens(vocab, this.maxLogits);
    if (tokens <= chunk) {
      const logits = this.lmHead(hidden);
      const rows = reshape(logits, [1, tokens, vocab]);
      const ids = tensor(targets, [1, tokens], { backend, dtype: "i32" });
      const out = { logProbs: tokenLogProbs(rows, ids, temperature), entropy: entropy(rows, temperature) };
      for (const t of [logits, rows, ids]) t.dispose();
      return out;
    }
    const logProbParts: Tensor[] = [];
    const entropyParts: Tensor[] = [];
    for (let start = 0; start < tokens; start += chunk) {
      const length = Math.min(chunk, tokens - start);
      // Per chunk: [2, length] (log-probs, then entropies). Without grad, the scope frees its logits.
      const both = scope(() => {
        const ids = tensor(targets.subarray(start, start + length), [1, length], { backend, dtype: "i32" });
        // The ids go in as an input, so the tape keeps them for the recomputation.
        return checkpoint(
          ([h, chunkIds]) => {
            const rows = reshape(this.lmHead(h!), [1, length, vocab]);
            return concat([tokenLogProbs(rows, chunkIds!, temperature), entropy(rows, temperature)], 0);
          },
          [narrow(hidden, 0, start, length), ids],
        );
      });
      logProbParts.push(narrow(both, 0, 0, 1));
      entropyParts.push(narrow(both, 0, 1, 1));
      both.dispose();
    }
    const join = (parts: Tensor[]) => {
      const joined = parts.length === 1 ? parts[0]! : concat(parts, 1);
      for (const part of parts) if (part !== joined) part.dispose();
      return joined;
    };
    return { logProbs: join(logProbParts), entropy: join(entropyParts) };
  }

  /** Project hidden states to vocabulary logits (the tied embedding when so configured). */
  lmHead(hidden: Tensor): Tensor {
    const head = this.config.tieWordEmbeddings
      ? this.param("model.embed_tokens.weight")
      : this.param("lm_head.weight");
    return linear(hidden, head);
  }

  /** Copy every weight to the CPU (for checkpoints). */
  async stateDict(): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    for (const [name, t] of this.params) out.set(name, await t.floats());
    return out;
  }

  dispose(): void {
    this.lora?.dispose();
    for (const t of this.params.values()) t.dispose();
  }
}

/** Flat indices of `needed`'s nonzero entries, ascending; [0] when there are none. */
function neededPositions(needed: ArrayLike<number>): Int32Array {
  const positions: number[] = [];
  for (let i = 0; i < needed.length; i++) if (needed[i]) positions.push(i);
  return Int32Array.from(positions.length > 0 ? positions : [0]);
}

/**
 * `values` [n] put back at positions `gathered` of `tokens`, zeros (and no gradient) elsewhere: an
 * embedding lookup whose id is the value's row at a gathered position and -1 (a zero row) at the others.
 */
function scatterRows(values: Tensor, gathered: Int32Array, tokens: number): Tensor {
  const ids = new Int32Array(tokens).fill(-1);
  gathered.forEach((position, row) => {
    ids[position] = row;
  });
  const column = reshape(values, [gathered.length, 1]);
  const full = embedding(column, ids);
  column.dispose();
  return full;
}
