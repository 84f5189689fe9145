// The TypeScript examples in the package READMEs and the documentation pages, compiled against the
// packages' published types and run against their built dist, as a user who copies them would.
// Blocks that cannot run here say why with a marker (see src/snippets.ts).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentationSources } from "../src/doc-sources.js";
import { extractSnippets } from "../src/snippets.js";

const packageRoot = join(import.meta.dirname, "..");
// Inside this package, so the snippets' imports of @ragen/* resolve to its workspace dependencies.
const snippetDir = join(packageRoot, "tmp", "snippets");
const bin = (name: string) => join(packageRoot, "node_modules", ".bin", name);

const cases = documentationSources().flatMap((source) =>
  extractSnippets(source.markdown, source.path).map((snippet) => {
    const slug = source.path.replace(/\.md$/, "").replace(/[^\w]+/g, "-");
    return { ...snippet, source: source.path, file: join(snippetDir, `${slug}-L${snippet.line}.mts`) };
  }),
);

let compilerOutput = "";

beforeAll(() => {
  rmSync(snippetDir, { recursive: true, force: true });
  mkdirSync(snippetDir, { recursive: true });
  for (const snippet of cases) {
    if (snippet.mode !== "skip") writeFileSync(snippet.file, `${snippet.code}\nexport {};\n`);
  }
  writeFileSync(
    join(snippetDir, "tsconfig.json"),
    JSON.stringify({
      extends: "../../../../tsconfig.base.json",
      compilerOptions: { noEmit: true, types: ["node"], skipLibCheck: true },
      include: ["*.mts"],
    }),
  );
  // Run from the snippet folder, so tsc names each file by its bare name ("x.mts(3,5): error ...").
  const result = spawnSync(bin("tsc"), ["-p", "tsconfig.json", "--pretty", "false"], {
    cwd: snippetDir,
    encoding: "utf8",
  });
  compilerOutput = `${result.stdout}${result.stderr}`;
});

afterAll(() => rmSync(snippetDir, { recursive: true, force: true }));

it("compiles with no errors outside the snippets (tsconfig, missing packages)", () => {
  const names = cases.map((snippet) => basename(snippet.file));
  const stray = compilerOutput
    .split("\n")
    .filter(
      (line) =>
        line.trim() !== "" && !names.some((name) => line.startsWith(`${name}(`)) && !line.startsWith(" "),
    );
  expect(stray).toEqual([]);
});

it("finds the documentation's code blocks", () => {
  expect(cases.filter((snippet) => snippet.mode === "run").length).toBeGreaterThanOrEqual(10);
});

describe.each(cases.map((snippet) => [`${snippet.source}:${snippet.line}`, snippet] as const))(
  "%s",
  (_, snippet) => {
    it.skipIf(snippet.mode === "skip")("compiles against the published types", () => {
      const name = basename(snippet.file);
      const errors = compilerOutput.split("\n").filter((line) => line.startsWith(`${name}(`));
      expect(errors.map((line) => line.slice(name.length))).toEqual([]);
    });

    it.skipIf(snippet.mode !== "run")("runs", () => {
      // A fresh working directory: snippets that write files (run logs, caches) leave nothing behind.
      const cwd = mkdtempSync(join(tmpdir(), "ragen-snippet-"));
      try {
        const result = spawnSync(bin("tsx"), [snippet.file], {
          cwd,
          encoding: "utf8",
          timeout: 100_000,
          env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? cwd, NO_COLOR: "1" },
        });
        expect(result.status, `${result.error ?? ""}\n${result.stdout}\n${result.stderr}`).toBe(0);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    });
  },
);
