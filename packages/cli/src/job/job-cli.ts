/**
 * The command line of a training job: a config file (YAML or JSON) and `key=value` overrides on top of
 * an experiment's own defaults, paths taken from where the command was typed, the run, and the summary
 * table. Exit code 2 for a bad config or command line.
 */
import { isAbsolute, resolve } from "node:path";
import { EnvConfigError, parseOverrides } from "@ragen/envs";
import { UsageError } from "../commands/usage.js";
import {
  type QuestConfig,
  questConfigSchema,
  resolveQuestConfig,
  resolveQuestPaths,
  validationEnvs,
} from "./config.js";
import { ConfigFileError, mergeConfigs, readConfigFile } from "./config-file.js";
import { describeConfigFields } from "./config-help.js";
import { formatQuestSummary, type QuestSummary, runQuest } from "./train.js";

export interface JobCliOptions {
  /** Shown in the first line. */
  title: string;
  /** Overrides that define the experiment; the config file and the user's arguments come after and win. */
  defaults?: readonly string[];
}

export interface JobArgs {
  /** The config file: `config=<path>`, `--config <path>`, or a first argument without `=`. */
  configFile: string | undefined;
  overrides: string[];
  help: boolean;
}

/** Splits a job's arguments into the config file, the overrides and --help; throws UsageError otherwise. */
export function parseJobArgs(args: readonly string[], options: { positionalFile?: boolean } = {}): JobArgs {
  let configFile: string | undefined;
  const overrides: string[] = [];
  let help = false;
  const setFile = (path: string | undefined) => {
    if (!path) throw new UsageError("--config needs a file path");
    if (configFile !== undefined) throw new UsageError(`two config files given: ${configFile} and ${path}`);
    configFile = path;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--help" || arg === "-h") help = true;
    else if (arg === "--config") setFile(args[++i]);
    else if (arg.startsWith("--config=")) setFile(arg.slice("--config=".length));
    else if (arg.startsWith("config=")) setFile(arg.slice("config=".length));
    else if (arg.startsWith("-")) throw new UsageError(`unknown option ${arg} (fields are set as key=value)`);
    else if (!arg.includes("=")) {
      if (options.positionalFile && i === 0) setFile(arg);
      else throw new UsageError(`"${arg}" is not key=value (e.g. steps=50 or starpo.actorLr=1e-5)`);
    } else overrides.push(arg);
  }
  return { configFile, overrides, help };
}

/**
 * The job's config from its arguments: the experiment's defaults, then the config file, then the
 * overrides; relative paths (the file's, outDir, a model folder) mean `cwd`. Throws UsageError naming
 * the file, line and field of what is wrong.
 */
export function resolveJobConfig(
  parsed: JobArgs,
  options: { defaults?: readonly string[]; cwd: string; training?: boolean },
): QuestConfig {
  const defaults = options.defaults ?? [];
  try {
    if (parsed.configFile === undefined)
      return resolveQuestPaths(
        resolveQuestConfig([...defaults, ...parsed.overrides], { training: options.training ?? true }),
        options.cwd,
      );
    const path = isAbsolute(parsed.configFile) ? parsed.configFile : resolve(options.cwd, parsed.configFile);
    const file = readConfigFile(path);
    // The experiment's defaults sit under the file, which sits under the overrides.
    const values = mergeConfigs(parseOverrides(defaults), file.values);
    const config = resolveQuestConfig(parsed.overrides, {
      file: { ...file, path: parsed.configFile, values },
      training: options.training ?? true,
    });
    return resolveQuestPaths(config, options.cwd);
  } catch (error) {
    if (error instanceof ConfigFileError || error instanceof EnvConfigError)
      throw new UsageError(error.message);
    // parseOverrides' and the envGroups check's messages: the command line or config is wrong.
    if (error instanceof Error && !(error instanceof UsageError) && /config|override/i.test(error.message))
      throw new UsageError(error.message);
    throw error;
  }
}

/** `--help` of a job: how to call it (`usage`, e.g. "ragen train [config.yaml] [key=value ...]") and every field. */
export function jobHelp(usage: string): string {
  return [
    `usage: ${usage}`,
    "",
    "A config file (YAML or JSON) sets any of the fields below; key=value overrides after it win.",
    "Nested fields are written section.key=value (e.g. starpo.actorLr=1e-5); lists as a,b.",
    "",
    "fields (default):",
    describeConfigFields(questConfigSchema),
  ].join("\n");
}

/** Prints the header, runs the job and prints the summary table. */
export async function runJob(config: QuestConfig, title: string): Promise<QuestSummary> {
  const algorithm = config.algorithm === "apo" ? "A*-PO" : "StarPO";
  console.log(`RAGEN.ts ${title} — ${config.envs.join(" + ")} with ${algorithm} on ${config.model}\n`);
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

/**
 * An example's entry point: its defaults, then the user's config file and overrides. Exits with code 2
 * on a bad config and 0 after --help.
 */
export async function runQuestCli(
  args: readonly string[],
  options: JobCliOptions,
): Promise<QuestSummary | undefined> {
  let config: QuestConfig;
  try {
    const parsed = parseJobArgs(args);
    if (parsed.help) {
      console.log(jobHelp(`${options.title.toLowerCase()} [config=<file.yaml>] [key=value ...]`));
      return undefined;
    }
    // npm and pnpm run scripts inside the package; paths on the command line mean where the user typed it.
    config = resolveJobConfig(parsed, {
      cwd: process.env.INIT_CWD ?? process.cwd(),
      ...(options.defaults ? { defaults: options.defaults } : {}),
    });
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  return runJob(config, options.title);
}
