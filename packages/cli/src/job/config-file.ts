/**
 * Job configs from a file: YAML (or JSON, which YAML reads too) holding the same fields as the
 * `key=value` overrides. Keeps the document so a bad field can be reported with its line.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";

/** A config file that is missing, unreadable, not YAML, or whose fields are wrong. */
export class ConfigFileError extends Error {
  override name = "ConfigFileError";
}

export interface ConfigFile {
  /** The path as given. */
  path: string;
  /** The top-level mapping as plain values. */
  values: Record<string, unknown>;
  /** The line (from 1) of a dotted field, e.g. "train.envGroups", when the file sets it. */
  lineOf(field: string): number | undefined;
}

export function readConfigFile(path: string): ConfigFile {
  if (!existsSync(path)) throw new ConfigFileError(`${path}: no such config file`);
  if (statSync(path).isDirectory()) throw new ConfigFileError(`${path}: is a folder, not a config file`);
  const text = readFileSync(path, "utf8");
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const problem = document.errors[0];
  if (problem) {
    const at = lines.linePos(problem.pos[0]);
    const where = `${path}:${at.line}:${at.col}`;
    throw new ConfigFileError(`${where}: not valid YAML or JSON: ${problem.message.split("\n")[0]}`);
  }
  const values = document.toJS() as unknown;
  if (values === null || values === undefined) return { path, values: {}, lineOf: () => undefined };
  if (typeof values !== "object" || Array.isArray(values))
    throw new ConfigFileError(
      `${path}: the config must be a mapping of fields (key: value), not ${describe(values)}`,
    );
  return {
    path,
    values: values as Record<string, unknown>,
    lineOf(field) {
      let node: unknown = document.contents;
      let offset: number | undefined;
      for (const key of field.split(".")) {
        if (!isMap(node)) break;
        const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
        if (!pair) break;
        offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
        node = pair.value;
      }
      return offset === undefined ? undefined : lines.linePos(offset).line;
    },
  };
}

function describe(value: unknown): string {
  return Array.isArray(value) ? "a list" : `the ${typeof value} ${JSON.stringify(value)}`;
}

/** `base` with `over` laid on top, recursively for nested mappings (lists and values are replaced). */
export function mergeConfigs(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = out[key];
    out[key] =
      isPlainObject(under) && isPlainObject(value) ? mergeConfigs(under, value) : structuredClone(value);
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Whether the dotted `field` is set in `values` (or a parent of it is). */
export function setsField(values: Record<string, unknown>, field: string): boolean {
  let node: unknown = values;
  for (const key of field.split(".")) {
    if (!isPlainObject(node) || !(key in node)) return false;
    node = node[key];
    if (!isPlainObject(node)) return true;
  }
  return true;
}
