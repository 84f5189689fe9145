/**
 * Which form of attention backward runs, as measured on this adapter: "tiled" (backward.ts's tiled
 * kernels, or the texture kernels on a software adapter) or "matmul" (backward-matmul.ts). The counterpart
 * of tile-choices.ts one level up, filled by backward-form-tuning.ts. Without a measurement the tiled
 * kernels run; with tuning on, an unmeasured problem (grouped as tile-choices.ts groups them) is noted with
 * what it takes to run it again, for the next tuning pass.
 */
import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { KernelTuningFileError } from "../matmul-choices.js";
import { PerContext } from "../per-context.js";
import { attentionProblemKey } from "./tile-choices.js";

export const BACKWARD_FORMS = ["tiled", "matmul"] as const;
export type BackwardForm = (typeof BACKWARD_FORMS)[number];

/** One backward problem as tuning runs it again on buffers of its own. */
export interface BackwardProblem {
  dims: AttentionDims;
  hasKvStart: boolean;
}

/** A measured group: the winner and each form's GPU time per backward (median of the rounds). */
export interface TunedBackwardForm {
  key: string;
  form: BackwardForm;
  candidates: { form: BackwardForm; ms: number }[];
}

/** The group a backward problem belongs to. */
export const backwardFormKey = (dims: AttentionDims): string => attentionProblemKey("backward-form", dims);

export class BackwardFormTable {
  private readonly tuned = new Map<string, TunedBackwardForm>();
  private readonly pending = new Map<string, BackwardProblem>();

  /** The measured form of this problem's group; an unmeasured group is noted as pending. */
  lookup(problem: BackwardProblem): BackwardForm | undefined {
    const key = backwardFormKey(problem.dims);
    const entry = this.tuned.get(key);
    if (!entry && !this.pending.has(key)) this.pending.set(key, problem);
    return entry?.form;
  }

  /** One problem of each group met but not yet measured, in the order first met. */
  pendingProblems(): BackwardProblem[] {
    return [...this.pending.values()];
  }

  set(entry: TunedBackwardForm): void {
    this.tuned.set(entry.key, entry);
    this.pending.delete(entry.key);
  }

  get size(): number {
    return this.tuned.size;
  }

  entries(): TunedBackwardForm[] {
    return [...this.tuned.values()];
  }
}

const isForm = (x: unknown): x is BackwardForm => BACKWARD_FORMS.includes(x as BackwardForm);

/** Saved backward-form measurements, checked field by field (`where` names the source in errors). */
export function parseBackwardFormEntries(saved: unknown, where: string): TunedBackwardForm[] {
  if (!Array.isArray(saved)) throw new KernelTuningFileError(where, "attentionBackward is not an array");
  return saved.map((e, i): TunedBackwardForm => {
    const at = `${where}, attentionBackward entry ${i}`;
    const entry = e as TunedBackwardForm;
    if (typeof entry?.key !== "string") throw new KernelTuningFileError(at, "key is not a string");
    if (!isForm(entry.form))
      throw new KernelTuningFileError(
        at,
        `form is ${JSON.stringify(entry.form)}, not one of ${BACKWARD_FORMS.join(", ")}`,
      );
    if (
      !Array.isArray(entry.candidates) ||
      entry.candidates.some((c) => !isForm(c?.form) || typeof c?.ms !== "number")
    )
      throw new KernelTuningFileError(at, "candidates is not a list of {form, ms}");
    return {
      key: entry.key,
      form: entry.form,
      candidates: entry.candidates.map(({ form, ms }) => ({ form, ms })),
    };
  });
}

const tables = new PerContext(() => new BackwardFormTable());

/** The context's table of measured backward forms, if tuning is on for it. */
export function backwardForms(ctx: GpuContext): BackwardFormTable | undefined {
  return tables.get(ctx);
}

/** Turn backward-form tuning on for a context; returns its table (the same one on every call). */
export function enableBackwardFormTuning(ctx: GpuContext): BackwardFormTable {
  return tables.ensure(ctx);
}

/** Turn backward-form tuning off for a context: the tiled kernels run again. */
export function disableBackwardFormTuning(ctx: GpuContext): void {
  tables.drop(ctx);
}
