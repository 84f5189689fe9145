/**
 * Which form a forward or backward runs: the one attentionTuning forces, else the one measured fastest for
 * its problem (forms.ts), else the tiled kernels; the matmul form only where matmulFormPlan takes the
 * problem.
 */
import { type AttentionDims, checkAttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { type AttentionForm, type AttentionPass, attentionForms } from "./forms.js";
import { matmulFormPlan } from "./matmul-form.js";
import { attentionTuning } from "./tiles.js";

export type { AttentionForm } from "./forms.js";

export function attentionForm(
  ctx: GpuContext,
  pass: AttentionPass,
  args: AttentionDims & { kvStart?: GPUBuffer },
): AttentionForm {
  checkAttentionDims(args); // before a bad problem is noted for tuning
  if (!matmulFormPlan(ctx, args)) return "tiled";
  const forced = attentionTuning[pass];
  if (forced !== "auto") return forced;
  const { batch, seqLen, kvLen, kvCapacity, numHeads, numKvHeads, headDim, causal, scale } = args;
  // The dimensions only: a noted problem outlives the buffers it was met with.
  const dims = { batch, seqLen, kvLen, kvCapacity, numHeads, numKvHeads, headDim, causal, scale };
  return attentionForms(ctx)?.lookup({ pass, dims, hasKvStart: args.kvStart !== undefined }) ?? "tiled";
}
