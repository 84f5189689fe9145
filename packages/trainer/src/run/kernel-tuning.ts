/**
 * Kernel tuning in a run: the fastest matmul kernel for each problem shape the run meets, measured on its
 * own GPU (tuneMatmuls of @ragen/tensor-webgpu). The first step runs on the fixed rule and notes the shapes
 * it met (rollout, update, validation); before each later step the shapes not yet measured are timed, and
 * the choices are kept in a store so that the next run on the same GPU starts tuned.
 */
import type { ProgressStream } from "@ragen/logging";
import {
  adapterKey,
  disableMatmulTuning,
  enableMatmulTuning,
  type MatmulChoiceTable,
  type MatmulTuningFile,
  tuneMatmuls,
  type WebGpuBackend,
} from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";
import { progressBar } from "./progress.js";

/** Where measured choices are kept between runs: a file per adapter in Node, none in a browser. */
export interface KernelChoiceStore {
  /** The saved table of this adapter, or undefined when there is none. */
  load(adapter: string): unknown;
  save(adapter: string, table: MatmulTuningFile): void;
  /** Where this adapter's table is, for messages. */
  describe(adapter: string): string;
}

/** What one tuning pass did. */
export interface TuningPass {
  groups: number;
  seconds: number;
}

/** Whether a run tunes its kernels: "auto" tunes on a GPU, not on a software adapter (lavapipe). */
export function tunesKernels(setting: TrainingSettings["kernelTuning"], backend: WebGpuBackend): boolean {
  if (setting === "auto") return !backend.ctx.info.adapter.isSoftware;
  return setting === "on";
}

export class KernelTuner {
  private constructor(
    private readonly backend: WebGpuBackend,
    private readonly table: MatmulChoiceTable,
    private readonly store: KernelChoiceStore | undefined,
    private readonly say: (line: string) => void,
  ) {}

  /**
   * Turn tuning on or off for the run's context as `setting` says; when on, take the choices the store
   * kept for this adapter. A damaged saved table is reported and measured again, not fatal.
   */
  static forRun(
    setting: TrainingSettings["kernelTuning"],
    backend: WebGpuBackend,
    store: KernelChoiceStore | undefined,
    say: (line: string) => void,
  ): KernelTuner | undefined {
    if (!tunesKernels(setting, backend)) {
      disableMatmulTuning(backend.ctx);
      return undefined;
    }
    const table = enableMatmulTuning(backend.ctx);
    const adapter = adapterKey(backend.ctx);
    if (store) {
      try {
        const saved = store.load(adapter);
        if (saved !== undefined && table.load(saved, store.describe(adapter)))
          say(`kernel tuning: ${table.size} measured matmul shape groups from ${store.describe(adapter)}`);
      } catch (error) {
        say(`kernel tuning: ${(error as Error).message}; its shapes will be measured again`);
      }
    }
    return new KernelTuner(backend, table, store, say);
  }

  /** Measure the shape groups met since the last pass, keep the winners, and save them. */
  async tunePending(progress?: ProgressStream): Promise<TuningPass | undefined> {
    const pending = this.table.pendingShapes();
    if (pending.length === 0) return undefined;
    const start = performance.now();
    const bar = progressBar(progress, "tune matmul kernels", pending.length);
    const tuned = await tuneMatmuls(this.backend.ctx, pending, { onProblem: (done) => bar.update(done) });
    bar.finish();
    const adapter = adapterKey(this.backend.ctx);
    this.store?.save(adapter, this.table.toJSON());
    const seconds = (performance.now() - start) / 1000;
    const changed = tuned.filter((t) => t.candidates.length > 1);
    this.say(
      `kernel tuning: measured ${tuned.length} matmul shape groups in ${seconds.toFixed(1)} s${
        changed.length > 0
          ? `; e.g. ${changed[0]!.key}: ${changed[0]!.candidates
              .slice(0, 3)
              .map((c) => `${c.kernel} ${c.ms.toFixed(3)} ms`)
              .join(", ")}`
          : ""
      }${this.store ? ` (kept in ${this.store.describe(adapter)})` : ""}`,
    );
    return { groups: tuned.length, seconds };
  }
}
