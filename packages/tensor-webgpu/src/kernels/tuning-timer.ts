/**
 * Times candidate kernels for one problem, fairly: each is compiled and run once first (a kernel the
 * driver rejects is left out), then `rounds` rounds of `repeats` runs each, the candidates' order rotating
 * from round to round so that none always runs first after a pause; a candidate's time is its median
 * round. On a GPU with timestamp queries the time is the kernels' own (the kernel profiler); on a software
 * adapter, or without timestamps, it is the wall clock around a wait for the queue, which also counts
 * copies (the profiler times dispatches only).
 */
import type { GpuContext } from "../gpu/context.js";

export interface TimingOptions {
  /** Runs per timed round (default 3). */
  repeats?: number;
  /** Timed rounds per candidate; the median counts (default 3). */
  rounds?: number;
}

/** Options of a tuning pass over several problems. */
export interface TuningPassOptions extends TimingOptions {
  /** Called before each problem is measured: how many are done, of how many, and which. */
  onProblem?: (done: number, total: number, key: string) => void;
}

/** Milliseconds of `run`'s GPU work: timestamps on a GPU that has them, else the wall clock. */
async function gpuMilliseconds(ctx: GpuContext, run: () => void): Promise<number> {
  if (ctx.info.features.timestampQuery && !ctx.info.adapter.isSoftware) {
    ctx.startKernelProfile();
    run();
    return (await ctx.stopKernelProfile()).totalMs;
  }
  await ctx.sync();
  const start = performance.now();
  run();
  await ctx.sync();
  return performance.now() - start;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Each candidate that runs, with its milliseconds per run; the fastest first. */
export async function timeCandidates<T>(
  ctx: GpuContext,
  candidates: readonly T[],
  run: (candidate: T) => void,
  options: TimingOptions = {},
): Promise<{ candidate: T; ms: number }[]> {
  const repeats = options.repeats ?? 3;
  const rounds = options.rounds ?? 3;
  const usable: T[] = [];
  for (const candidate of candidates) {
    ctx.device.pushErrorScope("validation");
    let failed = false;
    try {
      run(candidate);
      await ctx.sync();
    } catch {
      failed = true;
    }
    if ((await ctx.device.popErrorScope()) === null && !failed) usable.push(candidate);
  }
  const times = usable.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < usable.length; i++) {
      const c = (i + round) % usable.length;
      const ms = await gpuMilliseconds(ctx, () => {
        for (let r = 0; r < repeats; r++) run(usable[c]!);
      });
      times[c]!.push(ms / repeats);
    }
  }
  return usable.map((candidate, i) => ({ candidate, ms: median(times[i]!) })).sort((x, y) => x.ms - y.ms);
}

/**
 * How much faster than the fixed rule's choice a candidate must measure to replace it. Timings of one
 * kernel vary by a few percent from round to round (more on a shared machine); a near tie keeps the
 * choice that was measured in context when the rule was written.
 */
export const REPLACE_MARGIN = 0.05;

/** The fastest of `timed` (fastest first), or the fixed rule's choice when it is within the margin. */
export function chooseWinner<T>(
  timed: readonly { candidate: T; ms: number }[],
  isDefault: (c: T) => boolean,
): T | undefined {
  const fastest = timed[0];
  const fallback = timed.find((t) => isDefault(t.candidate));
  if (fastest && fallback && fallback.ms <= fastest.ms * (1 + REPLACE_MARGIN)) return fallback.candidate;
  return fastest?.candidate;
}
