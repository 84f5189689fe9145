import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const entry = join(import.meta.dirname, "..", "src", "index.ts");

/** Every module specifier the sources reachable from `entry` import, following the relative imports. */
function importsReachable(from: string): Map<string, string> {
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
  visit(from);
  return found;
}

describe("the job's core", () => {
  it("imports no Node built-ins and no package's Node entry", () => {
    const imports = importsReachable(entry);
    expect(imports.size).toBeGreaterThan(5);
    const nodeOnly = [...imports].filter(
      ([specifier]) => specifier.startsWith("node:") || specifier.endsWith("/node"),
    );
    expect(nodeOnly).toEqual([]);
  });

  it("bundles for a browser with everything it depends on (no Node module anywhere below it)", async () => {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      logLevel: "silent",
      // Dawn's Node binding is what tensor-webgpu uses outside a browser; a page has navigator.gpu.
      external: ["webgpu"],
    });
    expect(result.errors).toEqual([]);
    expect(result.outputFiles[0]!.text).toContain("runTraining");
  });
});
