/** The settings' JSON Schema, `--help` text and `--print-config` text, all generated from fields.ts. */
import { type FieldSpec, LIBRARY_DEFAULTS, SECTIONS, SETTINGS_FIELDS, settingsFields } from "./fields.js";
import { ALGORITHM_PROFILES, PROFILES, SMALL_MODEL_PROFILE } from "./profiles.js";

let cached: Record<string, unknown> | undefined;

/** Every field required, none other allowed; each field's `default` is the library default. */
export function settingsSchema(): Record<string, unknown> {
  cached ??= objectSchema(
    SETTINGS_FIELDS as unknown as Record<string, unknown>,
    LIBRARY_DEFAULTS as unknown as Record<string, unknown>,
  );
  return cached;
}

function objectSchema(
  fields: Record<string, unknown>,
  defaults: Record<string, unknown>,
): Record<string, unknown> {
  const properties = Object.fromEntries(
    Object.entries(fields).map(([name, field]) =>
      (SECTIONS as readonly string[]).includes(name) && defaults === (LIBRARY_DEFAULTS as unknown)
        ? [name, objectSchema(field as Record<string, unknown>, defaults[name] as Record<string, unknown>)]
        : [name, leafSchema(field as FieldSpec, defaults[name])],
    ),
  );
  return { type: "object", additionalProperties: false, required: Object.keys(fields), properties };
}

function leafSchema(field: FieldSpec, value: unknown): Record<string, unknown> {
  return { ...field.schema, default: value, description: field.description };
}

function valueAt(settings: object, path: string): unknown {
  return path.split(".").reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], settings);
}

/** A value as written on the command line or in YAML: lists as a,b; maps as Tag=N,Tag=N. */
function formatValue(value: unknown): string {
  if (Array.isArray(value)) return value.join(",");
  if (value !== null && typeof value === "object")
    return Object.entries(value)
      .map(([tag, n]) => `${tag}=${n}`)
      .join(",");
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Where a profile changes a field: " [embedded: 18; ragen: 200; ...]". */
function profileValues(path: string): string {
  const profiles = [
    ...Object.entries(PROFILES).map(([name, p]) => [name, p.settings] as const),
    ["models under 50M parameters", SMALL_MODEL_PROFILE.settings] as const,
    ...Object.entries(ALGORITHM_PROFILES).flatMap(([name, p]) => (p ? [[name, p.settings] as const] : [])),
  ];
  const set = profiles.flatMap(([name, layer]) => {
    const [head, field] = path.split(".");
    const section = (layer as Record<string, unknown>)[head!];
    if (field === undefined) return head! in layer ? [`${name}: ${formatValue(section)}`] : [];
    return section && field in (section as object)
      ? [`${name}: ${formatValue((section as Record<string, unknown>)[field])}`]
      : [];
  });
  return set.length > 0 ? ` [${set.join("; ")}]` : "";
}

/** `--help`'s field list: name, library default, meaning, and what each profile sets instead. */
export function describeSettings(): string {
  const rows = settingsFields().map(({ path, spec }) => {
    const choices = "enum" in spec.schema ? ` (${(spec.schema.enum as string[]).join(" | ")})` : "";
    return [
      path,
      formatValue(valueAt(LIBRARY_DEFAULTS, path)),
      `${spec.description}${choices}${profileValues(path)}`,
    ];
  });
  const nameWidth = Math.max(...rows.map(([name]) => name!.length));
  const valueWidth = Math.max(...rows.map(([, value]) => value!.length));
  return rows
    .map(([name, value, text]) => `  ${name!.padEnd(nameWidth)}  ${value!.padEnd(valueWidth)}  ${text}`)
    .join("\n");
}

/** The profiles by name, one line each. */
export function describeProfiles(): string {
  const width = Math.max(...Object.keys(PROFILES).map((name) => name.length));
  return Object.entries(PROFILES)
    .map(([name, profile]) => `  ${name.padEnd(width)}  ${profile.description}`)
    .join("\n");
}

/** `--help` of a training run: how to call it, the profiles, and every field. */
export function settingsHelp(usage: string): string {
  return [
    `usage: ${usage}`,
    "",
    "A config file (YAML or JSON) sets any of the fields below; key=value overrides after it win.",
    "Nested fields are written section.key=value (e.g. starpo.actorLr=1e-5); lists as a,b; maps as Tag=N,Tag=N.",
    "--print-config prints the resolved settings, each with where its value came from, and does not run.",
    "",
    "profiles (profile=<name>):",
    describeProfiles(),
    "",
    "fields, their library defaults [and what the profiles set instead]:",
    describeSettings(),
  ].join("\n");
}
