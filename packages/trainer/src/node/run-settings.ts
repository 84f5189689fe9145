/**
 * A run's settings from what a user typed: a config file and `key=value` overrides, read relative to the
 * folder the command was typed in, and the model's size looked up from its config.json.
 */
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { ConfigError } from "@ragen/envs";
import { EMBEDDED_MODEL, type TrainingSettings } from "../settings/fields.js";
import { checkSettingsFit, type ModelFit } from "../settings/fit.js";
import { type ResolvedSettings, resolveSettings, type SettingsInput } from "../settings/resolve.js";
import { readConfigFile } from "./config-file.js";
import { modelLocation, modelParameterCount } from "./load-policy.js";

export interface RunSettingsInput {
  /** The config file as the user typed it. */
  configFile?: string | undefined;
  overrides?: readonly string[];
  /** An experiment's own settings under the file (its common settings, an arm's). */
  experiment?: SettingsInput["experiment"];
  /** The folder relative paths mean (where the command was typed). */
  cwd: string;
  /** Check what only training needs; default true. */
  training?: boolean;
  /**
   * Look up the model's size for the small-model profile: true (the default; a model whose config.json
   * cannot be read is an error), "if-available" (then the profile is left out: `--print-config` offline
   * with a Hub model), or false (evaluation, which trains nothing).
   */
  sizeModel?: boolean | "if-available";
}

export async function resolveRunSettings(input: RunSettingsInput): Promise<ResolvedSettings> {
  const file =
    input.configFile === undefined
      ? undefined
      : readConfigFile(
          isAbsolute(input.configFile) ? input.configFile : resolve(input.cwd, input.configFile),
          input.configFile,
        );
  const resolved = await resolveSettings({
    ...(file ? { file } : {}),
    ...(input.overrides ? { overrides: input.overrides } : {}),
    ...(input.experiment ? { experiment: input.experiment } : {}),
    ...(input.training === undefined ? {} : { training: input.training }),
    ...(input.sizeModel === false
      ? {}
      : {
          parameterCount: (model: string) =>
            modelParameterCount(localModel(model, input.cwd)).catch((error: unknown) => {
              if (input.sizeModel === "if-available") return undefined;
              throw error;
            }),
        }),
  });
  const settings = resolveRunPaths(resolved.settings, input.cwd);
  const fit = input.training === false ? undefined : localModelFit(settings.model);
  if (fit) checkSettingsFit(settings, fit, resolved.sources);
  return { ...resolved, settings };
}

/** The model's positions when its config.json is on disk (the embedded model, a folder); else undefined. */
function localModelFit(model: string): ModelFit | undefined {
  const file = join(modelLocation(model), "config.json");
  if (!existsSync(file)) return undefined;
  try {
    const positions = (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>)
      .max_position_embeddings;
    return typeof positions === "number" && positions > 0 ? { maxPositionEmbeddings: positions } : undefined;
  } catch {
    // An unreadable config.json is reported by the model's loader, with its own message.
    return undefined;
  }
}

/** A model name that is an existing folder relative to `cwd`, as an absolute path; other names as they are. */
function localModel(model: string, cwd: string, exists: (path: string) => boolean = existsSync): string {
  const local = resolve(cwd, model);
  return model !== EMBEDDED_MODEL && !isAbsolute(model) && exists(local) ? local : model;
}

/**
 * `outDir`, and `model` when it names an existing folder, resolved against `cwd`; a model that is no
 * folder there stays a Hub repo id.
 */
export function resolveRunPaths(
  settings: TrainingSettings,
  cwd: string,
  exists: (path: string) => boolean = existsSync,
): TrainingSettings {
  return {
    ...settings,
    outDir: resolve(cwd, settings.outDir),
    model: localModel(settings.model, cwd, exists),
  };
}

export interface RunArguments {
  /** The config file: `config=<path>`, `--config <path>`, or (with positionalFile) a first argument without `=`. */
  configFile: string | undefined;
  overrides: string[];
  help: boolean;
  /** `--print-config`: print the resolved settings with their sources, and do not run. */
  printConfig: boolean;
}

/** Splits a run's command line into the config file, the overrides and the flags; throws ConfigError otherwise. */
export function parseRunArguments(
  args: readonly string[],
  options: { positionalFile?: boolean } = {},
): RunArguments {
  const parsed: RunArguments = { configFile: undefined, overrides: [], help: false, printConfig: false };
  const wrong = (message: string) =>
    new ConfigError("command line", [{ field: "", message, source: "command line" }]);
  const setFile = (path: string | undefined) => {
    if (!path) throw wrong("--config needs a file path");
    if (parsed.configFile !== undefined)
      throw wrong(`two config files given: ${parsed.configFile} and ${path}`);
    parsed.configFile = path;
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--help" || arg === "-h") parsed.help = true;
    else if (arg === "--print-config") parsed.printConfig = true;
    else if (arg === "--config") setFile(args[++i]);
    else if (arg.startsWith("--config=")) setFile(arg.slice("--config=".length));
    else if (arg.startsWith("config=")) setFile(arg.slice("config=".length));
    else if (arg.startsWith("-")) throw wrong(`unknown option ${arg} (settings are given as key=value)`);
    else if (!arg.includes("=")) {
      if (options.positionalFile && i === 0) setFile(arg);
      else throw wrong(`"${arg}" is not key=value (e.g. steps=50 or starpo.actorLr=1e-5)`);
    } else parsed.overrides.push(arg);
  }
  return parsed;
}
