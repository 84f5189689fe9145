/**
 * Collapse signals: a validation success rate that falls below the run's start by more than the
 * validation can explain. Browser-safe, pure functions over logged metric rows.
 */
import type { MetricsRow } from "./metrics.js";

/** Standard error of a success rate `p` measured on `n` episodes: sqrt(p (1 - p) / n). */
export function successStandardError(p: number, n: number): number {
  return n > 0 ? Math.sqrt((p * (1 - p)) / n) : Number.NaN;
}

/** A validation at which an env's success fell below its step-0 value by more than two standard errors. */
export interface ValidationDrop {
  envTag: string;
  step: number;
  start: number;
  value: number;
  /** The drop that counts as a collapse: 2 sqrt(se_start² + se_now²). */
  threshold: number;
}

const VAL_SUCCESS = /^val-env\/([^/]+)\/success$/;

/** Each env's validation success in logged rows: [step, success] pairs in the rows' order. */
export function validationCurves(
  rows: readonly Pick<MetricsRow, "step" | "metrics">[],
): Map<string, [number, number][]> {
  const curves = new Map<string, [number, number][]>();
  for (const row of rows)
    for (const [key, value] of Object.entries(row.metrics)) {
      const envTag = VAL_SUCCESS.exec(key)?.[1];
      if (envTag === undefined || !Number.isFinite(value)) continue;
      const curve = curves.get(envTag);
      if (curve) curve.push([row.step, value]);
      else curves.set(envTag, [[row.step, value]]);
    }
  return curves;
}

/**
 * Every validation (after the first) at which an env's success is below its first validation's by
 * more than two standard errors of the difference, with `episodes` validation episodes per env.
 */
export function validationDrops(
  rows: readonly Pick<MetricsRow, "step" | "metrics">[],
  episodes: number,
): ValidationDrop[] {
  const drops: ValidationDrop[] = [];
  for (const [envTag, curve] of validationCurves(rows)) {
    const start = curve[0]![1];
    for (const [step, value] of curve.slice(1)) {
      const threshold =
        2 * Math.hypot(successStandardError(start, episodes), successStandardError(value, episodes));
      if (start - value > threshold) drops.push({ envTag, step, start, value, threshold });
    }
  }
  return drops.sort((a, b) => a.step - b.step);
}

/** One line for a console or a report: "Bandit at step 9: 12.5% (start 54.7%, more than 2 SE below)". */
export function describeDrop(drop: ValidationDrop): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  return `${drop.envTag} at step ${drop.step}: validation success ${pct(drop.value)}, down from ${pct(drop.start)} at the start (more than 2 standard errors: ${pct(drop.threshold)})`;
}
