/**
 * Kernel measurements (matmul kernels, attention tiles) on disk: one JSON file per adapter in the cache folder
 * ($RAGEN_CACHE_DIR, else $XDG_CACHE_HOME/ragen, else ~/.cache/ragen), written atomically. A file that
 * cannot be read or parsed is reported by the tuner and measured again; it holds nothing that cannot be.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { writeFileAtomic } from "@ragen/logging/node";
import type { KernelTuningFile } from "@ragen/tensor-webgpu";
import type { KernelChoiceStore } from "../run/kernel-tuning.js";

/** The folder of the cache files. */
export function ragenCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RAGEN_CACHE_DIR) return env.RAGEN_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "ragen");
  return join(homedir(), ".cache", "ragen");
}

export class KernelChoiceFiles implements KernelChoiceStore {
  constructor(readonly dir: string = ragenCacheDir()) {}

  /** The file of one adapter: named by a hash of its description, which may hold any characters. */
  describe(adapter: string): string {
    const id = createHash("sha256").update(adapter).digest("hex").slice(0, 16);
    return join(this.dir, `kernel-tuning-${id}.json`);
  }

  load(adapter: string): unknown {
    const path = this.describe(adapter);
    if (!existsSync(path)) return undefined;
    const text = readFileSync(path, "utf8");
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`${path} is not JSON (${(error as Error).message})`);
    }
  }

  save(adapter: string, tuning: KernelTuningFile): void {
    mkdirSync(this.dir, { recursive: true });
    writeFileAtomic(this.describe(adapter), `${JSON.stringify(tuning, null, 2)}\n`);
  }
}
