/**
 * Kernel tuning in a run: the fastest matmul kernel and attention tile for each problem the run meets,
 * measured on its own GPU (tuneKernels of @ragen/tensor-webgpu). Kernels note the problems they meet
 * (rollout, update, validation) and run the fixed rule until measured; before each step the problems
 * noted since the last are timed, and the measurements are kept in a store so that the next run on the
 * same GPU starts tuned.
 */
import type { ProgressStream } from "@ragen/logging";
import {
  adapterKey,
  disableKernelTuning,
  enableKernelTuning,
  type KernelTuningFile,
  type KernelTuningOptions,
  type KernelTuningPass,
  loadKernelTuning,
  measuredKernelProblems,
  pendingKernelProblems,
  saveKernelTuning,
  tuneKernels,
  type WebGpuBackend,
} from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";
import { progressBar } from "./progress.js";

/** Where measurements are kept between runs: a file per adapter in Node, none in a browser. */
export interface KernelChoiceStore {
  /** The saved measurements of this adapter, or undefined when there are none. */
  load(adapter: string): unknown;
  save(adapter: string, tuning: KernelTuningFile): void;
  /** Where this adapter's measurements are, for messages. */
  describe(adapter: string): string;
}

/** What one tuning pass did. */
export interface TuningPass {
  problems: number;
  seconds: number;
}

/** Whether a run tunes its kernels: "auto" tunes on a GPU, not on a software adapter (lavapipe). */
export function tunesKernels(setting: TrainingSettings["kernelTuning"], backend: WebGpuBackend): boolean {
  if (setting === "auto") return !backend.ctx.info.adapter.isSoftware;
  return setting === "on";
}

export class KernelTuner {
  private failed = false;

  private constructor(
    private readonly backend: WebGpuBackend,
    private readonly store: KernelChoiceStore | undefined,
    private readonly say: (line: string) => void,
    private readonly tune: typeof tuneKernels,
    private readonly options: Pick<KernelTuningOptions, "budgetSeconds">,
  ) {}

  /**
   * Turn tuning on or off for the run's context as `setting` says; when on, take the measurements the
   * store kept for this adapter. A damaged saved file is reported and measured again, not fatal.
   * `options.budgetSeconds` bounds each pass (settings.kernelTuningSeconds): problems left over are
   * measured before later steps.
   */
  static forRun(
    setting: TrainingSettings["kernelTuning"],
    backend: WebGpuBackend,
    store: KernelChoiceStore | undefined,
    say: (line: string) => void,
    options: Pick<KernelTuningOptions, "budgetSeconds"> = {},
    /** The measuring pass (tests replace it). */
    tune: typeof tuneKernels = tuneKernels,
  ): KernelTuner | undefined {
    const { ctx } = backend;
    if (!tunesKernels(setting, backend)) {
      disableKernelTuning(ctx);
      return undefined;
    }
    enableKernelTuning(ctx);
    const adapter = adapterKey(ctx);
    if (store) {
      try {
        const saved = store.load(adapter);
        if (saved !== undefined && loadKernelTuning(ctx, saved, store.describe(adapter)))
          say(
            `kernel tuning: ${measuredKernelProblems(ctx)} measured kernel problems from ${store.describe(adapter)}`,
          );
      } catch (error) {
        say(`kernel tuning: ${(error as Error).message}; its problems will be measured again`);
      }
    }
    return new KernelTuner(backend, store, say, tune, options);
  }

  /**
   * Measure the problems noted since the last pass, keep the winners, and save them. Tuning only makes a
   * run faster: if it fails, the run goes on with the fixed rule (and says why); if saving fails, with the
   * measurements in memory.
   */
  async tunePending(progress?: ProgressStream): Promise<TuningPass | undefined> {
    const { ctx } = this.backend;
    if (this.failed) return undefined;
    const pending = pendingKernelProblems(ctx);
    if (pending === 0) return undefined;
    const start = performance.now();
    const bar = progressBar(progress, "tune kernels", pending);
    let tuned: KernelTuningPass;
    try {
      tuned = await this.tune(ctx, { ...this.options, onProblem: (done) => bar.update(done) });
    } catch (error) {
      this.failed = true;
      disableKernelTuning(ctx);
      this.say(
        `kernel tuning failed (${(error as Error).message}); the run goes on with the fixed kernel rule`,
      );
      return undefined;
    } finally {
      bar.finish();
    }
    const adapter = adapterKey(ctx);
    let kept = "";
    if (this.store) {
      try {
        this.store.save(adapter, saveKernelTuning(ctx));
        kept = ` (kept in ${this.store.describe(adapter)})`;
      } catch (error) {
        kept = ` (not kept: ${(error as Error).message})`;
      }
    }
    const seconds = (performance.now() - start) / 1000;
    const changed = tuned.matmul.find((t) => t.candidates.length > 1);
    const forms = tuned.attentionForms;
    const matmulForms = forms.filter((t) => t.form === "matmul").length;
    const formsClause =
      forms.length > 0
        ? `, ${forms.length} attention pass${forms.length === 1 ? "" : "es"} (${matmulForms} faster as matmuls)`
        : "";
    this.say(
      `kernel tuning: measured ${tuned.matmul.length} matmul and ${tuned.attention.length} attention problems${formsClause} in ${seconds.toFixed(1)} s${
        tuned.pending > 0 ? ` (${tuned.pending} more before the next steps)` : ""
      }${
        changed
          ? `; e.g. ${changed.key}: ${changed.candidates
              .slice(0, 3)
              .map((c) => `${c.kernel} ${c.ms.toFixed(3)} ms`)
              .join(", ")}`
          : ""
      }${kept}`,
    );
    const rejected = [...tuned.matmul, ...tuned.attention, ...forms].flatMap((t) =>
      t.rejected.map((r) => `${r.kernel} on ${t.key}: ${r.reason}`),
    );
    if (rejected.length > 0)
      this.say(
        `kernel tuning left out ${rejected.length} kernel${rejected.length === 1 ? "" : "s"} that failed or computed wrongly on this adapter, e.g. ${rejected[0]}`,
      );
    return { problems: tuned.matmul.length + tuned.attention.length + forms.length, seconds };
  }
}
