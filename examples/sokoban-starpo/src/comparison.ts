/**
 * The whole experiment: run the arms (each resumable), then compare their collapse signals; with
 * `seeds=...`, do that for every seed and summarise each arm across seeds.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseMetricsJsonl } from "@ragen/logging";
import { RUN_FILES, writeFileAtomic } from "@ragen/logging/node";
import { type ArmExperimentResult, type ArmResult, type ArmRun, runArmExperiment } from "@ragen/trainer/node";
import { comparisonCsv, comparisonHtml, comparisonMarkdown } from "./comparison-files.js";
import { armSettings } from "./experiment.js";
import { type ArmSignals, armSignals } from "./signals.js";

export interface SokobanComparison {
  arms: ArmSignals[];
  /** The folder holding the arms' runs and the comparison files. */
  dir: string;
  files: string[];
}

/** `args`: Quest settings, `arms=...` and `seeds=...`, as on the command line; relative paths mean `cwd`. */
export async function runSokobanComparison(
  args: readonly string[],
  cwd: string,
): Promise<ArmExperimentResult<SokobanComparison>> {
  return compareArms(await armSettings(args, cwd));
}

/** Runs `runs` (from `armSettings`): every arm, for each seed when a sweep, each run compared. */
export function compareArms(runs: readonly ArmRun[]): Promise<ArmExperimentResult<SokobanComparison>> {
  return runArmExperiment(runs, "Sokoban StarPO-S vs PPO", writeComparison);
}

/** Writes and prints the comparison of one run of the arms into `dir`, the folder holding them. */
export function writeComparison(results: readonly ArmResult[], dir: string): SokobanComparison {
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
