import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { TrajectoryRecord } from "../trajectory.js";
import { JsonlFile } from "./jsonl-file.js";
import { RUN_FILES } from "./run-logger.js";

/**
 * Appends trajectory records to `<dir>/trajectories.jsonl`, one per line, flushed per call. A resumed run
 * passes `resumeAfterStep`: records of later steps (written after its checkpoint) are dropped, so the
 * steps it replays are not shown twice.
 */
export class TrajectoryLog {
  private readonly file: JsonlFile;

  constructor(
    readonly dir: string,
    options: { resumeAfterStep?: number } = {},
  ) {
    mkdirSync(dir, { recursive: true });
    const after = options.resumeAfterStep;
    this.file = JsonlFile.open(join(dir, RUN_FILES.trajectories), {
      ...(after === undefined ? {} : { keep: (line) => lineStep(line) <= after }),
    }).file;
  }

  append(...records: TrajectoryRecord[]): void {
    for (const record of records) this.file.append(JSON.stringify(record));
  }

  close(): void {
    this.file.close();
  }
}

/** The step of a record line; unreadable lines count as step -1 (kept, and skipped by the report's parser). */
function lineStep(line: string): number {
  try {
    const step = (JSON.parse(line) as { step?: unknown }).step;
    return typeof step === "number" ? step : -1;
  } catch {
    return -1;
  }
}
