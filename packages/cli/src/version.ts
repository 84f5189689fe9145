/**
 * The package's version, read from its package.json. This module sits at the top of src/ so that the
 * relative path is the same from the sources and from the bundle in dist/.
 */
import { readFileSync } from "node:fs";

export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  return String(manifest.version);
}
