/**
 * Oracle and random baselines for every env preset: success rate over seeds 0..N-1 within RAGEN's
 * per-trajectory action budget (and, for the oracle, without a budget).
 *
 *   pnpm oracle [--seeds 1000] [--only FrozenLake,Bandit] [--json out.json] [--markdown]
 */
import { renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { markdownTable, ProgressBar, textTable } from "@ragen/logging";
import { evaluatePolicy, hasOracle, listPresets, type PolicyEvaluation } from "../src/index.js";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1000" },
    only: { type: "string" },
    json: { type: "string" },
    markdown: { type: "boolean", default: false },
  },
});
const count = Number(values.seeds);
if (!Number.isInteger(count) || count <= 0) {
  console.error(`--seeds must be a positive integer, got "${values.seeds}"`);
  process.exit(2);
}
const seeds = Array.from({ length: count }, (_, i) => i);
const presets = listPresets();
const tags = values.only ? values.only.split(",").map((t) => t.trim()) : Object.keys(presets);
for (const tag of tags) {
  if (!presets[tag]) {
    console.error(`Unknown preset "${tag}". Presets: ${Object.keys(presets).join(", ")}`);
    process.exit(2);
  }
}

interface Row {
  preset: string;
  env: string;
  budget: number;
  oracle: PolicyEvaluation;
  oracleUncapped: PolicyEvaluation;
  random: PolicyEvaluation;
  seconds: number;
}

const rows: Row[] = [];
for (const tag of tags) {
  if (!hasOracle(tag)) continue;
  const started = performance.now();
  const bar = new ProgressBar({ label: tag.padEnd(26), total: 3 * count, stream: process.stderr });
  const progress = () => bar.tick();
  const oracle = evaluatePolicy(tag, "oracle", { seeds, onEpisode: progress });
  const oracleUncapped = evaluatePolicy(tag, "oracle", { seeds, maxActions: 1000, onEpisode: progress });
  const random = evaluatePolicy(tag, "random", { seeds, onEpisode: progress });
  bar.finish();
  rows.push({
    preset: tag,
    env: presets[tag]!.env,
    budget: oracle.maxActions,
    oracle,
    oracleUncapped,
    random,
    seconds: (performance.now() - started) / 1000,
  });
}

const pct = (e: PolicyEvaluation) =>
  `${(100 * e.successRate).toFixed(1)}% ± ${(100 * e.successStderr).toFixed(1)}`;
const header = [
  "preset",
  "env",
  "action budget",
  "oracle success",
  "oracle (no budget)",
  "oracle mean reward",
  "random success",
  "random mean reward",
];
const table = rows.map((r) => [
  r.preset,
  r.env,
  String(r.budget),
  pct(r.oracle),
  pct(r.oracleUncapped),
  r.oracle.meanReward.toFixed(3),
  pct(r.random),
  r.random.meanReward.toFixed(3),
]);

if (values.markdown) {
  console.log(markdownTable(header, table));
} else {
  console.log(`\nSuccess over seeds 0..${count - 1} (± one standard error)\n`);
  console.log(textTable(header, table));
}

if (values.json) {
  const summary = rows.map(({ oracle, oracleUncapped, random, ...rest }) => ({
    ...rest,
    oracle: {
      successRate: oracle.successRate,
      meanReward: oracle.meanReward,
      meanActions: oracle.meanActions,
    },
    oracleUncapped: { successRate: oracleUncapped.successRate, meanReward: oracleUncapped.meanReward },
    random: { successRate: random.successRate, meanReward: random.meanReward },
  }));
  const temporary = `${values.json}.tmp-${process.pid}`;
  writeFileSync(temporary, `${JSON.stringify({ seeds: count, rows: summary }, null, 2)}\n`);
  renameSync(temporary, values.json);
  console.error(`wrote ${values.json}`);
}
