/**
 * Learning-rate schedules: a linear warm-up (over optimiser steps, or over a share of the run) times a
 * constant rate or a cosine decay to 0 over the run (verl's warmup_style constant / cosine).
 */

export type LrSchedule = "constant" | "cosine";
export const LR_SCHEDULES = ["constant", "cosine"] as const satisfies readonly LrSchedule[];

/** Linear warm-up: the k-th step (from 0) of `warmupSteps` runs at (k + 1) / (warmupSteps + 1) of the rate. */
export function warmupFactor(stepsTaken: number, warmupSteps: number): number {
  return stepsTaken >= warmupSteps ? 1 : (stepsTaken + 1) / (warmupSteps + 1);
}

export interface LrScheduleOptions {
  schedule: LrSchedule;
  /** Warm-up length in optimiser steps; when above 0 it is the warm-up (lrWarmupRatio is not used). */
  warmupSteps: number;
  /** Warm-up length as a share of the run, when warmupSteps is 0. */
  warmupRatio: number;
  /** Updates in the run, which the share of the run is measured by (needed by cosine and warmupRatio). */
  totalUpdates: number;
}

/** An optimiser step's place: the update it belongs to (from 0), and its index among that update's steps. */
export interface ScheduleStep {
  /** Optimiser steps taken before this one (the checkpointed count). */
  optimizerSteps: number;
  update: number;
  stepInUpdate: number;
  stepsInUpdate: number;
}

/**
 * The factor of the base rate for one optimiser step. The run's clock is its updates, each update's
 * optimiser steps spread evenly over it: a step starts at share p = (update + j / J) / totalUpdates of the
 * run and ends at (update + (j + 1) / J) / totalUpdates, so the schedule spans the run however many
 * trajectories a filter keeps. Warm-up: warmupFactor over `warmupSteps`, or (share at the step's end) /
 * warmupRatio, at most 1. Cosine: (1 + cos(pi * p)) / 2 with p at the step's start, from 1 at the first
 * step towards 0 at the end; it multiplies the warm-up rather than starting after it (verl starts it
 * after: with a warm-up of a few percent the two differ by a fraction of a percent).
 */
export function learningRateFactor(options: LrScheduleOptions, step: ScheduleStep): number {
  const share = (offset: number) =>
    Math.min(1, (step.update + (step.stepInUpdate + offset) / step.stepsInUpdate) / options.totalUpdates);
  let warmup = 1;
  if (options.warmupSteps > 0) warmup = warmupFactor(step.optimizerSteps, options.warmupSteps);
  else if (options.warmupRatio > 0) warmup = Math.min(1, share(1) / options.warmupRatio);
  const decay = options.schedule === "cosine" ? (1 + Math.cos(Math.PI * share(0))) / 2 : 1;
  return warmup * decay;
}

/** Whether the schedule measures the run, so that it needs the run's number of updates. */
export function scheduleNeedsRunLength(options: Omit<LrScheduleOptions, "totalUpdates">): boolean {
  return options.schedule === "cosine" || (options.warmupSteps === 0 && options.warmupRatio > 0);
}
