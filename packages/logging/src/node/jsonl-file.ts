import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import { writeFileAtomic } from "./atomic-write.js";

/**
 * An append-only JSONL file that survives kills: every line is written whole and fsynced before `append`
 * returns, and opening a file whose last line was torn (no trailing newline) cuts that fragment off so the
 * next line starts clean.
 */
export class JsonlFile {
  private fd: number | undefined;

  private constructor(
    readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /**
   * Opens (creating if needed) `path`, drops a torn last line, and returns the file with its complete lines.
   * With `keep`, lines it rejects are removed from the file first (atomically: a resumed run rewinding to
   * its checkpoint never loses the lines it keeps).
   */
  static open(
    path: string,
    options: { keep?: (line: string) => boolean } = {},
  ): { file: JsonlFile; lines: string[] } {
    const text = existsSync(path) ? readFileSync(path, "utf8") : "";
    const end = text.lastIndexOf("\n") + 1;
    const complete = text
      .slice(0, end)
      .split("\n")
      .filter((line) => line.trim() !== "");
    const lines = options.keep ? complete.filter(options.keep) : complete;
    // Rewriting keeps only complete, kept lines, so it also drops a torn last line.
    if (lines.length < complete.length) writeFileAtomic(path, lines.map((line) => `${line}\n`).join(""));
    const fd = openSync(path, "a+");
    if (lines.length === complete.length && end < Buffer.byteLength(text)) {
      // A fragment after the last newline is a line the process did not finish writing.
      ftruncateSync(fd, Buffer.byteLength(text.slice(0, end)));
      fsyncSync(fd);
    }
    return { file: new JsonlFile(path, fd), lines };
  }

  /** Appends one line (must not contain a newline) and flushes it to disk. */
  append(line: string): void {
    if (this.fd === undefined) throw new Error(`${this.path} is closed`);
    if (line.includes("\n")) throw new Error("a JSONL line may not contain a newline");
    writeSync(this.fd, `${line}\n`);
    fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}
