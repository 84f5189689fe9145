/**
 * Measures which form of attention backward (backward-forms.ts) is fastest for each problem noted by the
 * context's table, and keeps the winner there. A noted problem is run again whole (the statistics, then
 * every dispatch of the form) on fresh zero-filled buffers of its sizes, each form in turn
 * (tuning-timer.ts); the fastest wins unless the tiled kernels are within REPLACE_MARGIN of it. The
 * matmul form's products are matmul problems no step has met: with matmul tuning on they are measured
 * first, so that the form is timed on the kernels it would then run (the tiled kernels' tiles, met in the
 * step itself, are measured before their backward's form).
 */
import type { GpuContext } from "../../gpu/context.js";
import { matmulChoices, matmulShapeKey, type TunedMatmul } from "../matmul-choices.js";
import { tuneMatmuls } from "../matmul-tuning.js";
import {
  type CandidateTimes,
  chooseWinner,
  type TimingOptions,
  type TuningPassOptions,
  timeCandidates,
} from "../tuning-timer.js";
import { recordAttentionBackward } from "./backward.js";
import {
  BACKWARD_FORMS,
  type BackwardForm,
  type BackwardProblem,
  backwardFormKey,
  enableBackwardFormTuning,
  type TunedBackwardForm,
} from "./backward-forms.js";
import { matmulFormPlan } from "./backward-matmul.js";

const STORAGE = 0x80 | 0x8; // STORAGE | COPY_DST

/**
 * Each form that can run the problem, timed (fastest first); the rest, with why. `products`: the matmul
 * form's products measured on the way (with matmul tuning on).
 */
export async function timeBackwardForms(
  ctx: GpuContext,
  { dims, hasKvStart }: BackwardProblem,
  options: TimingOptions = {},
): Promise<CandidateTimes<BackwardForm> & { products: TunedMatmul[] }> {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = dims;
  const buffer = (floats: number) =>
    ctx.device.createBuffer({
      size: Math.max(floats, 1) * 4,
      usage: STORAGE,
      label: "attention tuning buffer",
    });
  const qFloats = batch * seqLen * numHeads * headDim;
  const kvFloats = batch * (dims.kvCapacity ?? kvLen) * numKvHeads * headDim;
  const gradientFloats = batch * kvLen * numKvHeads * headDim;
  const buffers = {
    q: buffer(qFloats),
    k: buffer(kvFloats),
    v: buffer(kvFloats),
    out: buffer(qFloats),
    dOut: buffer(qFloats),
    lse: buffer(batch * numHeads * seqLen),
    dQ: buffer(qFloats),
    dK: buffer(gradientFloats),
    dV: buffer(gradientFloats),
    kvStart: hasKvStart ? buffer(batch) : undefined,
  };
  const forms = BACKWARD_FORMS.filter((form) => form === "tiled" || matmulFormPlan(ctx, dims) !== undefined);
  const run = (form: BackwardForm) => recordAttentionBackward(ctx, { ...dims, ...buffers }, form);
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
    return { ...(await timeCandidates(ctx, forms, run, options)), products };
  } finally {
    await ctx.sync().catch(() => undefined);
    for (const b of Object.values(buffers)) b?.destroy();
  }
}

/**
 * Time the forms of each backward problem noted since tuning was turned on (or of `problems`) and keep
 * each winner in the context's table; `products`: the matmul form's products measured on the way.
 */
export async function tuneBackwardForms(
  ctx: GpuContext,
  problems?: readonly BackwardProblem[],
  options: TuningPassOptions = {},
): Promise<{ forms: TunedBackwardForm[]; products: TunedMatmul[] }> {
  const table = enableBackwardFormTuning(ctx);
  const todo = problems ?? table.pendingProblems();
  const tuned: TunedBackwardForm[] = [];
  const products: TunedMatmul[] = [];
  for (const [index, problem] of todo.entries()) {
    const key = backwardFormKey(problem.dims);
    options.onProblem?.(index, todo.length, key);
    const { timed, rejected, products: measured } = await timeBackwardForms(ctx, problem, options);
    products.push(...measured);
    const winner = chooseWinner(timed, (form) => form === "tiled");
    if (!winner)
      throw new Error(
        `attention tuning: no backward form could run ${key} on this adapter (${rejected.map((r) => `${r.candidate}: ${r.reason}`).join("; ")})`,
      );
    const entry = {
      key,
      form: winner,
      candidates: timed.map(({ candidate, ms }) => ({ form: candidate, ms })),
    };
    table.set(entry);
    tuned.push(entry);
  }
  return { forms: tuned, products };
}
