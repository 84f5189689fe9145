import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface ResultFiles {
  /** One JSON object per episode. */
  trajectories: readonly object[];
  summaryMarkdown: string;
  summaryJson: object;
}

export const RESULT_FILE_NAMES = {
  trajectories: "trajectories.jsonl",
  summaryMarkdown: "summary.md",
  summaryJson: "summary.json",
} as const;

/** Each file is written beside its final name and renamed over it, so a reader never sees half a file. */
function writeAtomically(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

/** Writes the three result files into `outDir` (created if missing); returns their paths. */
export function writeResults(outDir: string, files: ResultFiles): string[] {
  mkdirSync(outDir, { recursive: true });
  const paths = {
    trajectories: join(outDir, RESULT_FILE_NAMES.trajectories),
    summaryMarkdown: join(outDir, RESULT_FILE_NAMES.summaryMarkdown),
    summaryJson: join(outDir, RESULT_FILE_NAMES.summaryJson),
  };
  writeAtomically(paths.trajectories, files.trajectories.map((t) => `${JSON.stringify(t)}\n`).join(""));
  writeAtomically(paths.summaryJson, `${JSON.stringify(files.summaryJson, null, 2)}\n`);
  writeAtomically(paths.summaryMarkdown, files.summaryMarkdown);
  return Object.values(paths);
}
