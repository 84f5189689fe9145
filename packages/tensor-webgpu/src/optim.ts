import { noGrad } from "./autograd.js";
import { checkLossScaleRule, LOSS_SCALE_MAX, LOSS_SCALE_MIN } from "./core/loss-scale.js";
import { mul } from "./ops/elementwise.js";
import { castUnrecorded } from "./ops/precision.js";
import { cast, copyElements } from "./ops/shape.js";
import { emptyTensor, full, tensor } from "./runtime.js";
import type { Tensor } from "./tensor.js";

export interface AdamWOptions {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** Clip the global gradient norm to this (0 or undefined: no clipping). */
  maxGradNorm?: number;
  /**
   * Dynamic loss scaling, for f16 parameters (true: the defaults below). Backward the loss through
   * `scaleLoss`; each step divides the scale out of the update, skips a step whose gradients overflowed
   * and halves the scale, and doubles it after `growthInterval` finite steps in a row. All on the device.
   */
  lossScaling?: boolean | LossScalingOptions;
}

/** Dynamic loss scaling's settings (PyTorch GradScaler's defaults). */
export interface LossScalingOptions {
  /** The first scale (2^16). */
  initialScale?: number;
  /** What the scale is multiplied by after `growthInterval` finite steps in a row (2). */
  growthFactor?: number;
  /** What the scale is multiplied by after a step with non-finite gradients, which is skipped (0.5). */
  backoffFactor?: number;
  /** Finite steps in a row before the scale grows (2000). */
  growthInterval?: number;
}

const LOSS_SCALING_DEFAULTS: Required<LossScalingOptions> = {
  initialScale: 2 ** 16,
  growthFactor: 2,
  backoffFactor: 0.5,
  growthInterval: 2000,
};

/** Device scalars describing a step; read them only when you log, and dispose them. */
export interface StepResult {
  /** The global gradient norm before clipping. */
  gradNorm: Tensor;
  /** The factor the gradients were scaled by: 1 unclipped, < 1 clipped, 0 when the norm was not finite
   * and the step was skipped (nothing changed). */
  clipScale: Tensor;
}

/** The optimizer's state on the host, for checkpoints: moments per parameter (by index in `params`). */
export interface AdamWState {
  steps: number;
  /** Dynamic loss scaling's scale and its count of finite steps in a row, when the optimizer scales. */
  lossScale?: { scale: number; finiteSteps: number };
  /**
   * First and second moments; absent for parameters that never had a gradient. `master`: the f32 copy of
   * an f16 parameter (what the updates accumulate into).
   */
  moments: ({ m: Float32Array; v: Float32Array; master?: Float32Array } | undefined)[];
}

/** One parameter's optimizer state on the device: f32 tensors of the parameter's shape. */
export interface AdamWMoments {
  readonly m: Tensor;
  readonly v: Tensor;
  /** The f32 master copy of an f16 parameter. */
  readonly master?: Tensor | undefined;
}

interface ParamState {
  m: Tensor;
  v: Tensor;
  /** The f32 master copy of an f16 parameter. */
  master?: Tensor;
}

/**
 * AdamW with decoupled weight decay (PyTorch's defaults: betas 0.9/0.999, eps 1e-8, weight decay 0.01),
 * global-norm clipping and non-finite-step skipping, all on the device: a step needs no readback.
 *
 * Mixed precision: an f16 parameter (whose gradient autograd leaves in f16) gets an f32 master copy,
 * made from its values at its first step. Each step widens the gradient to f32, updates the master and
 * the f32 moments, and writes the master rounded to f16 back into the parameter, so updates smaller than
 * an f16 step are not lost. The gradient norm is taken over the widened gradients.
 */
export class AdamW {
  private readonly state = new Map<Tensor, ParamState>();
  private stepCount = 0;
  readonly options: Required<Omit<AdamWOptions, "lossScaling">>;
  /** The loss-scaling rule, when the optimizer scales. */
  readonly lossScaling: Required<LossScalingOptions> | undefined;
  /** f32 [scale, finite steps in a row] on the device, when the optimizer scales. */
  private scaleState: Tensor | undefined;

  constructor(
    readonly params: readonly Tensor[],
    options: AdamWOptions,
  ) {
    const { lossScaling, ...rest } = options;
    this.options = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, maxGradNorm: 0, ...rest };
    for (const p of params) {
      if (!p.requiresGrad) throw new Error(`AdamW: ${p.describe()} does not require grad`);
    }
    if (lossScaling) {
      const rule = { ...LOSS_SCALING_DEFAULTS, ...(lossScaling === true ? {} : lossScaling) };
      checkLossScaleRule(rule);
      checkScale(rule.initialScale);
      this.lossScaling = rule;
    }
  }

  /**
   * The loss to backward: multiplied by the current loss scale when the optimizer scales (a recorded
   * product with a device scalar: nothing is read back), else `loss` itself.
   */
  scaleLoss(loss: Tensor): Tensor {
    const scale = this.lossScale(loss.backend);
    if (!scale) return loss;
    const factor = loss.dtype === "f16" ? noGrad(() => cast(scale, "f16")) : scale;
    const scaled = mul(loss, factor);
    for (const t of new Set([scale, factor])) t.dispose();
    return scaled;
  }

  /**
   * The current loss scale, a device scalar (read it when logging, then dispose it), when the optimizer
   * scales; undefined otherwise.
   */
  lossScale(backend: Tensor["backend"] = this.params[0]!.backend): Tensor | undefined {
    const state = this.scaleStateOn(backend);
    if (!state) return undefined;
    const scale = emptyTensor(state.backend, [], "f32");
    copyElements(state, 0, scale, 0, 1);
    return scale;
  }

  private scaleStateOn(backend: Tensor["backend"]): Tensor | undefined {
    if (!this.lossScaling) return undefined;
    this.scaleState ??= tensor([this.lossScaling.initialScale, 0], [2], { backend }).keep();
    return this.scaleState;
  }

  get steps(): number {
    return this.stepCount;
  }

  /** Learning rate for the next steps (schedules set it before each step). */
  set lr(value: number) {
    this.options.lr = value;
  }

  get lr(): number {
    return this.options.lr;
  }

  /** Apply one update from the parameters' accumulated `.grad` (parameters without a grad are skipped). */
  step(): StepResult {
    return noGrad(() => {
      const withGrad = this.params.filter((p) => p.grad);
      if (withGrad.length === 0)
        throw new Error("AdamW.step(): no parameter has a gradient; call backward() first");
      const backend = withGrad[0]!.backend;
      // f16 gradients widened to f32 for the norm and the update.
      const grads = withGrad.map((p) => (p.grad!.dtype === "f16" ? castUnrecorded(p.grad!, "f32") : p.grad!));
      const sumSquares = emptyTensor(backend, [1], "f32");
      withGrad.forEach((p, i) => {
        backend.sumOfSquares({ x: grads[i]!.buffer, n: p.size, out: sumSquares.buffer, accumulate: i > 0 });
      });
      const scale = emptyTensor(backend, [1], "f32");
      const gradNorm = emptyTensor(backend, [1], "f32");
      const maxNorm = this.options.maxGradNorm > 0 ? this.options.maxGradNorm : Number.MAX_VALUE;
      const lossScale = this.lossScaling && {
        ...this.lossScaling,
        state: this.scaleStateOn(backend)!.buffer,
      };
      backend.clipScale({
        sumSquares: sumSquares.buffer,
        out: scale.buffer,
        maxNorm,
        norm: gradNorm.buffer,
        ...(lossScale ? { lossScale } : {}),
      });
      this.stepCount++;
      withGrad.forEach((p, i) => {
        let s = this.state.get(p);
        if (!s) {
          const zeros = () => full(p.shape, 0, { backend: p.backend, dtype: "f32" }).keep();
          s = {
            m: zeros(),
            v: zeros(),
            master: p.dtype === "f16" ? castUnrecorded(p, "f32").keep() : undefined,
          };
          this.state.set(p, s);
        }
        const target = s.master ?? p;
        backend.adamw({
          param: target.buffer,
          grad: grads[i]!.buffer,
          m: s.m.buffer,
          v: s.v.buffer,
          n: p.size,
          lr: this.options.lr,
          beta1: this.options.beta1,
          beta2: this.options.beta2,
          eps: this.options.eps,
          weightDecay: this.options.weightDecay,
          step: this.stepCount,
          gradScale: scale.buffer,
        });
        if (s.master) backend.cast({ x: s.master.buffer, out: p.buffer, n: p.size, from: "f32", to: "f16" });
        if (grads[i] !== p.grad) grads[i]!.dispose();
      });
      sumSquares.dispose();
      return { gradNorm, clipScale: scale };
    });
  }

  /**
   * Parameter `index`'s state on the device (undefined before its first step with a gradient), so a
   * checkpoint can copy one moment at a time to the host instead of all of them (stateDict). These are
   * the optimizer's own tensors: read them, never write or dispose them.
   */
  moments(index: number): AdamWMoments | undefined {
    const p = this.params[index];
    if (p === undefined)
      throw new RangeError(`AdamW.moments(): no parameter ${index} of ${this.params.length}`);
    return this.state.get(p);
  }

  /** A host copy of the moments and step count (for checkpoints). */
  async stateDict(): Promise<AdamWState> {
    const moments = await Promise.all(
      this.params.map(async (_, i) => {
        const s = this.moments(i);
        if (!s) return undefined;
        const moment = { m: await s.m.floats(), v: await s.v.floats() };
        return s.master ? { ...moment, master: await s.master.floats() } : moment;
      }),
    );
    const state: AdamWState = { steps: this.stepCount, moments };
    const lossScale = await this.readLossScale();
    if (lossScale) state.lossScale = lossScale;
    return state;
  }

  /**
   * The loss scale and its count of finite steps in a row, read from the device (a checkpoint's share of
   * stateDict without the moments); undefined when the optimizer does not scale.
   */
  async readLossScale(): Promise<AdamWState["lossScale"]> {
    const state = this.lossScaling && this.scaleStateOn(this.params[0]!.backend);
    if (!state) return undefined;
    const [scale, finiteSteps] = await state.floats();
    return { scale: scale!, finiteSteps: finiteSteps! };
  }

  /** Restore a `stateDict()`; the parameters must be the same list (count and sizes). */
  loadStateDict(state: AdamWState): void {
    if (state.moments.length !== this.params.length)
      throw new Error(
        `AdamW.loadStateDict(): the state has ${state.moments.length} parameters, the optimizer ${this.params.length}`,
      );
    state.moments.forEach((moment, i) => {
      const p = this.params[i]!;
      if (moment && (moment.m.length !== p.size || moment.v.length !== p.size))
        throw new Error(
          `AdamW.loadStateDict(): parameter ${i} has ${p.size} elements, the state ${moment.m.length}`,
        );
    });
    const lossScale = state.lossScale;
    if (lossScale) {
      checkScale(lossScale.scale);
      if (!Number.isInteger(lossScale.finiteSteps) || lossScale.finiteSteps < 0)
        throw new Error(
          `AdamW.loadStateDict(): lossScale.finiteSteps must be a count, got ${lossScale.finiteSteps}`,
        );
    }
    this.dispose();
    // A state saved without loss scaling (or by an optimizer without it) starts at the initial scale.
    if (lossScale && this.lossScaling)
      this.scaleState = tensor([lossScale.scale, lossScale.finiteSteps], [2], {
        backend: this.params[0]!.backend,
      }).keep();
    state.moments.forEach((moment, i) => {
      if (!moment) return;
      const p = this.params[i]!;
      const make = (data: Float32Array) => tensor(data, p.shape, { backend: p.backend }).keep();
      // An f16 parameter's master copy: the saved one, else (a state saved in f32) its current values.
      const master =
        p.dtype !== "f16" ? undefined : moment.master ? make(moment.master) : castUnrecorded(p, "f32").keep();
      this.state.set(p, { m: make(moment.m), v: make(moment.v), master });
    });
    this.stepCount = state.steps;
  }

  /** Drop every parameter's gradient. */
  zeroGrad(): void {
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = undefined;
    }
  }

  /** Free the optimizer state. */
  dispose(): void {
    for (const { m, v, master } of this.state.values()) {
      m.dispose();
      v.dispose();
      master?.dispose();
    }
    this.state.clear();
    this.scaleState?.dispose();
    this.scaleState = undefined;
  }
}

function checkScale(scale: number): void {
  if (!(scale >= LOSS_SCALE_MIN && scale <= LOSS_SCALE_MAX))
    throw new RangeError(`loss scaling: the scale must be a number from 2^-64 to 2^64, got ${scale}`);
}
