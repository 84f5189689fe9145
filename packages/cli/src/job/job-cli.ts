/**
 * The command line of a StarPO job: `key=value` overrides on top of an experiment's own defaults, paths
 * taken from where the command was typed, the run, and the summary table. Exit code 2 for a bad config.
 */
import { type QuestConfig, resolveQuestConfig, resolveQuestPaths, validationEnvs } from "./config.js";
import { formatQuestSummary, type QuestSummary, runQuest } from "./train.js";

export interface JobCliOptions {
  /** Shown in the first line. */
  title: string;
  /** Overrides that define the experiment; the user's arguments come after and win. */
  defaults?: readonly string[];
}

export async function runQuestCli(args: readonly string[], options: JobCliOptions): Promise<QuestSummary> {
  let config: QuestConfig;
  try {
    config = resolveQuestConfig([...(options.defaults ?? []), ...args]);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  // npm and pnpm run scripts inside the package; paths on the command line mean where the user typed it.
  config = resolveQuestPaths(config, process.env.INIT_CWD ?? process.cwd());
  console.log(`RAGEN.ts ${options.title} — ${config.envs.join(" + ")} with StarPO on ${config.model}\n`);
  const summary = await runQuest(config);
  console.log(
    `\nValidation success on ${config.validation.groupsPerEnv} fixed seeds per env (${validationEnvs(config).join(", ")}):\n`,
  );
  console.log(formatQuestSummary(summary));
  console.log(
    `\n${summary.steps} steps in ${(summary.wallSeconds / 60).toFixed(1)} min; report: ${summary.report}`,
  );
  return summary;
}
