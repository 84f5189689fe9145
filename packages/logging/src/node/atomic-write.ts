import { renameSync, rmSync, writeFileSync } from "node:fs";

/**
 * Writes `path` so readers see the old or the new content, never a half-written file. On failure (a full
 * disk, say) the temp file is removed and the error names the file and the cause.
 */
export function writeFileAtomic(path: string, content: string | Uint8Array): void {
  const temp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(temp, content);
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      `writing ${path} failed: ${code ? `${code} on ${(error as NodeJS.ErrnoException).path ?? temp}` : (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
