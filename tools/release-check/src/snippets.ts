/**
 * TypeScript code blocks of the Markdown documentation, as the tests run them. Every ```ts block runs
 * unless an HTML comment on the line right above its fence says otherwise, with a reason:
 *
 *   <!-- snippet: typecheck-only (downloads Qwen2.5-0.5B from the Hub) -->
 *   <!-- snippet: skip (an excerpt of the Env interface, not a program) -->
 *
 * "typecheck-only" blocks are still compiled against the packages' published types; "skip" blocks are
 * neither compiled nor run.
 */
export type SnippetMode = "run" | "typecheck-only" | "skip";

export interface Snippet {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  mode: SnippetMode;
  /** Why it is not run; empty for "run". */
  reason: string;
}

const FENCE = /^```(ts|typescript)\s*$/;
const MARKER = /^<!--\s*snippet:\s*([\w-]+)\s*(?:\((.*)\))?\s*-->\s*$/;

export class SnippetMarkerError extends Error {
  constructor(source: string, line: number, problem: string) {
    super(`${source}:${line}: ${problem}`);
    this.name = "SnippetMarkerError";
  }
}

export function extractSnippets(markdown: string, source: string): Snippet[] {
  const lines = markdown.split("\n");
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith("```")) continue;
    const opening = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw new SnippetMarkerError(source, opening + 1, "code block is never closed");
    i = end;
    if (!FENCE.test(line.trim())) continue;

    let mode: SnippetMode = "run";
    let reason = "";
    const above = opening > 0 ? lines[opening - 1]!.trim() : "";
    const marker = MARKER.exec(above);
    if (marker) {
      const [, kind, why] = marker;
      if (kind !== "typecheck-only" && kind !== "skip") {
        throw new SnippetMarkerError(
          source,
          opening,
          `unknown snippet marker "${kind}" (typecheck-only or skip)`,
        );
      }
      if (!why?.trim())
        throw new SnippetMarkerError(source, opening, `snippet: ${kind} needs a reason in parentheses`);
      mode = kind;
      reason = why.trim();
    } else if (/^<!--\s*snippet/.test(above)) {
      throw new SnippetMarkerError(source, opening, `malformed snippet marker: ${above}`);
    }
    snippets.push({ line: opening + 1, code: lines.slice(opening + 1, end).join("\n"), mode, reason });
  }
  return snippets;
}
