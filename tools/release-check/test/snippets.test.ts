import { describe, expect, it } from "vitest";
import { extractSnippets, SnippetMarkerError } from "../src/snippets.js";

const doc = [
  "# Title",
  "```ts",
  'console.log("runs");',
  "```",
  "```sh",
  "npm test",
  "```",
  "<!-- snippet: typecheck-only (needs the network) -->",
  "```ts",
  "await fetch(url);",
  "```",
  "<!-- snippet: skip (an excerpt) -->",
  "```typescript",
  "interface A {}",
  "```",
].join("\n");

describe("extractSnippets", () => {
  it("finds ts blocks with their mode, reason and line", () => {
    expect(extractSnippets(doc, "doc.md")).toEqual([
      { line: 2, code: 'console.log("runs");', mode: "run", reason: "" },
      { line: 9, code: "await fetch(url);", mode: "typecheck-only", reason: "needs the network" },
      { line: 13, code: "interface A {}", mode: "skip", reason: "an excerpt" },
    ]);
  });

  it("does not treat a fenced block inside another language's block as code", () => {
    expect(extractSnippets("```md\n```ts\n```\n", "doc.md")).toEqual([]);
  });

  it("refuses a marker without a reason, an unknown marker and an unclosed block", () => {
    expect(() => extractSnippets("<!-- snippet: skip -->\n```ts\nx\n```\n", "a.md")).toThrow(
      SnippetMarkerError,
    );
    expect(() => extractSnippets("<!-- snippet: maybe (why) -->\n```ts\nx\n```\n", "a.md")).toThrow(
      /unknown snippet marker "maybe"/,
    );
    expect(() => extractSnippets("```ts\nx\n", "a.md")).toThrow(/never closed/);
  });
});
