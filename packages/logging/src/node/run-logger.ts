import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_SUMMARY_KEYS,
  formatStepSummary,
  type Metrics,
  type MetricsRow,
  metricsRowToJson,
  parseMetricsLine,
  validateStep,
} from "../metrics.js";
import { WandbSink } from "../wandb.js";
import { CsvFile } from "./csv-file.js";
import { JsonlFile } from "./jsonl-file.js";

/** File names inside a run directory. */
export const RUN_FILES = {
  metrics: "metrics.jsonl",
  csv: "metrics.csv",
  trajectories: "trajectories.jsonl",
  report: "report.html",
} as const;

export interface RunLoggerOptions {
  /** Where the console summary goes (default process.stdout); null silences it. */
  console?: { write(text: string): unknown } | null;
  /** Metric names (with `*` for an env tag) on the console line; default DEFAULT_SUMMARY_KEYS. */
  summaryKeys?: readonly string[];
  /**
   * W&B sink: default `WandbSink.fromEnv(process.env, { project: "ragen" })`, i.e. on only when
   * WANDB_API_KEY is set; null turns it off; or pass your own sink.
   */
  wandb?: WandbSink | null;
  /**
   * Resume from a checkpoint taken at this step: rows of later steps (logged after the checkpoint, before
   * the run was killed) are removed, so the replayed steps log cleanly.
   */
  resumeAfterStep?: number;
  /** Clock in milliseconds since the Unix epoch, for tests (default Date.now). */
  now?: () => number;
}

/**
 * Logs one row of metrics per training step to `<dir>/metrics.jsonl` (appended and fsynced each step),
 * `<dir>/metrics.csv`, the console and, when configured, Weights & Biases.
 *
 * Opening a directory that already has a metrics.jsonl resumes it: complete rows are kept, a torn last
 * line (a run killed mid-write) is dropped, and `lastStep` tells the trainer where to continue.
 */
export class RunLogger {
  private readonly jsonl: JsonlFile;
  private readonly csv: CsvFile;
  private readonly rows: MetricsRow[];
  private readonly now: () => number;
  private readonly out: { write(text: string): unknown } | null;
  readonly wandb: WandbSink | undefined;

  constructor(
    readonly dir: string,
    private readonly options: RunLoggerOptions = {},
  ) {
    mkdirSync(dir, { recursive: true });
    const after = options.resumeAfterStep;
    const { file, lines } = JsonlFile.open(join(dir, RUN_FILES.metrics), {
      ...(after === undefined ? {} : { keep: (line) => (parseMetricsLine(line)?.step ?? -1) <= after }),
    });
    this.jsonl = file;
    this.rows = lines.map(parseMetricsLine).filter((row): row is MetricsRow => row !== undefined);
    this.csv = new CsvFile(join(dir, RUN_FILES.csv));
    this.csv.reset(this.rows);
    this.now = options.now ?? Date.now;
    this.out = options.console === undefined ? process.stdout : options.console;
    this.wandb =
      options.wandb === undefined
        ? WandbSink.fromEnv(process.env, { project: "ragen" })
        : (options.wandb ?? undefined);
  }

  /** The last step on disk (undefined for a new run); a resumed trainer continues at lastStep + 1. */
  get lastStep(): number | undefined {
    return this.rows.at(-1)?.step;
  }

  /** Every row logged so far, resumed ones included. */
  history(): readonly MetricsRow[] {
    return this.rows;
  }

  /** Records `metrics` for `step` (which must be larger than every logged step). Returns the console line. */
  log(step: number, metrics: Metrics): string {
    validateStep(step, metrics, this.lastStep);
    const row: MetricsRow = { step, wall_time: this.now() / 1000, metrics: { ...metrics } };
    // JSONL first: it is the record of truth and the resume point; the rest can be rebuilt from it.
    this.jsonl.append(metricsRowToJson(row));
    this.rows.push(row);
    this.csv.append(row);
    this.wandb?.log(step, metrics);
    const line = formatStepSummary(step, metrics, this.options.summaryKeys ?? DEFAULT_SUMMARY_KEYS);
    this.out?.write(`${line}\n`);
    return line;
  }

  /** Closes the files and finishes the W&B run (bounded by its timeouts; never rejects). */
  async close(exitCode = 0): Promise<void> {
    this.jsonl.close();
    await this.wandb?.close(exitCode);
  }
}
