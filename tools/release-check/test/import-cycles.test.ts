import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { importCycles } from "../src/import-cycles.js";

const root = resolve(import.meta.dirname, "../../..");

describe("import cycles", () => {
  it("finds none in any package's, example's or tool's sources", () => {
    const folders = ["packages", "examples", "tools"].flatMap((group) =>
      readdirSync(join(root, group))
        .map((name) => join(root, group, name, "src"))
        .filter((dir) => existsSync(dir)),
    );
    expect(folders.length).toBeGreaterThan(10);
    expect(importCycles(root, folders)).toEqual([]);
  });

  it("reports a cycle, type-only imports included", () => {
    const dir = mkdtempSync(join(tmpdir(), "cycles-"));
    try {
      mkdirSync(join(dir, "src"));
      writeFileSync(join(dir, "src", "a.ts"), 'import { b } from "./b.js";\nexport const a = b;\n');
      writeFileSync(join(dir, "src", "b.ts"), 'import type { C } from "./c.js";\nexport const b: C = 1;\n');
      writeFileSync(
        join(dir, "src", "c.ts"),
        '// import { a } from "./a.js" (a comment)\nexport type { A as C } from "./a.js";\n',
      );
      expect(importCycles(dir, [join(dir, "src")])).toEqual([["src/a.ts", "src/b.ts", "src/c.ts"]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
