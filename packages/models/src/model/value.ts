import { type Backend, linear, reshape, type Tensor, tensor } from "@ragen/tensor-webgpu";
import { NormalSampler } from "./init.js";
import { type ModelDtype, Qwen2Model, type Qwen2Shape, type TokenBatch } from "./qwen2.js";

/** How a new critic's score head starts: Hugging Face's small normal, or zero. */
export type ValueHeadInit = "normal" | "zero";

/**
 * PPO's critic: the Qwen2 backbone with a scalar head per token (Hugging Face's
 * Qwen2ForTokenClassification with one label: `score.weight` [1, hidden] and `score.bias` [1]).
 */
export class Qwen2ValueModel {
  private constructor(
    readonly backbone: Qwen2Model,
    readonly scoreWeight: Tensor,
    readonly scoreBias: Tensor,
  ) {}

  /**
   * A value model on a copy of a policy's weights (RAGEN initialises the critic from the same
   * checkpoint). The new score head is drawn from `seed` (small normal, Hugging Face's init) or, with
   * `headInit: "zero"`, starts at zero: a fresh critic then says 0 for every token instead of noise
   * that the first advantages (return minus value) would carry into the actor's first steps. The
   * backbone takes the policy's element type (Qwen2Model.toDtype).
   */
  static async fromPolicy(
    policy: Qwen2Model,
    seed: number,
    headInit: ValueHeadInit = "normal",
  ): Promise<Qwen2ValueModel> {
    const backend = policy.param("model.embed_tokens.weight").backend;
    const weights = await policy.stateDict();
    if (headInit === "zero") weights.set("score.weight", new Float32Array(policy.config.hiddenSize));
    // In the policy's precision: an f16 policy's critic trains in f16 too.
    return Qwen2ValueModel.fromWeights(policy.config, weights, backend, seed).toDtype(policy.dtype);
  }

  /** From named weights; `score.*` is initialised from `seed` (small normal, zero bias) when absent. */
  static fromWeights(
    config: Qwen2Shape,
    weights: ReadonlyMap<string, Float32Array>,
    backend: Backend,
    seed = 0,
  ): Qwen2ValueModel {
    const backbone = Qwen2Model.fromWeights(config, weights, backend);
    return new Qwen2ValueModel(backbone, ...scoreHead(config, weights, backend, seed));
  }

  static random(config: Qwen2Shape, seed: number, backend: Backend): Qwen2ValueModel {
    const backbone = Qwen2Model.random(config, seed, backend);
    return new Qwen2ValueModel(backbone, ...scoreHead(config, new Map(), backend, seed + 1));
  }

  /** Activation recomputation in the backbone (see Qwen2Model.gradientCheckpointing). */
  get gradientCheckpointing(): boolean {
    return this.backbone.gradientCheckpointing;
  }

  set gradientCheckpointing(on: boolean) {
    this.backbone.gradientCheckpointing = on;
  }

  parameters(): Tensor[] {
    return [...this.backbone.parameters(), this.scoreWeight, this.scoreBias];
  }

  /** The backbone's element type (see Qwen2Model.toDtype). */
  get dtype(): ModelDtype {
    return this.backbone.dtype;
  }

  /**
   * The backbone in `dtype` (Qwen2Model.toDtype); the score head stays f32, so the values are f32 sums
   * over the f16 hidden states.
   */
  toDtype(dtype: ModelDtype): this {
    this.backbone.toDtype(dtype);
    return this;
  }

  /** A value per token: [batch, seqLen]. */
  values(input: TokenBatch): Tensor {
    const hidden = this.backbone.hidden(input);
    const scores = linear(hidden, this.scoreWeight, this.scoreBias);
    const values = reshape(scores, [input.batch, input.seqLen]);
    hidden.dispose(); // the tape holds what the backward needs
    scores.dispose();
    return values;
  }

  /** Every weight by its Hugging Face name: the backbone's, then the score head's. */
  get params(): ReadonlyMap<string, Tensor> {
    return new Map([
      ...this.backbone.params,
      ["score.weight", this.scoreWeight],
      ["score.bias", this.scoreBias],
    ]);
  }

  async stateDict(): Promise<Map<string, Float32Array>> {
    const out = await this.backbone.stateDict();
    out.set("score.weight", await this.scoreWeight.floats());
    out.set("score.bias", await this.scoreBias.floats());
    return out;
  }

  dispose(): void {
    this.backbone.dispose();
    this.scoreWeight.dispose();
    this.scoreBias.dispose();
  }
}

function scoreHead(
  config: Qwen2Shape,
  weights: ReadonlyMap<string, Float32Array>,
  backend: Backend,
  seed: number,
): [Tensor, Tensor] {
  const hidden = config.hiddenSize;
  const w =
    weights.get("score.weight") ?? new NormalSampler(seed).normals(hidden, config.initializerRange ?? 0.02);
  const b = weights.get("score.bias") ?? new Float32Array(1);
  if (w.length !== hidden || b.length !== 1) {
    throw new RangeError(
      `score.weight must have ${hidden} values and score.bias 1, got ${w.length} and ${b.length}`,
    );
  }
  return [
    tensor(w, [1, hidden], { backend, requiresGrad: true, name: "score.weight" }).keep(),
    tensor(b, [1], { backend, requiresGrad: true, name: "score.bias" }).keep(),
  ];
}
