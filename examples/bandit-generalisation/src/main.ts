/**
 * `npm run bandit-generalisation`: StarPO on Bandit, validated on the training arm names, unseen names
 * and reversed payoffs. Any Quest setting can be overridden, e.g. `model=Qwen/Qwen2.5-0.5B-Instruct`.
 *
 * Exit code 2 for a bad setting, 1 when the run fails.
 */
import { fileURLToPath } from "node:url";
import { ConfigError } from "@ragen/envs";
import { formatResolvedSettings, settingsHelp, type TrainingSummary } from "@ragen/trainer";
import { parseRunArguments, runTrainingJob } from "@ragen/trainer/node";
import { banditGeneralisationSettings } from "./experiment.js";

const TITLE = "Bandit generalisation";

/** The experiment's command line: `--help`, `--print-config`, or the run (its summary). */
export async function runBanditGeneralisation(
  args: readonly string[],
  cwd: string,
): Promise<TrainingSummary | undefined> {
  const parsed = parseRunArguments(args);
  if (parsed.help) {
    console.log(settingsHelp(`${TITLE.toLowerCase()} [config=<file.yaml>] [key=value ...] [--print-config]`));
    return undefined;
  }
  const resolved = await banditGeneralisationSettings(
    { ...parsed, ...(parsed.printConfig ? { sizeModel: "if-available" as const } : {}) },
    cwd,
  );
  if (parsed.printConfig) {
    process.stdout.write(formatResolvedSettings(resolved));
    return undefined;
  }
  return runTrainingJob(resolved, TITLE);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // npm and pnpm run scripts inside the package; paths on the command line mean where the user typed it.
  runBanditGeneralisation(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd()).catch(
    (error: Error) => {
      console.error(error instanceof ConfigError ? error.message : `bandit-generalisation: ${error.message}`);
      process.exit(error instanceof ConfigError ? 2 : 1);
    },
  );
}
