/**
 * The whole experiment: run the arms (each resumable), then compare them in the experiment folder; with
 * `seeds=...`, do that for every seed and summarise each arm across seeds.
 */
import {
  type ArmExperimentResult,
  type ArmResult,
  resolveArmSettings,
  runArmExperiment,
} from "@ragen/trainer/node";
import { WEBSHOP_APO_EXPERIMENT } from "./experiment.js";
import { type ArmOutcome, armOutcome, resultsMarkdown, writeResults } from "./results.js";

export interface WebShopComparison {
  outcomes: ArmOutcome[];
  /** The folder holding the arms' runs and the comparison files. */
  dir: string;
  files: string[];
}

/** `args`: Quest settings, `arms=...` and `seeds=...`, as on the command line; relative paths mean `cwd`. */
export async function runWebShopComparison(
  args: readonly string[],
  cwd: string,
): Promise<ArmExperimentResult<WebShopComparison>> {
  const runs = await resolveArmSettings(args, WEBSHOP_APO_EXPERIMENT, cwd);
  return runArmExperiment(runs, "WebShop: A*-PO vs StarPO", writeComparison);
}

/** Writes and prints the results of one run of the arms into `dir`, the folder holding them. */
export function writeComparison(results: readonly ArmResult[], dir: string): WebShopComparison {
  const outcomes = results.map(armOutcome);
  const files = writeResults(dir, outcomes);
  console.log(`\n${resultsMarkdown(outcomes)}\n\nresults, audit and failure analysis: ${dir}`);
  return { outcomes, dir, files };
}
