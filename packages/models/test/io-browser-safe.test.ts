import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// Everything the main entry reaches must run in browsers; Node-only code lives behind "./node".
const FORBIDDEN: readonly [RegExp, string][] = [
  [/from\s+["']node:/, "imports a node: module"],
  [
    /from\s+["'](fs|path|os|crypto|child_process|worker_threads|url|util|stream|buffer|http|https|net)(\/[^"']*)?["']/,
    "imports a Node built-in",
  ],
  [/from\s+["']@huggingface\/hub["']/, "imports the Hub client (Node-only parts)"],
  [/\brequire\s*\(/, "uses require()"],
  [/\bprocess\.(env|argv|exit|cwd|pid)/, "uses process"],
  [/\bBuffer\./, "uses Buffer"],
  [/\b__dirname\b|\b__filename\b/, "uses __dirname/__filename"],
];

const SRC = join(import.meta.dirname, "..", "src");

function withoutComments(code: string): string {
  return code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
}

/** Source files reachable from `entry` through relative imports. */
function reachableFiles(entry: string): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const code = withoutComments(readFileSync(file, "utf8"));
    for (const match of code.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      queue.push(resolve(dirname(file), match[1]!.replace(/\.js$/, ".ts")));
    }
  }
  return [...seen];
}

describe("browser safety of the main entry", () => {
  it("reaches no Node-only API from src/index.ts", () => {
    const files = reachableFiles(join(SRC, "index.ts"));
    const io = files.map((file) => relative(SRC, file)).filter((file) => file.startsWith("io/"));
    expect(io.sort()).toEqual([
      "io/config.ts",
      "io/gguf-qwen2.ts",
      "io/gguf.ts",
      "io/safetensors.ts",
      "io/sharded.ts",
    ]);
    const problems: string[] = [];
    for (const file of files) {
      const code = withoutComments(readFileSync(file, "utf8"));
      for (const [pattern, what] of FORBIDDEN)
        if (pattern.test(code)) problems.push(`${relative(SRC, file)} ${what}`);
    }
    expect(problems).toEqual([]);
  });

  it("keeps the Node-only modules behind src/node.ts", () => {
    const files = reachableFiles(join(SRC, "node.ts")).map((file) => relative(SRC, file));
    expect(files).toContain("io/folder.ts");
    expect(files).toContain("io/hub.ts");
    expect(files).toContain("io/gguf-writer.ts");
  });
});
