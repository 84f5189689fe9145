/**
 * Times kernel benchmark cases on one context. Each case is compiled, then kept running for
 * `warmupSeconds` so that the GPU's clocks come up from idle (an H200 idles at 345 MHz; without this, its
 * first 4096³ case measured 23 ms per product against 6.2 for the same kernel later, batches ranging from
 * 6 to 33 ms), then timed in batches of back-to-back iterations (one submission and wait per batch, so on
 * a fast GPU the wait's fixed cost, ~50 µs, is spread over enough work to vanish); the reported time is the
 * median batch's per iteration, with the fastest and slowest batch beside it.
 */
import type { GpuContext } from "../src/gpu/context.js";
import type { BenchCase } from "./case.js";

export interface KernelResult {
  family: string;
  name: string;
  msPerIteration: number;
  /** Per-iteration time of the fastest and slowest batch. */
  msRange: [number, number];
  gflops?: number;
  gbps?: number;
  dispatchesPerIteration: number;
  /** Why the case did not run (a missing adapter feature), when it did not. */
  skipped?: string;
}

export interface RunOptions {
  /** Seconds to spend timing each case (after warm-up), at least `batches` batches. */
  minSeconds: number;
  /** Seconds each case runs before it is timed, so that the GPU's clocks ramp up (default 0.3). */
  warmupSeconds?: number;
  /** Batches to time; the median is reported. */
  batches?: number;
  /** Each batch lasts at least this many milliseconds (more iterations per submission). */
  minBatchMs?: number;
  log?: (line: string) => void;
}

/** The median of `values` (the upper one of an even count); NaN when there are none. */
export const median = (values: readonly number[]): number =>
  values.length === 0 ? Number.NaN : [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The result of a case that did not run, and why. */
const notRun = (c: BenchCase, reason: string): KernelResult => ({
  family: c.family,
  name: c.name,
  msPerIteration: Number.NaN,
  msRange: [Number.NaN, Number.NaN],
  dispatchesPerIteration: 0,
  skipped: reason,
});

export async function runCases(
  ctx: GpuContext,
  cases: readonly BenchCase[],
  options: RunOptions,
): Promise<KernelResult[]> {
  const log = options.log ?? console.log;
  const batches = options.batches ?? 5;
  const minBatchMs = options.minBatchMs ?? 20;
  const results: KernelResult[] = [];
  for (const c of cases) {
    const skipped = c.skip?.(ctx);
    if (skipped) {
      log(`${c.family.padEnd(10)} ${c.name.padEnd(52)} skipped: ${skipped}`);
      results.push(notRun(c, skipped));
      continue;
    }
    const { run, dispose } = c.setup(ctx);
    try {
      run(); // compile and warm up (pipelines, shader JIT, pooled buffers)
      await ctx.sync();
      const warmup = performance.now();
      while (performance.now() - warmup < (options.warmupSeconds ?? 0.3) * 1000) {
        run();
        await ctx.sync();
      }
      const before = ctx.stats.dispatches;
      const first = performance.now();
      run();
      await ctx.sync();
      const once = performance.now() - first;
      const dispatches = ctx.stats.dispatches - before;
      const perBatch = Math.max(1, Math.ceil(minBatchMs / Math.max(once, 1e-3)));
      const times: number[] = [];
      const start = performance.now();
      while (times.length < batches || performance.now() - start < options.minSeconds * 1000) {
        const t0 = performance.now();
        for (let i = 0; i < perBatch; i++) run();
        await ctx.sync();
        times.push((performance.now() - t0) / perBatch);
        if (times.length >= 200) break;
      }
      const ms = median(times);
      const result: KernelResult = {
        family: c.family,
        name: c.name,
        msPerIteration: ms,
        msRange: [Math.min(...times), Math.max(...times)],
        dispatchesPerIteration: dispatches,
      };
      if (c.flops) result.gflops = c.flops / (ms * 1e6);
      if (c.bytes) result.gbps = c.bytes / (ms * 1e6);
      results.push(result);
      const rate =
        result.gflops !== undefined
          ? `${result.gflops.toFixed(1)} GFLOP/s`
          : result.gbps !== undefined
            ? `${result.gbps.toFixed(1)} GB/s`
            : "";
      log(
        `${c.family.padEnd(10)} ${c.name.padEnd(52)} ${ms.toFixed(3).padStart(10)} ms  ${rate.padStart(18)}  ${dispatches} dispatches`,
      );
    } catch (error) {
      const message = (error as Error).message.split("\n")[0]!;
      log(`${c.family.padEnd(10)} ${c.name.padEnd(52)} FAILED: ${message}`);
      results.push(notRun(c, `failed: ${message}`));
    } finally {
      dispose();
    }
  }
  return results;
}

/** Cases of the given families whose names contain every pattern. */
export function selectCases(
  cases: readonly BenchCase[],
  families: readonly string[] | undefined,
  patterns: readonly string[],
): BenchCase[] {
  return cases.filter(
    (c) => (!families || families.includes(c.family)) && patterns.every((p) => c.name.includes(p)),
  );
}
