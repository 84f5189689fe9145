/**
 * Kernel tuning as one thing: the matmul kernels (matmul-choices.ts, matmul-tuning.ts), the attention
 * tiles (attention/tile-choices.ts, attention/tile-tuning.ts) and the attention forms, forward and
 * backward (attention/forms.ts, attention/form-tuning.ts), measured on this adapter for the problems a
 * program meets, and the measurements saved and loaded together as one JSON document per
 * adapter.
 *
 *   enableKernelTuning(ctx);          // kernels note the problems they meet
 *   ...                               // a training step, a decode
 *   await tuneKernels(ctx);           // time every candidate of each noted problem; keep the fastest
 *   const saved = saveKernelTuning(ctx);
 *   loadKernelTuning(ctx, saved);     // in the next process, on the same adapter
 */
import type { GpuContext } from "../gpu/context.js";
import { tuneAttentionForms } from "./attention/form-tuning.js";
import {
  type AttentionFormProblem,
  attentionFormKey,
  attentionForms,
  disableAttentionFormTuning,
  enableAttentionFormTuning,
  parseAttentionFormEntries,
  type TunedAttentionForm,
} from "./attention/forms.js";
import {
  attentionTileKey,
  attentionTiles,
  disableAttentionTuning,
  enableAttentionTuning,
  parseAttentionEntries,
  type TiledDispatch,
  type TunedTile,
} from "./attention/tile-choices.js";
import { tuneAttentionTiles } from "./attention/tile-tuning.js";
import {
  adapterKey,
  disableMatmulTuning,
  enableMatmulTuning,
  KernelTuningFileError,
  type MatmulShape,
  matmulChoices,
  matmulShapeKey,
  parseMatmulEntries,
  type TunedMatmul,
} from "./matmul-choices.js";
import { tuneMatmuls } from "./matmul-tuning.js";
import type { TuningPassOptions } from "./tuning-timer.js";

export const KERNEL_TUNING_FORMAT = "ragen-kernel-tuning/1";

/** The saved measurements of one adapter. */
export interface KernelTuningFile {
  format: typeof KERNEL_TUNING_FORMAT;
  adapter: string;
  matmul: TunedMatmul[];
  attention: TunedTile[];
  /** Absent in files written before attention had forms to choose from. */
  attentionForms?: TunedAttentionForm[];
}

/** What one tuning pass measured. */
export interface KernelTuningPass {
  matmul: TunedMatmul[];
  attention: TunedTile[];
  attentionForms: TunedAttentionForm[];
  /** Problems the pass left unmeasured (its budget ran out); the next pass measures them. */
  pending: number;
}

export interface KernelTuningOptions extends TuningPassOptions {
  /**
   * Seconds after which the pass starts no new problem (the one under way finishes; the first always
   * runs, so every pass makes progress). Problems are measured largest first, so a budget is spent where
   * kernels take longest; those left stay pending for the next pass and run on the fixed rule until
   * then. Default: no limit.
   */
  budgetSeconds?: number;
}

/** Turn tuning on for a context: matmuls and attention kernels note the problems they meet. */
export function enableKernelTuning(ctx: GpuContext): void {
  enableMatmulTuning(ctx);
  enableAttentionTuning(ctx);
  enableAttentionFormTuning(ctx);
}

/** Turn tuning off for a context: every kernel goes back to its fixed rule. */
export function disableKernelTuning(ctx: GpuContext): void {
  disableMatmulTuning(ctx);
  disableAttentionTuning(ctx);
  disableAttentionFormTuning(ctx);
}

/** Problems noted and not yet measured (0 when tuning is off). */
export function pendingKernelProblems(ctx: GpuContext): number {
  return (
    (matmulChoices(ctx)?.pendingShapes().length ?? 0) +
    (attentionTiles(ctx)?.pendingDispatches().length ?? 0) +
    (attentionForms(ctx)?.pendingProblems().length ?? 0)
  );
}

/** Measured problems (0 when tuning is off). */
export function measuredKernelProblems(ctx: GpuContext): number {
  return (
    (matmulChoices(ctx)?.size ?? 0) + (attentionTiles(ctx)?.size ?? 0) + (attentionForms(ctx)?.size ?? 0)
  );
}

/** Floating-point operations of one run of a problem: what orders a budgeted pass. */
function matmulWork(shape: MatmulShape): number {
  return 2 * shape.batch * shape.m * shape.n * shape.k;
}

function attentionWork({ dims }: TiledDispatch | AttentionFormProblem): number {
  return 4 * dims.batch * dims.numHeads * dims.seqLen * dims.kvLen * dims.headDim;
}

/**
 * Time every candidate of each problem noted since the last pass and keep the fastest, largest problems
 * first. `onProblem` hears before each problem how many are done, of how many, and which (and once more
 * at the end).
 */
export async function tuneKernels(
  ctx: GpuContext,
  options: KernelTuningOptions = {},
): Promise<KernelTuningPass> {
  enableKernelTuning(ctx);
  const { budgetSeconds, onProblem, ...timing } = options;
  const deadline = budgetSeconds === undefined ? Infinity : performance.now() + budgetSeconds * 1000;
  type Problem = { work: number; tune: () => Promise<unknown>; key: string };
  const problems: Problem[] = [];
  const pass: KernelTuningPass = { matmul: [], attention: [], attentionForms: [], pending: 0 };
  for (const shape of matmulChoices(ctx)!.pendingShapes())
    problems.push({
      work: matmulWork(shape),
      key: matmulShapeKey(shape),
      tune: async () => pass.matmul.push(...(await tuneMatmuls(ctx, [shape], timing))),
    });
  for (const dispatch of attentionTiles(ctx)!.pendingDispatches())
    problems.push({
      work: attentionWork(dispatch),
      key: attentionTileKey(dispatch.kernel, dispatch.dims),
      tune: async () => pass.attention.push(...(await tuneAttentionTiles(ctx, [dispatch], timing))),
    });
  // A whole forward or backward counts as the work of one of its tiled dispatches; those, met first, are
  // measured first.
  for (const problem of attentionForms(ctx)!.pendingProblems())
    problems.push({
      work: attentionWork(problem),
      key: attentionFormKey(problem.pass, problem.dims),
      tune: async () => {
        const { forms, products } = await tuneAttentionForms(ctx, [problem], timing);
        pass.attentionForms.push(...forms);
        pass.matmul.push(...products);
      },
    });
  problems.sort((a, b) => b.work - a.work);
  for (const [done, problem] of problems.entries()) {
    // The first problem always runs: every pass makes progress, however small its budget.
    if (done > 0 && performance.now() >= deadline) {
      pass.pending = problems.length - done;
      break;
    }
    onProblem?.(done, problems.length, problem.key);
    await problem.tune();
  }
  onProblem?.(problems.length - pass.pending, problems.length, "");
  return pass;
}

/** The context's measurements, to save. */
export function saveKernelTuning(ctx: GpuContext): KernelTuningFile {
  return {
    format: KERNEL_TUNING_FORMAT,
    adapter: adapterKey(ctx),
    matmul: matmulChoices(ctx)?.entries() ?? [],
    attention: attentionTiles(ctx)?.entries() ?? [],
    attentionForms: attentionForms(ctx)?.entries() ?? [],
  };
}

/**
 * Take saved measurements (checked entry by entry; `where` names the source in errors) and turn tuning
 * on. Measurements of another adapter are not taken: returns false.
 */
export function loadKernelTuning(ctx: GpuContext, saved: unknown, where = "saved tuning"): boolean {
  if (typeof saved !== "object" || saved === null || Array.isArray(saved))
    throw new KernelTuningFileError(where, "not a JSON object");
  const file = saved as Partial<KernelTuningFile>;
  if (file.format !== KERNEL_TUNING_FORMAT)
    throw new KernelTuningFileError(
      where,
      `format is ${JSON.stringify(file.format)}, expected "${KERNEL_TUNING_FORMAT}"`,
    );
  if (typeof file.adapter !== "string") throw new KernelTuningFileError(where, "adapter is not a string");
  // Check everything before taking anything.
  const matmul = parseMatmulEntries(file.matmul, where);
  const attention = parseAttentionEntries(file.attention, where);
  const forms =
    file.attentionForms === undefined ? [] : parseAttentionFormEntries(file.attentionForms, where);
  if (file.adapter !== adapterKey(ctx)) return false;
  for (const entry of matmul) enableMatmulTuning(ctx).set(entry);
  for (const entry of attention) enableAttentionTuning(ctx).set(entry);
  for (const entry of forms) enableAttentionFormTuning(ctx).set(entry);
  enableKernelTuning(ctx);
  return true;
}
