/**
 * One run per folder: `<outDir>/.lock`, created with `wx` (fails if it exists), holds the owner's pid,
 * host and start time. A lock whose owner is a dead process on this host is stale and taken over; one
 * from another host cannot be checked, so it is refused like a live one.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";

export const LOCK_FILE = ".lock";

export interface LockHolder {
  pid: number;
  host: string;
  since: string;
}

export interface RunLock {
  readonly path: string;
  release(): void;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, "utf8")) as LockHolder;
    return Number.isInteger(holder.pid) && typeof holder.host === "string" ? holder : undefined;
  } catch {
    return undefined;
  }
}

export function acquireRunLock(outDir: string, say: (line: string) => void = console.error): RunLock {
  const path = join(outDir, LOCK_FILE);
  const me: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${JSON.stringify(me)}\n`, { flag: "wx" });
      return {
        path,
        release: () => {
          // Only our own lock: a takeover by another process after a stale detection is not ours to drop.
          if (readHolder(path)?.pid === me.pid && readHolder(path)?.since === me.since)
            rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = readHolder(path);
    if (holder && (holder.host !== me.host || processAlive(holder.pid)))
      throw new Error(
        `${outDir} is in use by another run (pid ${holder.pid} on ${holder.host}, since ${holder.since}); wait for it to end, or pass outDir=<another folder>`,
      );
    say(
      holder
        ? `${outDir}: taking over the lock of pid ${holder.pid} on ${holder.host} (since ${holder.since}), which is no longer running`
        : `${path}: unreadable lock file, taking it over`,
    );
    rmSync(path, { force: true });
  }
  throw new Error(`${path}: could not take the lock (another run took it at the same moment)`);
}
