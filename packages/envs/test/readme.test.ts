import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { updateReadme } from "../scripts/readme-tables.js";

const readmePath = join(import.meta.dirname, "..", "README.md");
const readme = readFileSync(readmePath, "utf8");
const scratch = mkdtempSync(join(tmpdir(), "ragen-envs-readme-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("README.md", () => {
  it("has config and preset tables that match the schemas (run `pnpm --filter @ragen/envs readme`)", () => {
    expect(updateReadme(readme)).toBe(readme);
  });

  // A block under a "<!-- snippet: typecheck-only (...) -->" or "skip" marker needs what a test lacks.
  const snippets = [...readme.matchAll(/(<!-- snippet: [\w-]+ \(.*\) -->\n)?```ts\n([\s\S]*?)```/g)]
    .filter((m) => m[1] === undefined)
    .map((m) => m[2]!)
    .filter((code) => code.includes('from "@ragen/envs"'));

  it("has runnable snippets", () => {
    expect(snippets.length).toBeGreaterThanOrEqual(2);
  });

  snippets.forEach((code, i) => {
    it(`snippet ${i + 1} runs`, async () => {
      const source = pathToFileURL(join(import.meta.dirname, "..", "src", "index.ts")).href;
      const file = join(scratch, `snippet-${i}.ts`);
      writeFileSync(file, code.replaceAll('from "@ragen/envs"', `from ${JSON.stringify(source)}`));
      const log = vi.spyOn(console, "log").mockImplementation(() => {});
      try {
        await import(pathToFileURL(file).href);
        expect(log).toHaveBeenCalled();
      } finally {
        log.mockRestore();
      }
    });
  });
});
