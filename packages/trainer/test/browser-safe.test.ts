import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** Every module specifier the sources reachable from `entry` import, following the relative imports. */
function importsReachable(entry: string): Map<string, string> {
  const found = new Map<string, string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)) {
      const specifier = match[1]!;
      if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
      else found.set(specifier, file);
    }
  };
  visit(entry);
  return found;
}

describe("the job's core", () => {
  it("imports no Node built-ins and no package's Node entry, so it runs in a browser", () => {
    const imports = importsReachable(join(import.meta.dirname, "..", "src", "index.ts"));
    expect(imports.size).toBeGreaterThan(5);
    const nodeOnly = [...imports].filter(
      ([specifier]) => specifier.startsWith("node:") || specifier.endsWith("/node"),
    );
    expect(nodeOnly).toEqual([]);
  });
});
