/**
 * Measures which form of attention backward (backward-forms.ts) is fastest for each problem noted by the
 * context's table, and keeps the winner there. A noted problem is run again whole (the statistics, then
 * every dispatch of the form) on fresh zero-filled buffers of its sizes, each form in turn
 * (tuning-timer.ts); the fastest wins unless the tiled kernels are within REPLACE_MARGIN of it.
 */
import type { GpuContext } from "../../gpu/context.js";
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
import { matmulFormSequences } from "./backward-matmul.js";

const STORAGE = 0x80 | 0x8; // STORAGE | COPY_DST

/** Each form that can run the problem, timed (fastest first); the rest, with why. */
export async function timeBackwardForms(
  ctx: GpuContext,
  { dims, hasKvStart }: BackwardProblem,
  options: TimingOptions = {},
): Promise<CandidateTimes<BackwardForm>> {
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
  const forms = BACKWARD_FORMS.filter((form) => form === "tiled" || matmulFormSequences(ctx, dims) > 0);
  try {
    return await timeCandidates(
      ctx,
      forms,
      (form) => recordAttentionBackward(ctx, { ...dims, ...buffers }, form),
      options,
    );
  } finally {
    await ctx.sync().catch(() => undefined);
    for (const b of Object.values(buffers)) b?.destroy();
  }
}

/**
 * Time the forms of each backward problem noted since tuning was turned on (or of `problems`) and keep
 * each winner in the context's table.
 */
export async function tuneBackwardForms(
  ctx: GpuContext,
  problems?: readonly BackwardProblem[],
  options: TuningPassOptions = {},
): Promise<TunedBackwardForm[]> {
  const table = enableBackwardFormTuning(ctx);
  const todo = problems ?? table.pendingProblems();
  const tuned: TunedBackwardForm[] = [];
  for (const [index, problem] of todo.entries()) {
    const key = backwardFormKey(problem.dims);
    options.onProblem?.(index, todo.length, key);
    const { timed, rejected } = await timeBackwardForms(ctx, problem, options);
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
  return tuned;
}
