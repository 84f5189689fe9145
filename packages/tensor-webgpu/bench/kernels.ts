/**
 * `pnpm bench:kernels [--only matmul,attention] [--match 1024,f16] [--min-time 1] [--json out.json]`:
 * GFLOP/s (or GB/s) per kernel and shape, dispatches per iteration, on whatever adapter this machine has.
 * --match keeps the cases whose name contains every one of the given substrings.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { GpuContext } from "../src/gpu/context.js";
import { allCases } from "./cases/index.js";
import { runCases, selectCases } from "./run-cases.js";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    match: { type: "string" },
    "min-time": { type: "string", default: "1" },
    json: { type: "string" },
  },
});

const selected = selectCases(allCases, values.only?.split(","), values.match?.split(",") ?? []);
const ctx = await GpuContext.create({ powerPreference: "high-performance" });
const adapter = ctx.info.adapter;
console.log(
  `adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.device} ${adapter.description}`.trim(),
);
const results = await runCases(ctx, selected, { minSeconds: Number(values["min-time"]) });

const here = dirname(fileURLToPath(import.meta.url));
const out = values.json ?? join(here, "results", `kernels-${adapter.isSoftware ? "software" : "gpu"}.json`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  `${out}.tmp`,
  `${JSON.stringify({ adapter, date: new Date().toISOString(), results }, null, 2)}\n`,
);
renameSync(`${out}.tmp`, out);
console.log(`wrote ${out}`);
ctx.destroy();
