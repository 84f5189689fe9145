/**
 * Which form of attention runs for a problem, forward and backward apart, as measured on this adapter:
 * "tiled" (forward.ts and backward.ts's tiled kernels, or the texture kernels on a software adapter) or
 * "matmul" (forward-matmul.ts, backward-matmul.ts: the scores materialised, the products on the matmul
 * kernels). The counterpart of tile-choices.ts one level up, filled by form-tuning.ts. Without a
 * measurement the tiled kernels run; with tuning on, an unmeasured problem (grouped as tile-choices.ts
 * groups them) is noted with what it takes to run it again, for the next tuning pass.
 */
import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { KernelTuningFileError, parseRejected, type RejectedKernel } from "../matmul-choices.js";
import { PerContext } from "../per-context.js";
import { TuningTable } from "../tuning-table.js";
import { attentionProblemKey } from "./tile-choices.js";

export const ATTENTION_FORMS = ["tiled", "matmul"] as const;
export type AttentionForm = (typeof ATTENTION_FORMS)[number];

/** The pass a form is chosen for. */
export type AttentionPass = "forward" | "backward";

/** One forward or backward problem, as tuning runs it again on buffers of its own. */
export interface AttentionFormProblem {
  pass: AttentionPass;
  dims: AttentionDims;
  hasKvStart: boolean;
}

/** A measured group: the winner, each form's GPU time per run (median of the rounds), forms left out. */
export interface TunedAttentionForm {
  key: string;
  form: AttentionForm;
  candidates: { form: AttentionForm; ms: number }[];
  rejected: RejectedKernel[];
}

/** The group a problem belongs to: "forward-form ..." or "backward-form ...". */
export const attentionFormKey = (pass: AttentionPass, dims: AttentionDims): string =>
  attentionProblemKey(`${pass}-form`, dims);

export class AttentionFormTable extends TuningTable<AttentionFormProblem, TunedAttentionForm> {
  /** The measured form of this problem's group; an unmeasured group is noted as pending. */
  lookup(problem: AttentionFormProblem): AttentionForm | undefined {
    return this.find(attentionFormKey(problem.pass, problem.dims), () => problem)?.form;
  }

  /** One problem of each group met but not yet measured, in the order first met. */
  pendingProblems(): AttentionFormProblem[] {
    return this.pendingProblemList();
  }
}

const isForm = (x: unknown): x is AttentionForm => ATTENTION_FORMS.includes(x as AttentionForm);

/** Saved form measurements, checked field by field (`where` names the source in errors). */
export function parseAttentionFormEntries(saved: unknown, where: string): TunedAttentionForm[] {
  if (!Array.isArray(saved)) throw new KernelTuningFileError(where, "attentionForms is not an array");
  return saved.map((e, i): TunedAttentionForm => {
    const at = `${where}, attentionForms entry ${i}`;
    const entry = e as TunedAttentionForm;
    if (typeof entry?.key !== "string") throw new KernelTuningFileError(at, "key is not a string");
    if (!isForm(entry.form))
      throw new KernelTuningFileError(
        at,
        `form is ${JSON.stringify(entry.form)}, not one of ${ATTENTION_FORMS.join(", ")}`,
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
      rejected: parseRejected(entry.rejected, at),
    };
  });
}

const tables = new PerContext(() => new AttentionFormTable());

/** The context's table of measured attention forms, if tuning is on for it. */
export function attentionForms(ctx: GpuContext): AttentionFormTable | undefined {
  return tables.get(ctx);
}

/** Turn attention form tuning on for a context; returns its table (the same one on every call). */
export function enableAttentionFormTuning(ctx: GpuContext): AttentionFormTable {
  return tables.ensure(ctx);
}

/** Turn attention form tuning off for a context: the tiled kernels run again. */
export function disableAttentionFormTuning(ctx: GpuContext): void {
  tables.drop(ctx);
}
