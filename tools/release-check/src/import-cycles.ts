/**
 * Import cycles between source files: the relative imports (`import`, `import type`, `export ... from`,
 * dynamic `import("./x.js")`) of every .ts file under the given folders, and the cycles among them. A
 * cycle, even of types only, means two files are one unit in disguise; the repository keeps none.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Comments out, so that an example import in a comment is not an edge. */
const withoutComments = (code: string) =>
  code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");

function importsOf(file: string): string[] {
  const targets: string[] = [];
  for (const match of withoutComments(readFileSync(file, "utf8")).matchAll(IMPORT)) {
    const target = resolve(dirname(file), match[1]!.replace(/\.js$/, ".ts"));
    try {
      if (statSync(target).isFile()) targets.push(target);
    } catch {
      // An import of a non-TypeScript file (JSON, WGSL) or a folder: not a source file of the graph.
    }
  }
  return targets;
}

/** Every cycle found (each as the list of files, relative to `root`), at most one per strongly connected set. */
export function importCycles(root: string, folders: readonly string[]): string[][] {
  const files = folders.flatMap((folder) => sourceFiles(folder));
  const edges = new Map(files.map((file) => [file, importsOf(file)]));
  const cycles: string[][] = [];
  const state = new Map<string, "active" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "active");
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === "active") {
        cycles.push(stack.slice(stack.indexOf(next)).map((f) => relative(root, f)));
      } else if (!state.has(next) && edges.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return cycles;
}
