import Ajv, { type ErrorObject, type JSONSchemaType } from "ajv";

/** A JSON Schema for an env's config (draft-07, as ajv 8 takes by default). */
export type ConfigSchema = Record<string, unknown>;
export type TypedConfigSchema<C> = JSONSchemaType<C>;

/** One problem with a config: where it is and what is wrong. */
export interface ConfigIssue {
  /** Dotted path of the field ("" for the config itself). */
  field: string;
  message: string;
  /** The values or fields that would have been accepted, where the schema lists them. */
  allowed?: readonly unknown[];
  /** Where the bad value was written: a config file (with its line when known) or the command line. */
  source?: { file: string; line?: number } | "command line";
}

/**
 * A config that cannot be used: a field of the wrong type or range, an unknown field, a malformed
 * `key=value` override. Commands exit with code 2 on it (a usage error), whatever the config is for.
 */
export class ConfigError extends Error {
  constructor(
    /** What the config is for, as the message's first line says it: `config for "bandit"`, `quest.yaml`. */
    readonly subject: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    super(`Invalid ${subject}:\n${issues.map(formatIssue).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Thrown for a bad env config; `issues` lists every bad field, and the message names them all. */
export class EnvConfigError extends ConfigError {
  constructor(
    readonly env: string,
    issues: readonly ConfigIssue[],
  ) {
    super(`config for "${env}"`, issues);
    this.name = "EnvConfigError";
  }
}

/** "  - quest.yaml:12: train.envGroups: must be >= 1 (allowed: ...)" */
function formatIssue(issue: ConfigIssue): string {
  // A problem with the config as a whole (not an object, a file that is missing) names no field.
  const field = issue.field === "" ? "" : `${issue.field}: `;
  const allowed = issue.allowed
    ? ` (allowed: ${issue.allowed.map((a) => JSON.stringify(a)).join(", ")})`
    : "";
  const where =
    issue.source === undefined
      ? ""
      : issue.source === "command line"
        ? "command line: "
        : `${issue.source.file}${issue.source.line === undefined ? "" : `:${issue.source.line}`}: `;
  return `  - ${where}${field}${issue.message}${allowed}`;
}

/** A one-issue ConfigError about the command line. */
function overrideError(field: string, message: string): ConfigError {
  return new ConfigError("command line", [{ field, message, source: "command line" }]);
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true });
const compiled = new WeakMap<object, ReturnType<typeof ajv.compile>>();

function fieldOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  if (error.keyword === "additionalProperties") {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return base ? `${base}.${extra}` : extra;
  }
  if (error.keyword === "required") {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return base ? `${base}.${missing}` : missing;
  }
  return base;
}

function schemaAt(schema: ConfigSchema, schemaPath: string): Record<string, unknown> | undefined {
  // "#/properties/size/minimum" -> the object holding "minimum"
  const parts = schemaPath.replace(/^#\//, "").split("/").slice(0, -1);
  let node: unknown = schema;
  for (const part of parts) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[decodeURIComponent(part)];
  }
  return node && typeof node === "object" ? (node as Record<string, unknown>) : undefined;
}

function issueOf(error: ErrorObject, schema: ConfigSchema, data: unknown): ConfigIssue {
  const field = fieldOf(error);
  const got = valueAt(data, error.instancePath);
  const gotText = got === undefined ? "" : ` (got ${JSON.stringify(got)})`;
  switch (error.keyword) {
    case "additionalProperties": {
      const holder = schemaAt(schema, error.schemaPath);
      const props = holder?.properties as Record<string, unknown> | undefined;
      return { field, message: "unknown field", allowed: props ? Object.keys(props) : undefined };
    }
    case "enum":
      return {
        field,
        message: `must be one of the listed values${gotText}`,
        allowed: (error.params as { allowedValues: unknown[] }).allowedValues,
      };
    case "required":
      return { field, message: "is required" };
    case "minLength": {
      const limit = (error.params as { limit: number }).limit;
      return {
        field,
        message: limit === 1 ? "must not be empty" : `must have at least ${limit} characters${gotText}`,
      };
    }
    case "type":
      return {
        field,
        message: `must be ${typeNames((error.params as { type: string | string[] }).type)}${gotText}`,
      };
    default:
      return { field, message: `${error.message ?? "is invalid"}${gotText}` };
  }
}

/** "a number or null" for JSON Schema's ["number", "null"]. */
function typeNames(type: string | string[]): string {
  const names = (Array.isArray(type) ? type : type.split(",")).map((t) =>
    t === "null" ? "null" : t === "array" || t === "integer" || t === "object" ? `an ${t}` : `a ${t}`,
  );
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} or ${names.at(-1)}` : names[0]!;
}

function valueAt(data: unknown, pointer: string): unknown {
  if (pointer === "") return data;
  let node: unknown = data;
  for (const part of pointer.slice(1).split("/")) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return node;
}

/**
 * Validate `config` against `schema` and return a new object with the schema's defaults filled in.
 * Throws EnvConfigError naming every bad field (with the allowed values where the schema has them).
 */
export function validateConfig<C>(env: string, schema: ConfigSchema, config: unknown): C {
  if (config !== undefined && (config === null || typeof config !== "object" || Array.isArray(config))) {
    throw new EnvConfigError(env, [
      { field: "", message: `must be an object, got ${JSON.stringify(config)}` },
    ]);
  }
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  const copy = structuredClone(config ?? {});
  if (validate(copy)) return copy as C;
  const issues = (validate.errors ?? [])
    .filter((e) => e.keyword !== "if")
    .map((e) => issueOf(e, schema, copy));
  throw new EnvConfigError(env, dedupe(issues));
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.field}|${i.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Turn command-line overrides into a config object: `["a.b=3", "name=x"]` -> `{ a: { b: 3 }, name: "x" }`.
 * Values are parsed as JSON when they are JSON (numbers, booleans, null, arrays), else kept as strings.
 * Throws ConfigError naming the bad pair.
 */
export function parseOverrides(pairs: readonly string[]): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw overrideError("", `"${pair}" is not key=value (e.g. steps=50 or starpo.actorLr=1e-5)`);
    const field = pair.slice(0, eq);
    const path = field.split(".");
    if (
      path.some((key) => key === "" || key === "__proto__" || key === "constructor" || key === "prototype")
    ) {
      throw overrideError(field, `"${pair}" has a bad key path`);
    }
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // not JSON: a plain string
    }
    let node = config;
    for (const [depth, key] of path.slice(0, -1).entries()) {
      const next = node[key];
      if (next !== undefined && (next === null || typeof next !== "object" || Array.isArray(next))) {
        throw overrideError(
          path.slice(0, depth + 1).join("."),
          `already has a value, so "${pair}" cannot set a field inside it`,
        );
      }
      node[key] ??= {};
      node = node[key] as Record<string, unknown>;
    }
    node[path.at(-1)!] = value;
  }
  return config;
}

/** A comma-separated list from the command line ("a, b" -> ["a", "b"]); other values as they are. */
export function parseList(value: unknown): unknown {
  return typeof value === "string" ? value.split(",").map((item) => item.trim()) : value;
}

/**
 * `Tag=N,Tag=N` from the command line as a map ({ Tag: N }); a schema then checks the numbers. Values
 * that are not such a string are returned as they are. Throws ConfigError naming `field` when malformed.
 */
export function parseTagValues(field: string, value: unknown): unknown {
  if (typeof value !== "string") return value;
  return Object.fromEntries(
    value.split(",").map((pair) => {
      const [tag, raw, ...more] = pair.split("=");
      if (
        !tag?.trim() ||
        raw === undefined ||
        raw.trim() === "" ||
        more.length > 0 ||
        Number.isNaN(Number(raw))
      )
        throw overrideError(field, `expected Tag=N pairs (N a number), got "${value}"`);
      return [tag.trim(), Number(raw)];
    }),
  );
}
