import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { JsonlFile } from "@ragen/logging/node";
import { parseVStarEntry, type VStarCache, type VStarEntry, type VStarKey, vstarKeyId } from "../cache.js";

/**
 * Stage 1's estimates on disk, one JSONL line per start state, each appended and fsynced as soon as
 * it is known: a killed stage 1 resumes where it stopped. Every line carries its full key, so entries
 * of other reference models or configs can share the file without ever being reused for this one. A
 * torn last line (the process died mid-write) is cut off on open; a later line for the same key wins.
 */
export class VStarFileCache implements VStarCache {
  private readonly entries = new Map<string, VStarEntry>();

  private constructor(
    readonly path: string,
    private readonly file: JsonlFile,
    lines: readonly string[],
  ) {
    for (const line of lines) {
      const entry = parseLine(line);
      if (entry) this.entries.set(vstarKeyId(entry), entry);
    }
  }

  /** Opens (creating it and its folder if needed) the cache at `path`. */
  static open(path: string): VStarFileCache {
    mkdirSync(dirname(path), { recursive: true });
    const { file, lines } = JsonlFile.open(path);
    return new VStarFileCache(path, file, lines);
  }

  /** Entries read or written, over every key in the file. */
  get size(): number {
    return this.entries.size;
  }

  get(key: VStarKey): VStarEntry | undefined {
    return this.entries.get(vstarKeyId(key));
  }

  put(entry: VStarEntry): void {
    this.file.append(JSON.stringify(entry));
    this.entries.set(vstarKeyId(entry), entry);
  }

  close(): void {
    this.file.close();
  }
}

function parseLine(line: string): VStarEntry | undefined {
  try {
    return parseVStarEntry(JSON.parse(line));
  } catch {
    // A line some other writer garbled is skipped, not fatal: its state is simply estimated again.
    return undefined;
  }
}
