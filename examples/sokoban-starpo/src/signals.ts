/**
 * RAGEN's collapse signals from a run's metrics: when multi-turn RL falls into the "echo trap", the
 * episodes of a group stop disagreeing (in-group reward std falls towards 0), the policy's entropy
 * falls, and gradient norms spike before the reward drops.
 */
import type { MetricsRow } from "@ragen/logging";

/** What the signals read of a metrics row. */
export type StepMetrics = Pick<MetricsRow, "step" | "metrics">;

/**
 * The curves compared across arms, with the metric each is read from. The in-group std is the one
 * before the StarPO-S filter (`rollout/in_group_std`), so both arms are measured on all their groups.
 */
export const SIGNALS = [
  { key: "rollout/in_group_std", title: "In-group reward std" },
  { key: "actor/entropy", title: "Entropy" },
  { key: "actor/grad_norm", title: "Actor gradient norm" },
  { key: "critic/score/mean", title: "Mean reward" },
  { key: "train/SimpleSokoban/success", title: "Train success" },
  // Logged at step 0 (before training), every validation.every steps and at the last step.
  { key: "val-env/SimpleSokoban/success", title: "Validation success" },
] as const;

/** Below this mean in-group reward std, the episodes of a group no longer disagree. */
export const COLLAPSE_STD = 0.05;

export interface SignalSummary {
  first: number;
  last: number;
  min: number;
  max: number;
}

export interface ArmSignals {
  arm: string;
  /** By metric key; absent where the run never logged it. */
  signals: Record<string, SignalSummary>;
  collapseStep: number | null;
}

/** The logged values of `key`, in step order. */
export function curve(rows: readonly StepMetrics[], key: string): { x: number; y: number }[] {
  return rows
    .filter((row) => Number.isFinite(row.metrics[key]))
    .map((row) => ({ x: row.step, y: row.metrics[key]! }))
    .sort((a, b) => a.x - b.x);
}

/**
 * The first training step from which the in-group reward std stays below `threshold` to the end of
 * the run, or null when the last logged value is above it (no collapse, or a recovery).
 */
export function collapseStep(rows: readonly StepMetrics[], threshold = COLLAPSE_STD): number | null {
  const points = curve(rows, "rollout/in_group_std");
  let start: number | null = null;
  for (const point of points) {
    if (point.y >= threshold) start = null;
    else start ??= point.x;
  }
  return start;
}

export function armSignals(arm: string, rows: readonly StepMetrics[]): ArmSignals {
  const signals: Record<string, SignalSummary> = {};
  for (const { key } of SIGNALS) {
    const ys = curve(rows, key).map((p) => p.y);
    if (ys.length === 0) continue;
    signals[key] = { first: ys[0]!, last: ys.at(-1)!, min: Math.min(...ys), max: Math.max(...ys) };
  }
  return { arm, signals, collapseStep: collapseStep(rows) };
}
