/**
 * Browser-safe pieces of run metrics logging: the row format shared by the JSONL file, the CSV file and
 * the HTML report, its parser, and the console one-line summary. File I/O lives in `./node`.
 */

/** One logged training step: RAGEN metric names ("actor/pg_loss", "train/Bandit/success", ...) to values. */
export type Metrics = Record<string, number>;

/** A metrics row as stored: the step, the wall-clock time (Unix seconds) and the metrics themselves. */
export interface MetricsRow {
  step: number;
  /** Unix time in seconds (fractional) when the step was logged. */
  wall_time: number;
  metrics: Metrics;
}

/** Keys every row has besides the metrics; a metric may not use them. */
export const RESERVED_KEYS = ["step", "wall_time"] as const;

/**
 * The JSON object written for one row. Non-finite numbers become null because JSON has no NaN or
 * Infinity; `parseMetricsLine` turns them back into NaN.
 */
export function metricsRowToJson(row: MetricsRow): string {
  const out: Record<string, number | null> = { step: row.step, wall_time: row.wall_time };
  for (const [key, value] of Object.entries(row.metrics)) out[key] = Number.isFinite(value) ? value : null;
  return JSON.stringify(out);
}

/** Parses one JSONL line; returns undefined for a line that is not a complete row (e.g. torn by a kill). */
export function parseMetricsLine(line: string): MetricsRow | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.step !== "number" || typeof record.wall_time !== "number") return undefined;
  const metrics: Metrics = {};
  for (const [key, v] of Object.entries(record)) {
    if (key === "step" || key === "wall_time") continue;
    if (typeof v === "number") metrics[key] = v;
    else if (v === null) metrics[key] = Number.NaN;
  }
  return { step: record.step, wall_time: record.wall_time, metrics };
}

/** Every complete row of a metrics JSONL text; a torn or corrupt line is skipped, never fatal. */
export function parseMetricsJsonl(text: string): MetricsRow[] {
  const rows: MetricsRow[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const row = parseMetricsLine(line);
    if (row) rows.push(row);
  }
  return rows;
}

/** Checks a step's inputs before anything is written, so a bad call cannot leave half a row behind. */
export function validateStep(step: number, metrics: Metrics, lastStep: number | undefined): void {
  if (!Number.isInteger(step) || step < 0)
    throw new RangeError(`step must be a non-negative integer, got ${step}`);
  if (lastStep !== undefined && step <= lastStep) {
    throw new RangeError(
      `step ${step} was already logged: steps must increase (last logged step is ${lastStep})`,
    );
  }
  for (const [key, value] of Object.entries(metrics)) {
    if ((RESERVED_KEYS as readonly string[]).includes(key))
      throw new Error(`metric name "${key}" is reserved`);
    if (typeof value !== "number")
      throw new TypeError(`metric "${key}" must be a number, got ${typeof value}`);
  }
}

/**
 * The metrics shown on the console line, in order, with short labels. A pattern with `*` matches every
 * env tag (FrozenLake and Bandit both get a column).
 */
export const DEFAULT_SUMMARY_KEYS: readonly string[] = [
  "critic/score/mean",
  "train/*/success",
  "val-env/*/success",
  "actor/pg_loss",
  "critic/vf_loss",
  "actor/entropy",
  "rollout/in_group_std",
  "actor/grad_norm",
  "timing_s/step",
];

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]+");
  return new RegExp(`^${escaped}$`);
}

/** The keys of `metrics` selected by `patterns`, in pattern order then key order. */
export function selectSummaryKeys(
  metrics: Metrics,
  patterns: readonly string[] = DEFAULT_SUMMARY_KEYS,
): string[] {
  const keys = Object.keys(metrics).sort();
  const chosen: string[] = [];
  for (const pattern of patterns) {
    const re = globToRegExp(pattern);
    for (const key of keys) if (re.test(key) && !chosen.includes(key)) chosen.push(key);
  }
  return chosen;
}

/** A number in a fixed width of 9 characters so successive console lines line up. */
export function formatMetricValue(value: number): string {
  if (Number.isNaN(value)) return "nan".padStart(9);
  if (!Number.isFinite(value)) return (value > 0 ? "inf" : "-inf").padStart(9);
  const abs = Math.abs(value);
  const text =
    value === 0 ? "0" : abs >= 1e5 || abs < 1e-3 ? value.toExponential(2) : value.toFixed(abs >= 100 ? 1 : 4);
  return text.padStart(9);
}

/** Drops the "critic/" / "actor/" style prefix noise to keep the line short: "train/Bandit/success" -> "Bandit/success". */
function shortLabel(key: string): string {
  const parts = key.split("/");
  if ((parts[0] === "train" && parts.length === 3) || parts[0] === "val-env") {
    return `${parts[0] === "val-env" ? "val:" : ""}${parts.slice(1).join("/")}`;
  }
  // "timing_s/step" -> "step_s": a bare "step" would read as the step counter.
  if (parts[0] === "timing_s") return `${parts.slice(1).join("/")}_s`;
  return parts.length > 1 ? parts.slice(1).join("/") : key;
}

/** The console line for one step, e.g. `step    12 | score/mean    0.4500 | Bandit/success    0.9000 | ...`. */
export function formatStepSummary(
  step: number,
  metrics: Metrics,
  patterns: readonly string[] = DEFAULT_SUMMARY_KEYS,
): string {
  const parts = [`step ${String(step).padStart(5)}`];
  for (const key of selectSummaryKeys(metrics, patterns)) {
    parts.push(`${shortLabel(key)} ${formatMetricValue(metrics[key]!)}`);
  }
  return parts.join(" | ");
}
