/**
 * Measures which form of attention (forms.ts) is fastest for each forward and backward problem noted by
 * the context's table, and keeps the winner there. A noted problem is run again whole (a backward: the
 * statistics, then every dispatch of the form) on fresh zero-filled buffers of its sizes, each form in
 * turn (tuning-timer.ts); the fastest wins unless the tiled kernels are within REPLACE_MARGIN of it. The
 * matmul form's products are matmul problems no step has met: with matmul tuning on they are measured
 * first, so that the form is timed on the kernels it would then run (the tiled kernels' tiles, met in the
 * step itself, are measured before their problem's form).
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
  ATTENTION_FORMS,
  type AttentionForm,
  type AttentionFormProblem,
  attentionFormKey,
  enableAttentionFormTuning,
  type TunedAttentionForm,
} from "./forms.js";
import { recordAttentionForward } from "./forward.js";
import { matmulFormPlan } from "./matmul-form.js";

const STORAGE = 0x80 | 0x8 | 0x4; // STORAGE | COPY_DST | COPY_SRC (a copy may move head-major rows)

/**
 * Each form that can run the problem, timed (fastest first); the rest, with why. `products`: the matmul
 * form's products measured on the way (with matmul tuning on).
 */
export async function timeAttentionForms(
  ctx: GpuContext,
  { pass, dims, hasKvStart }: AttentionFormProblem,
  options: TimingOptions = {},
): Promise<CandidateTimes<AttentionForm> & { products: TunedMatmul[] }> {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = dims;
  const created: GPUBuffer[] = [];
  const buffer = (floats: number) => {
    const b = ctx.device.createBuffer({
      size: Math.max(floats, 1) * 4,
      usage: STORAGE,
      label: "attention tuning buffer",
    });
    created.push(b);
    return b;
  };
  const qFloats = batch * seqLen * numHeads * headDim;
  const kvFloats = batch * (dims.kvCapacity ?? kvLen) * numKvHeads * headDim;
  const inputs = {
    ...dims,
    q: buffer(qFloats),
    k: buffer(kvFloats),
    v: buffer(kvFloats),
    out: buffer(qFloats),
    lse: buffer(batch * numHeads * seqLen),
    kvStart: hasKvStart ? buffer(batch) : undefined,
  };
  let run: (form: AttentionForm) => void;
  if (pass === "forward") run = (form) => recordAttentionForward(ctx, inputs, form);
  else {
    const gradientFloats = batch * kvLen * numKvHeads * headDim;
    const gradients = {
      dOut: buffer(qFloats),
      dQ: buffer(qFloats),
      dK: buffer(gradientFloats),
      dV: buffer(gradientFloats),
    };
    run = (form) => recordAttentionBackward(ctx, { ...inputs, ...gradients }, form);
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
    return { ...(await timeCandidates(ctx, forms, run, options)), products };
  } finally {
    await ctx.sync().catch(() => undefined);
    for (const b of created) b.destroy();
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
    const winner = chooseWinner(timed, (form) => form === "tiled");
    if (!winner)
      throw new Error(
        `attention tuning: no form could run ${key} on this adapter (${rejected.map((r) => `${r.candidate}: ${r.reason}`).join("; ")})`,
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
