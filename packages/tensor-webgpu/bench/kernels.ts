/**
 * `pnpm bench:kernels [--only matmul,attention] [--match 1024,f16] [--min-time 1] [--json out.json]`:
 * GFLOP/s (or GB/s) per kernel and shape, dispatches per iteration, on whatever adapter this machine has.
 * --match keeps the cases whose name contains every one of the given substrings.
 */
import { mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GpuContext } from "../src/gpu/context.js";
import type { BenchCase } from "./case.js";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    match: { type: "string" },
    "min-time": { type: "string", default: "1" },
    json: { type: "string" },
  },
});

const here = dirname(fileURLToPath(import.meta.url));
const cases: BenchCase[] = [];
for (const file of readdirSync(join(here, "cases"))
  .filter((f) => f.endsWith(".ts"))
  .sort()) {
  const module = (await import(join(here, "cases", file))) as { cases: BenchCase[] };
  cases.push(...module.cases);
}
const families = values.only?.split(",");
const patterns = values.match?.split(",") ?? [];
const selected = cases.filter(
  (c) => (!families || families.includes(c.family)) && patterns.every((p) => c.name.includes(p)),
);
const minTime = Number(values["min-time"]) * 1000;

const ctx = await GpuContext.create();
const adapter = ctx.info.adapter;
console.log(
  `adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.device} ${adapter.description}`.trim(),
);

interface Result {
  family: string;
  name: string;
  msPerIteration: number;
  gflops?: number;
  gbps?: number;
  dispatchesPerIteration: number;
}
const results: Result[] = [];
for (const c of selected) {
  const skipped = c.skip?.(ctx);
  if (skipped) {
    console.log(`${c.family.padEnd(10)} ${c.name.padEnd(48)} skipped: ${skipped}`);
    continue;
  }
  const { run, dispose } = c.setup(ctx);
  run(); // compile and warm up (Mesa JIT-compiles on first dispatch)
  await ctx.sync();
  const before = ctx.stats.dispatches;
  run();
  await ctx.sync();
  const dispatches = ctx.stats.dispatches - before;
  let iterations = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minTime || iterations < 3) {
    run();
    await ctx.sync();
    iterations++;
    elapsed = performance.now() - start;
  }
  dispose();
  const ms = elapsed / iterations;
  const result: Result = {
    family: c.family,
    name: c.name,
    msPerIteration: ms,
    dispatchesPerIteration: dispatches,
  };
  if (c.flops) result.gflops = c.flops / (ms * 1e6);
  if (c.bytes) result.gbps = c.bytes / (ms * 1e6);
  results.push(result);
  const rate =
    result.gflops !== undefined
      ? `${result.gflops.toFixed(2)} GFLOP/s`
      : result.gbps !== undefined
        ? `${result.gbps.toFixed(2)} GB/s`
        : "";
  console.log(
    `${c.family.padEnd(10)} ${c.name.padEnd(48)} ${ms.toFixed(3).padStart(10)} ms  ${rate.padStart(16)}  ${dispatches} dispatches`,
  );
}

const out = values.json ?? join(here, "results", `kernels-${adapter.isSoftware ? "software" : "gpu"}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  `${out}.tmp`,
  `${JSON.stringify({ adapter, date: new Date().toISOString(), results }, null, 2)}\n`,
);
renameSync(`${out}.tmp`, out);
console.log(`wrote ${out}`);
ctx.destroy();
