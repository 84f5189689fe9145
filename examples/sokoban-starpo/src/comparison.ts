/** The whole experiment: run the arms (each resumable), then compare their collapse signals. */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseMetricsJsonl } from "@ragen/logging";
import { RUN_FILES, writeFileAtomic } from "@ragen/logging/node";
import { type ArmRun, runArms } from "@ragen/trainer/node";
import { comparisonCsv, comparisonHtml, comparisonMarkdown } from "./comparison-files.js";
import { armSettings } from "./experiment.js";
import { type ArmSignals, armSignals } from "./signals.js";

export interface SokobanComparison {
  arms: ArmSignals[];
  /** The folder holding the arms' runs and the comparison files. */
  dir: string;
  files: string[];
}

/** `args`: Quest settings and `arms=...`, as on the command line; relative paths mean `cwd`. */
export async function runSokobanComparison(args: readonly string[], cwd: string): Promise<SokobanComparison> {
  return compareArms(await armSettings(args, cwd));
}

/** Runs `runs` (from `armSettings`) one after another, then writes and prints the comparison. */
export async function compareArms(runs: readonly ArmRun[]): Promise<SokobanComparison> {
  const results = await runArms(runs, "Sokoban StarPO-S vs PPO");
  const dir = resolve(results[0]!.settings.outDir, "..");
  const arms = results.map((r) => {
    const rows = parseMetricsJsonl(readFileSync(join(r.settings.outDir, RUN_FILES.metrics), "utf8"));
    return { signals: armSignals(r.arm, rows), rows };
  });
  const signals = arms.map((a) => a.signals);
  const files: [string, string][] = [
    ["comparison.csv", comparisonCsv(signals)],
    ["comparison.md", `${comparisonMarkdown(signals)}\n`],
    ["comparison.html", comparisonHtml(arms)],
  ];
  for (const [name, text] of files) writeFileAtomic(join(dir, name), text);
  console.log(`\n${comparisonMarkdown(signals)}\n\ncurves side by side: ${join(dir, "comparison.html")}`);
  return { arms: signals, dir, files: files.map(([name]) => join(dir, name)) };
}
