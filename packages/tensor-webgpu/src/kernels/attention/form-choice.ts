/**
 * Which form a forward or backward runs: the one attentionTuning forces, else the one measured fastest for
 * its problem (forms.ts), else the tiled kernels; the matmul form only where matmulFormPlan takes the
 * problem. The problem's dimensions are checked here, once per pass, before anything is noted for tuning.
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
  checkAttentionDims(args);
  const forced = attentionTuning[pass];
  const table = attentionForms(ctx);
  // The usual case, untuned and unforced, costs nothing more.
  if (forced === "auto" && !table) return "tiled";
  if (!matmulFormPlan(ctx, args)) return "tiled";
  if (forced !== "auto") return forced;
  const { batch, seqLen, kvLen, kvCapacity, numHeads, numKvHeads, headDim, causal, scale, dtype } = args;
  // The dimensions only: a noted problem outlives the buffers it was met with.
  const dims = { batch, seqLen, kvLen, kvCapacity, numHeads, numKvHeads, headDim, causal, scale, dtype };
  return table?.lookup({ pass, dims, hasKvStart: args.kvStart !== undefined }) ?? "tiled";
}
