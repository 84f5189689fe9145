/**
 * Reference optimizer steps on typed arrays: the ground truth for ../kernels/optimizer.ts, written as
 * PyTorch documents AdamW and clip_grad_norm_.
 */
import { LOSS_SCALE_MAX, LOSS_SCALE_MIN, type LossScaleUpdate } from "../core/loss-scale.js";

/** One AdamW step in place on param, m and v (step counts from 1); skipped when gradScale is 0. */
export function adamwRef(args: {
  param: Float32Array;
  grad: Float32Array;
  m: Float32Array;
  v: Float32Array;
  n: number;
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  step: number;
  gradScale?: Float32Array;
}): void {
  const { param, m, v, lr, beta1, beta2, eps, weightDecay, step } = args;
  const scale = args.gradScale ? args.gradScale[0]! : 1;
  if (scale === 0) return;
  const biasCorrection1 = 1 - beta1 ** step;
  const biasCorrection2 = 1 - beta2 ** step;
  for (let i = 0; i < args.n; i++) {
    const g = args.grad[i]! * scale;
    param[i] = param[i]! * (1 - lr * weightDecay);
    m[i] = beta1 * m[i]! + (1 - beta1) * g;
    v[i] = beta2 * v[i]! + (1 - beta2) * g * g;
    const mHat = m[i]! / biasCorrection1;
    const vHat = v[i]! / biasCorrection2;
    param[i] = param[i]! - (lr * mHat) / (Math.sqrt(vHat) + eps);
  }
}

/** out[0] = Σ x[i]² (plus what out[0] held, with accumulate). */
export function sumOfSquaresRef(args: {
  x: Float32Array;
  n: number;
  out: Float32Array;
  accumulate: boolean;
}): void {
  let total = args.accumulate ? args.out[0]! : 0;
  for (let i = 0; i < args.n; i++) total += args.x[i]! * args.x[i]!;
  args.out[0] = total;
}

/**
 * out[0] = min(1, maxNorm / (norm + eps)) with norm = sqrt(sumSquares[0]); 0 when norm is not finite.
 * With `lossScale` (state [scale, finite steps in a row]) the sum is of gradients of a scaled loss: norm is
 * divided by the scale, out[0] includes 1/scale (so that the update unscales), and the state moves on.
 */
export function clipScaleRef(args: {
  sumSquares: Float32Array;
  out: Float32Array;
  maxNorm: number;
  eps?: number;
  norm?: Float32Array;
  lossScale?: LossScaleUpdate<Float32Array>;
}): void {
  const { lossScale } = args;
  const unscale = lossScale ? 1 / lossScale.state[0]! : 1;
  const norm = Math.sqrt(args.sumSquares[0]!) * unscale;
  const finite = Number.isFinite(args.sumSquares[0]!);
  args.out[0] = finite ? Math.min(1, args.maxNorm / (norm + (args.eps ?? 1e-6))) * unscale : 0;
  if (args.norm) args.norm[0] = norm;
  if (!lossScale) return;
  const state = lossScale.state;
  if (!finite) {
    state[0] = Math.max(state[0]! * lossScale.backoffFactor, LOSS_SCALE_MIN);
    state[1] = 0;
  } else if (state[1]! + 1 >= lossScale.growthInterval) {
    state[0] = Math.min(state[0]! * lossScale.growthFactor, LOSS_SCALE_MAX);
    state[1] = 0;
  } else state[1] = state[1]! + 1;
}

export function scaleInPlaceRef(args: { x: Float32Array; n: number; scale: Float32Array }): void {
  for (let i = 0; i < args.n; i++) args.x[i] = args.x[i]! * args.scale[0]!;
}
