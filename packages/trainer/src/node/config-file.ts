/**
 * Job configs from a file: YAML (or JSON, which YAML reads too) holding the same fields as the
 * `key=value` overrides. Keeps the document so a bad field can be reported with its line.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { ConfigError } from "@ragen/envs";
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";
import type { SettingsFile } from "../settings/resolve.js";

/** Alias expansions a config file may make before it is refused. */
const MAX_ALIAS_COUNT = 100;

/** A config file that is missing, unreadable or not YAML: a ConfigError about the file as a whole. */
function fileError(path: string, message: string, line?: number): ConfigError {
  return new ConfigError(`config file ${path}`, [
    { field: "", message, source: { file: path, ...(line === undefined ? {} : { line }) } },
  ]);
}

/**
 * Reads a config file: `path` is where to read it, `shownAs` how messages name it (the path as the user
 * typed it). The fields are checked later, by resolveSettings, against the lines found here.
 */
export function readConfigFile(
  path: string,
  shownAs = path,
): SettingsFile & { lineOf(field: string): number | undefined } {
  if (!existsSync(path)) throw fileError(shownAs, "no such config file");
  if (statSync(path).isDirectory()) throw fileError(shownAs, "is a folder, not a config file");
  const text = readFileSync(path, "utf8");
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const problem = document.errors[0];
  if (problem) {
    const at = lines.linePos(problem.pos[0]);
    throw fileError(
      shownAs,
      `not valid YAML or JSON (column ${at.col}): ${problem.message.split("\n")[0]}`,
      at.line,
    );
  }
  let values: unknown;
  try {
    // A few aliases are fine; more mean a file built to blow up in memory ("billion laughs").
    values = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    throw fileError(shownAs, `uses more YAML aliases than a config needs: ${error.message}`);
  }
  if (values === null || values === undefined) return { path: shownAs, values: {}, lineOf: () => undefined };
  if (typeof values !== "object" || Array.isArray(values))
    throw fileError(shownAs, `the config must be a mapping of fields (key: value), not ${describe(values)}`);
  return {
    path: shownAs,
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
