/** The whole experiment: run the arms (each resumable), then compare them in the experiment folder. */
import { resolve } from "node:path";
import { resolveArmSettings, runArms } from "@ragen/trainer/node";
import { WEBSHOP_APO_EXPERIMENT } from "./experiment.js";
import { type ArmOutcome, armOutcome, resultsMarkdown, writeResults } from "./results.js";

export interface WebShopComparison {
  outcomes: ArmOutcome[];
  /** The folder holding the arms' runs and the comparison files. */
  dir: string;
  files: string[];
}

/** `args`: Quest settings and `arms=...`, as on the command line; relative paths mean `cwd`. */
export async function runWebShopComparison(args: readonly string[], cwd: string): Promise<WebShopComparison> {
  const runs = await resolveArmSettings(args, WEBSHOP_APO_EXPERIMENT, cwd);
  const results = await runArms(runs, "WebShop: A*-PO vs StarPO");
  const dir = resolve(results[0]!.settings.outDir, "..");
  const outcomes = results.map(armOutcome);
  const files = writeResults(dir, outcomes);
  console.log(`\n${resultsMarkdown(outcomes)}\n\nresults, audit and failure analysis: ${dir}`);
  return { outcomes, dir, files };
}
