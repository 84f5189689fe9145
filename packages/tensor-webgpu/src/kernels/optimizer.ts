/**
 * Optimizer kernels: the AdamW update, and the pieces of global gradient-norm clipping (sum of squares,
 * clip scale, in-place scaling).
 *
 * Scheme: AdamW is one element-wise pass per parameter tensor (vec4 body, scalar tail) reading param,
 * grad, m and v once and writing param, m and v once. Clipping stays on the GPU: sumOfSquares adds each
 * tensor's ||g||² into one f32 (a fixed-order two-stage reduction from reduce.ts, so the norm is
 * bit-identical run to run), clipScale turns it into min(1, maxNorm / (norm + eps)) — 0 when the norm is
 * not finite — and adamw reads that scale from a buffer, so no readback is needed per step. A scale of 0
 * makes adamw return without writing: a step with an Inf/NaN gradient is skipped, not applied.
 */
import {
  checkLossScaleRule,
  LOSS_SCALE_MAX,
  LOSS_SCALE_MIN,
  type LossScaleUpdate,
} from "../core/loss-scale.js";
import type { Binding, GpuContext } from "../gpu/context.js";
import {
  checkCount,
  FLOAT_BITS_WGSL,
  f32Bits,
  flatMain,
  recordBodyAndTail,
  uniforms,
  vectorOf,
  workgroupsFor,
} from "./elementwise.js";
import { sumOfSquaresInto } from "./reduce.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

// ---------------------------------------------------------------------------------------------------
// AdamW

function buildAdamwCode(width: 1 | 4, scaled: boolean): string {
  const type = vectorOf("f32", width);
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> param: array<${type}>;
@group(0) @binding(1) var<storage, read> grad: array<${type}>;
@group(0) @binding(2) var<storage, read_write> m: array<${type}>;
@group(0) @binding(3) var<storage, read_write> v: array<${type}>;
${scaled ? "@group(0) @binding(4) var<storage, read> gradScale: array<f32>;" : ""}
// Computed on the CPU in double precision (as PyTorch computes them from Python floats):
// gradWeight1 = 1 - beta1, gradWeight2 = 1 - beta2, decay = 1 - lr * weightDecay,
// stepSize = lr / (1 - beta1^t), rootCorrection = sqrt(1 - beta2^t).
struct Params { count: u32, start: u32, beta1: f32, beta2: f32, gradWeight1: f32, gradWeight2: f32, eps: f32,
  decay: f32, stepSize: f32, rootCorrection: f32 }
@group(0) @binding(${scaled ? 5 : 4}) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  let scale = ${scaled ? "gradScale[0]" : "1.0"};
  if (scale == 0.0) { return; } // a skipped step (non-finite gradient norm): leave everything as it was
  let j = params.start + i;
  let g = grad[j] * scale;
  let mNext = params.beta1 * m[j] + params.gradWeight1 * g;
  let vNext = params.beta2 * v[j] + params.gradWeight2 * g * g;
  m[j] = mNext;
  v[j] = vNext;
  let denominator = sqrt(vNext) / params.rootCorrection + params.eps;
  param[j] = param[j] * params.decay - params.stepSize * mNext / denominator;
}`;
}

/**
 * One AdamW step (PyTorch's torch.optim.AdamW), in place on param, m and v for i < n:
 *   g = grad * gradScale[0] (1 without gradScale); m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²;
 *   param = param·(1 - lr·wd) - lr/(1-β1^step) · m / (sqrt(v)/sqrt(1-β2^step) + eps).
 * step counts from 1. When gradScale[0] == 0 nothing is written (the step is skipped).
 */
export function adamw(
  ctx: GpuContext,
  args: {
    param: Binding;
    grad: Binding;
    m: Binding;
    v: Binding;
    n: number;
    lr: number;
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    step: number;
    gradScale?: Binding;
  },
): void {
  const { n, lr, beta1, beta2, step } = args;
  checkCount("adamw", n);
  if (!Number.isInteger(step) || step < 1) throw new RangeError(`adamw: step = ${step} must count from 1`);
  const stepSize = lr / (1 - beta1 ** step);
  const rootCorrection = Math.sqrt(1 - beta2 ** step);
  const decay = 1 - lr * args.weightDecay;
  const scaled = args.gradScale !== undefined;
  const bindings = [args.param, args.grad, args.m, args.v, ...(args.gradScale ? [args.gradScale] : [])];
  recordBodyAndTail(n, (width, start, count) => {
    const params = uniforms(
      count,
      start,
      f32Bits(beta1),
      f32Bits(beta2),
      f32Bits(1 - beta1),
      f32Bits(1 - beta2),
      f32Bits(args.eps),
      f32Bits(decay),
      f32Bits(stepSize),
      f32Bits(rootCorrection),
    );
    const pipeline = ctx.pipeline(`adamw${scaled ? " scaled" : ""}`, adamwCode(width, scaled));
    ctx.dispatch(pipeline, bindings, params, workgroupsFor(count));
  });
}

// ---------------------------------------------------------------------------------------------------
// Gradient clipping

/**
 * out[0] = Σ x[i]² over i < n, or out[0] += that with `accumulate` (call once per parameter tensor,
 * accumulate=false for the first, to get ||g||² over all of them). Deterministic.
 */
export function sumOfSquares(
  ctx: GpuContext,
  args: { x: Binding; n: number; out: Binding; accumulate: boolean },
): void {
  sumOfSquaresInto(ctx, args);
}

function buildClipScaleCode(withNorm: boolean, withLossScale: boolean): string {
  const bindings = [
    "@group(0) @binding(0) var<storage, read> sumSquares: array<f32>;",
    "@group(0) @binding(1) var<storage, read_write> out: array<f32>;",
    ...(withNorm ? ["var<storage, read_write> norm: array<f32>;"] : []),
    ...(withLossScale
      ? ["var<storage, read_write> lossScale: array<f32>; // [scale, finite steps in a row]"]
      : []),
  ].map((line, i) => (i < 2 ? line : `@group(0) @binding(${i}) ${line}`));
  return /* wgsl */ `
${FLOAT_BITS_WGSL}
${bindings.join("\n")}
struct Params { maxNorm: f32, eps: f32, growthFactor: f32, backoffFactor: f32, growthInterval: f32 }
@group(0) @binding(${bindings.length}) var<uniform> params: Params;

@compute @workgroup_size(1)
fn main() {
  let total = sumSquares[0];
  // Gradients of a loss multiplied by the scale: their norm and the update are taken unscaled.
  let unscale = ${withLossScale ? "1.0 / lossScale[0]" : "1.0"};
  let magnitude = sqrt(total) * unscale;
  // The finiteness test reads bits: an optimising compiler may assume away NaN in float comparisons.
  let finite = isFinite(total);
  out[0] = select(0.0, min(1.0, params.maxNorm / (magnitude + params.eps)) * unscale, finite);
  ${withNorm ? "norm[0] = magnitude;" : ""}
  ${
    withLossScale
      ? `if (!finite) {
    lossScale[0] = max(lossScale[0] * params.backoffFactor, ${LOSS_SCALE_MIN_WGSL});
    lossScale[1] = 0.0;
  } else if (lossScale[1] + 1.0 >= params.growthInterval) {
    lossScale[0] = min(lossScale[0] * params.growthFactor, ${LOSS_SCALE_MAX_WGSL});
    lossScale[1] = 0.0;
  } else {
    lossScale[1] = lossScale[1] + 1.0;
  }`
      : ""
  }
}`;
}

// The scale's bounds, 2^-64 and 2^64, as WGSL literals.
const LOSS_SCALE_MIN_WGSL = LOSS_SCALE_MIN.toExponential();
const LOSS_SCALE_MAX_WGSL = LOSS_SCALE_MAX.toExponential();

/**
 * out[0] = min(1, maxNorm / (sqrt(sumSquares[0]) + eps)) (eps 1e-6 by default), or 0 when the sum is Inf
 * or NaN, so that adamw skips the step. `norm`, when given, receives sqrt(sumSquares[0]) for logging.
 * With `lossScale` the sums are of gradients of a scaled loss: the norm and the factor are unscaled (the
 * factor includes 1/scale) and the scale state moves on (see LossScaleUpdate).
 */
export function clipScale(
  ctx: GpuContext,
  args: {
    sumSquares: Binding;
    out: Binding;
    maxNorm: number;
    eps?: number;
    norm?: Binding;
    lossScale?: LossScaleUpdate<Binding>;
  },
): void {
  if (!(args.maxNorm > 0)) throw new RangeError(`clipScale: maxNorm = ${args.maxNorm} must be > 0`);
  const { lossScale } = args;
  if (lossScale) checkLossScaleRule(lossScale);
  const params = uniforms(
    f32Bits(args.maxNorm),
    f32Bits(args.eps ?? 1e-6),
    f32Bits(lossScale?.growthFactor ?? 1),
    f32Bits(lossScale?.backoffFactor ?? 1),
    f32Bits(lossScale?.growthInterval ?? 1),
  );
  const bindings = [
    args.sumSquares,
    args.out,
    ...(args.norm ? [args.norm] : []),
    ...(lossScale ? [lossScale.state] : []),
  ];
  const code = clipScaleCode(args.norm !== undefined, lossScale !== undefined);
  ctx.dispatch(ctx.pipeline("clip scale", code), bindings, params, [1]);
}

function buildScaleCode(width: 1 | 4): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> x: array<${vectorOf("f32", width)}>;
@group(0) @binding(1) var<storage, read> scale: array<f32>;
struct Params { count: u32, start: u32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.count) { return; }
  x[params.start + i] = x[params.start + i] * scale[0];
}`;
}

/** x[i] *= scale[0] for i < n (e.g. gradients by a clip scale, when they are needed clipped elsewhere). */
export function scaleInPlace(ctx: GpuContext, args: { x: Binding; n: number; scale: Binding }): void {
  checkCount("scaleInPlace", args.n);
  recordBodyAndTail(args.n, (width, start, count) => {
    const pipeline = ctx.pipeline("scale in place", scaleCode(width));
    ctx.dispatch(pipeline, [args.x, args.scale], uniforms(count, start), workgroupsFor(count));
  });
}

// The kernels' WGSL, built once per distinct parameters.
const adamwCode = cachedBuilder(buildAdamwCode);
const clipScaleCode = cachedBuilder(buildClipScaleCode);
const scaleCode = cachedBuilder(buildScaleCode);
