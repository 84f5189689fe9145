/**
 * Measures which form of attention (forms.ts) is fastest for each forward and backward problem noted by
 * the context's table, and keeps the winner there. A noted problem is run again whole (a backward: the
 * statistics, then every dispatch of the form) on fresh buffers of its sizes, its inputs filled with
 * tuning-check.ts's pattern, each form in turn (tuning-timer.ts). A form whose outputs differ from the
 * tiled kernels' (those that run without tuning) is left out, whatever its speed; the fastest of the rest
 * wins unless the tiled kernels are within REPLACE_MARGIN of it. The
 * matmul form's products are matmul problems no step has met: with matmul tuning on they are measured
 * first, so that the form is timed on the kernels it would then run (the tiled kernels' tiles, met in the
 * step itself, are measured before their problem's form).
 */
import type { GpuContext } from "../../gpu/context.js";
import { storageBytes } from "../elementwise.js";
import { matmulChoices, matmulShapeKey, type TunedMatmul } from "../matmul-choices.js";
import { tuneMatmuls } from "../matmul-tuning.js";
import { CHECKED_USAGE, type CheckedOutput, outputsCheck, patternBuffer } from "../tuning-check.js";
import {
  type CandidateTimes,
  namedRejections,
  type TimingOptions,
  type TuningPassOptions,
  timeCandidates,
  winnerOrFail,
} from "../tuning-timer.js";
import { recordAttentionBackward } from "./backward.js";
import {
  ATTENTION_FORMS,
  type AttentionForm,
  type AttentionFormProblem,
  attentionFormKey,
  enableAttentionFormTuning,
  type TunedAttentionForm,
} from "./forms.js";
import { recordAttentionForward } from "./forward.js";
import { matmulFormPlan } from "./matmul-form.js";
import { ATTENTION_PATTERN_AMPLITUDE } from "./shared.js";

/**
 * Each form that can run the problem and computes it as the tiled kernels do, timed (fastest first); the
 * rest, with why. `products`: the matmul form's products measured on the way (with matmul tuning on).
 * Each form's first run is checked: its outputs (out and lse; dQ, dK and dV) against the tiled kernels'.
 */
export async function timeAttentionForms(
  ctx: GpuContext,
  { pass, dims, hasKvStart }: AttentionFormProblem,
  options: TimingOptions = {},
): Promise<CandidateTimes<AttentionForm> & { products: TunedMatmul[] }> {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = dims;
  const dtype = dims.dtype ?? "f32";
  const created: GPUBuffer[] = [];
  // q-like values (of the problem's dtype) or 32-bit words (lse, kvStart).
  const buffer = (values: number, filled = false, elements: "q-like" | "words" = "q-like") => {
    // Each input starts at its own place in the pattern, so that Q, K, V and dOut differ.
    const phase = 257 * created.length;
    const bytes = Math.ceil((values * (elements === "words" ? 4 : storageBytes(dtype))) / 4) * 4;
    const b = filled
      ? patternBuffer(ctx, values, { dtype, signed: true, amplitude: ATTENTION_PATTERN_AMPLITUDE, phase })
      : ctx.device.createBuffer({ size: Math.max(bytes, 4), usage: CHECKED_USAGE });
    created.push(b);
    return b;
  };
  const qValues = batch * seqLen * numHeads * headDim;
  const kvValues = batch * (dims.kvCapacity ?? kvLen) * numKvHeads * headDim;
  const inputs = {
    ...dims,
    q: buffer(qValues, true),
    k: buffer(kvValues, true),
    v: buffer(kvValues, true),
    out: buffer(qValues),
    lse: buffer(batch * numHeads * seqLen, false, "words"),
    // Zeros: every key visible from the start, so every row has keys and lse stays on the outputs' scale.
    kvStart: hasKvStart ? buffer(batch, false, "words") : undefined,
  };
  const checked = (name: string, buffer: GPUBuffer, halves = dtype === "f16") => ({
    name,
    buffer,
    bytes: buffer.size,
    dtype: halves ? ("f16" as const) : ("f32" as const),
  });
  let run: (form: AttentionForm) => void;
  let outputs: CheckedOutput[];
  if (pass === "forward") {
    run = (form) => recordAttentionForward(ctx, inputs, form);
    outputs = [checked("out", inputs.out), checked("lse", inputs.lse, false)];
  } else {
    const gradientValues = batch * kvLen * numKvHeads * headDim;
    const gradients = {
      dOut: buffer(qValues, true),
      dQ: buffer(qValues),
      dK: buffer(gradientValues),
      dV: buffer(gradientValues),
    };
    // The backward reads the forward's outputs for the same inputs.
    recordAttentionForward(ctx, inputs, "tiled");
    run = (form) => recordAttentionBackward(ctx, { ...inputs, ...gradients }, form);
    outputs = [checked("dQ", gradients.dQ), checked("dK", gradients.dK), checked("dV", gradients.dV)];
  }
  const forms = ATTENTION_FORMS.filter((form) => form === "tiled" || matmulFormPlan(ctx, dims) !== undefined);
  try {
    const products: TunedMatmul[] = [];
    const table = matmulChoices(ctx);
    if (table && forms.includes("matmul")) {
      const known = new Set(table.pendingShapes().map(matmulShapeKey));
      run("matmul");
      await ctx.sync();
      const met = table.pendingShapes().filter((shape) => !known.has(matmulShapeKey(shape)));
      products.push(...(await tuneMatmuls(ctx, met, options)));
    }
    const check = await outputsCheck<AttentionForm>(ctx, outputs, run, "tiled");
    return { ...(await timeCandidates(ctx, forms, run, options, check)), products };
  } finally {
    await ctx.sync().catch(() => undefined);
    ctx.destroyBuffers(created);
  }
}

/**
 * Time the forms of each problem noted since tuning was turned on (or of `problems`) and keep each
 * winner in the context's table; `products`: the matmul form's products measured on the way.
 */
export async function tuneAttentionForms(
  ctx: GpuContext,
  problems?: readonly AttentionFormProblem[],
  options: TuningPassOptions = {},
): Promise<{ forms: TunedAttentionForm[]; products: TunedMatmul[] }> {
  const table = enableAttentionFormTuning(ctx);
  const todo = problems ?? table.pendingProblems();
  const tuned: TunedAttentionForm[] = [];
  const products: TunedMatmul[] = [];
  for (const [index, problem] of todo.entries()) {
    const key = attentionFormKey(problem.pass, problem.dims);
    options.onProblem?.(index, todo.length, key);
    const { timed, rejected, products: measured } = await timeAttentionForms(ctx, problem, options);
    products.push(...measured);
    const left = namedRejections(rejected, (form) => form);
    const winner = winnerOrFail(timed, (form) => form === "tiled", "attention tuning: no form", key, left);
    const entry = {
      key,
      form: winner,
      candidates: timed.map(({ candidate, ms }) => ({ form: candidate, ms })),
      rejected: left,
    };
    table.set(entry);
    tuned.push(entry);
  }
  return { forms: tuned, products };
}
