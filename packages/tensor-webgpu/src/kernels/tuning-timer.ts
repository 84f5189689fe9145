/**
 * Times candidate kernels for one problem, fairly: each is compiled and run once first (a kernel the
 * driver rejects, that fails, or whose result a check finds wrong is left out, with the reason), then
 * `rounds` rounds of `repeats` runs each, the candidates' order rotating from round to round so that none
 * always runs first after a pause; a candidate's time is its median round. Candidates far behind after the
 * first round leave the race (OUT_OF_RACE), and long runs are timed once per later round (LONG_RUN_MS).
 * On a GPU with timestamp queries the time is the kernels' own (the kernel profiler); on a software
 * adapter, or without timestamps, it is the wall clock around a wait for the queue, which also counts
 * copies (the profiler times dispatches only).
 */
import type { GpuContext } from "../gpu/context.js";
import type { RejectedKernel } from "./matmul-choices.js";

export interface TimingOptions {
  /** Runs per timed round (default 3). */
  repeats?: number;
  /** Timed rounds per candidate; the median counts (default 3; one for a candidate out of the race). */
  rounds?: number;
  /**
   * "gpu" (default): the kernels' own time where the adapter has timestamp queries and is not software,
   * else the wall clock; "wall": always the wall clock around a wait for the queue (it counts copies and
   * the CPU's recording too).
   */
  clock?: "gpu" | "wall";
}

/** Options of a tuning pass over several problems. */
export interface TuningPassOptions extends TimingOptions {
  /** Called before each problem is measured: how many are done, of how many, and which. */
  onProblem?: (done: number, total: number, key: string) => void;
}

/**
 * A candidate this many times slower than the fastest in the first round cannot win: it is not timed again
 * (its first round's time stands). On a language-model head a naive kernel takes a quarter second a run,
 * most of a tuning pass's time when timed like the rest.
 */
export const OUT_OF_RACE = 3;

/**
 * A candidate whose run took longer than this (milliseconds) in the first round is timed one run per
 * later round instead of `repeats`: repeats amortise timer overhead that a run this long does not feel.
 */
export const LONG_RUN_MS = 20;

/** Milliseconds of `run`'s GPU work: timestamps on a GPU that has them (clock "gpu"), else the wall clock. */
async function runMilliseconds(ctx: GpuContext, run: () => void, clock: "gpu" | "wall"): Promise<number> {
  if (clock === "gpu" && ctx.info.features.timestampQuery && !ctx.info.adapter.isSoftware) {
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

/** A candidate left out of the timing, and why. */
export interface RejectedCandidate<T> {
  candidate: T;
  reason: string;
}

export interface CandidateTimes<T> {
  /** Each candidate that ran (and passed the check, when there is one), fastest first. */
  timed: { candidate: T; ms: number }[];
  /** Candidates the driver refused, that failed, or whose result the check found wrong. */
  rejected: RejectedCandidate<T>[];
}

/**
 * Times each candidate that runs. `check`, when given, makes each candidate's first run: it runs the
 * candidate on its own and says what is wrong with the result (undefined when nothing is). A kernel that
 * compiles can still compute wrongly on one driver, and a fast wrong kernel must never win.
 */
export async function timeCandidates<T>(
  ctx: GpuContext,
  candidates: readonly T[],
  run: (candidate: T) => void,
  options: TimingOptions = {},
  check?: (candidate: T) => Promise<string | undefined>,
): Promise<CandidateTimes<T>> {
  const repeats = options.repeats ?? 3;
  const rounds = options.rounds ?? 3;
  const usable: T[] = [];
  const rejected: RejectedCandidate<T>[] = [];
  for (const candidate of candidates) {
    ctx.device.pushErrorScope("validation");
    let problem: string | undefined;
    try {
      if (check) problem = await check(candidate);
      else {
        run(candidate);
        await ctx.sync();
      }
    } catch (error) {
      problem = `it failed: ${(error as Error).message}`;
    }
    const driverError = await ctx.device.popErrorScope();
    if (driverError) problem = `the driver rejected it: ${driverError.message}`;
    if (problem === undefined) usable.push(candidate);
    else rejected.push({ candidate, reason: problem });
  }
  const times = usable.map(() => [] as number[]);
  let racing = usable.map((_, i) => i);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < racing.length; i++) {
      const c = racing[(i + round) % racing.length]!;
      const runs = round > 0 && times[c]![0]! > LONG_RUN_MS ? 1 : repeats;
      const ms = await runMilliseconds(
        ctx,
        () => {
          for (let r = 0; r < runs; r++) run(usable[c]!);
        },
        options.clock ?? "gpu",
      );
      times[c]!.push(ms / runs);
    }
    if (round === 0) {
      const fastest = Math.min(...racing.map((c) => times[c]![0]!));
      racing = racing.filter((c) => times[c]![0]! <= fastest * OUT_OF_RACE);
    }
  }
  const timed = usable.map((candidate, i) => ({ candidate, ms: median(times[i]!) }));
  return { timed: timed.sort((x, y) => x.ms - y.ms), rejected };
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

/** Candidates left out, by name, as a tuned entry keeps them. */
export function namedRejections<T>(
  rejected: readonly RejectedCandidate<T>[],
  name: (candidate: T) => string,
): RejectedKernel[] {
  return rejected.map(({ candidate, reason }) => ({ kernel: name(candidate), reason }));
}

/**
 * chooseWinner's pick; when no candidate ran, an error naming the problem and each candidate left out, with
 * why. `what` begins the message ("matmul tuning: no kernel").
 */
export function winnerOrFail<T>(
  timed: readonly { candidate: T; ms: number }[],
  isDefault: (c: T) => boolean,
  what: string,
  key: string,
  rejected: readonly RejectedKernel[],
): T {
  const winner = chooseWinner(timed, isDefault);
  if (winner === undefined)
    throw new Error(
      `${what} could run ${key} on this adapter (${rejected.map((r) => `${r.kernel}: ${r.reason}`).join("; ")})`,
    );
  return winner;
}
