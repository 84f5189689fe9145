/** `--print-config`: the resolved settings as a config file that says where each value came from. */
import { SECTIONS, settingsFields, type TrainingSettings } from "./fields.js";
import type { ResolvedSettings } from "./resolve.js";

/**
 * The resolved settings as a YAML config file, each field commented with where its value came from:
 * a run's `--print-config`, which can be saved and passed back as the config file.
 */
export function formatResolvedSettings({ settings, sources, parameterCount }: ResolvedSettings): string {
  const lines: string[] =
    parameterCount === undefined
      ? [`# The size of ${settings.model} is not known here, so the small-model profile was not considered.`]
      : [`# ${settings.model}: ${(parameterCount / 1e6).toFixed(1)}M parameters.`];
  const line = (indent: string, name: string, value: unknown, source: string | undefined) =>
    lines.push(`${indent}${name}: ${yamlValue(value)} # ${source ?? "default"}`);
  for (const [name, value] of Object.entries(settings as TrainingSettings)) {
    if ((SECTIONS as readonly string[]).includes(name)) {
      lines.push(`${name}:`);
      for (const [field, fieldValue] of Object.entries(value as object))
        line("  ", field, fieldValue, sources[`${name}.${field}`]);
    } else line("", name, value, sources[name]);
  }
  return `${lines.join("\n")}\n`;
}

/** JSON is YAML's flow style; plain strings stay unquoted when YAML reads them back as the same string. */
function yamlValue(value: unknown): string {
  if (
    typeof value === "string" &&
    /^[A-Za-z][\w./-]*$/.test(value) &&
    !/^(true|false|null|yes|no|on|off)$/i.test(value)
  )
    return value;
  return JSON.stringify(value);
}

/**
 * Which profiles a run's settings came from and the values each set, one line per profile: printed as a
 * run starts, so a run on a new model says whether it got the tiny model's settings or RAGEN's.
 */
export function describeProfileChoice({ settings, sources }: ResolvedSettings): string[] {
  const byProfile = new Map<string, string[]>();
  for (const { path } of settingsFields()) {
    const source = sources[path];
    if (!source?.startsWith("profile ") || path === "profile") continue;
    const value = path
      .split(".")
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], settings);
    const list = byProfile.get(source) ?? [];
    list.push(`${path}=${Array.isArray(value) ? value.join(",") : String(value)}`);
    byProfile.set(source, list);
  }
  if (byProfile.size === 0)
    return [`profile ${settings.profile}: every value from the defaults, a file or the command line`];
  return [...byProfile].map(([source, values]) => `${source}: ${values.join(" ")}`);
}
