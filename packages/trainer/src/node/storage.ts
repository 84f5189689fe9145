/**
 * A run in a folder: metrics.jsonl / metrics.csv (RunLogger: fsynced rows, torn lines dropped on resume),
 * trajectories.jsonl, config.json and summary.json written atomically, the checkpoint swapped in with
 * renames, report.html and A*-PO's vstar.jsonl.
 */
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { VStarFileCache } from "@ragen/algos-apo/node";
import { RUN_FILES, RunLogger, TrajectoryLog, writeFileAtomic, writeReport } from "@ragen/logging/node";
import { type LoraAdapters, QWEN2_LINEAR_MODULES, type Qwen2Config } from "@ragen/models";
import { readLoraAdapterWeights, writeLoraAdapterFiles } from "@ragen/models/node";
import type { AdamW, Backend } from "@ragen/tensor-webgpu";
import type {
  CheckpointParts,
  CheckpointState,
  RunLogs,
  RunStorage,
  StoredCheckpoint,
} from "../run/storage.js";
import {
  checkpointActorDir,
  findCheckpoint,
  loadCheckpointAdapters,
  loadCheckpointCritic,
  loadCheckpointOptimizers,
  saveCheckpoint,
} from "./checkpoint-files.js";
import { acquireRunLock, type RunLock } from "./run-lock.js";

/** Where A*-PO's stage 1 keeps its estimates, inside the run folder. */
export const VSTAR_CACHE_FILE = "vstar.jsonl";
/** Where remote rollouts' adapter versions are written for the servers to load, inside the run folder. */
export const ADAPTERS_DIR = "adapters";

export interface NodeRunStorageOptions {
  /** Where each step's console line goes (default process.stdout); null silences it. */
  console?: { write(text: string): unknown } | null;
  /** Log to Weights & Biases when WANDB_API_KEY is set (default true). */
  wandb?: boolean;
  /** Where notes go, e.g. a stale lock taken over (default console.error). */
  say?: (line: string) => void;
}

/**
 * Creates the run folder, turning the errors a bad outDir gives (EEXIST, ENOTDIR, EACCES, EROFS) into
 * messages that say what is wrong with it.
 */
export function prepareRunFolder(location: string): void {
  if (existsSync(location) && !statSync(location).isDirectory())
    throw new Error(`outDir ${location} is a file, not a folder; pass outDir=<folder>`);
  try {
    mkdirSync(location, { recursive: true });
    accessSync(location, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM" || code === "EROFS")
      throw new Error(`outDir ${location} is not writable (${code}); pass outDir=<a writable folder>`, {
        cause: error,
      });
    if (code === "ENOTDIR" || code === "EEXIST")
      throw new Error(`outDir ${location}: a file stands where a folder of its path should be (${code})`, {
        cause: error,
      });
    throw error;
  }
}

export class NodeRunStorage implements RunStorage {
  private lock: RunLock | undefined;

  constructor(
    /** The run folder. */
    readonly location: string,
    private readonly options: NodeRunStorageOptions = {},
  ) {}

  /**
   * Takes the folder for this run (creating it), so that a second run into it refuses at once instead of
   * interleaving rows; a lock left by a dead process on this host is taken over.
   */
  acquire(): void {
    if (this.lock) return;
    prepareRunFolder(this.location);
    this.lock = acquireRunLock(this.location, this.options.say ?? ((line) => console.error(line)));
  }

  release(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  findCheckpoint(): StoredCheckpoint | undefined {
    const found = findCheckpoint(this.location, { repair: this.lock !== undefined });
    if (!found) return undefined;
    return {
      state: found.state,
      actorSource: checkpointActorDir(found.dir),
      loadCritic: async (config: Qwen2Config, backend: Backend) =>
        loadCheckpointCritic(found.dir, config, backend),
      loadOptimizers: async (optimizers: Record<string, AdamW | undefined>) =>
        loadCheckpointOptimizers(found.dir, optimizers),
      loadAdapters: async (part: "actor" | "critic") => loadCheckpointAdapters(found.dir, part),
    };
  }

  lastLoggedStep(): number | undefined {
    const path = join(this.location, RUN_FILES.metrics);
    // An empty file is a run killed before its first row: nothing to lose.
    if (!existsSync(path) || statSync(path).size === 0) return undefined;
    let last: number | undefined;
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const step = stepOfRow(line);
      if (step !== undefined) last = Math.max(last ?? step, step);
    }
    return last ?? Number.POSITIVE_INFINITY;
  }

  openLogs(afterStep: number): RunLogs {
    const logger = new RunLogger(this.location, {
      resumeAfterStep: afterStep,
      ...(this.options.console === undefined ? {} : { console: this.options.console }),
      ...(this.options.wandb === false ? { wandb: null } : {}),
    });
    const trajectories = new TrajectoryLog(this.location, { resumeAfterStep: afterStep });
    return {
      history: () => logger.history(),
      log: (step, metrics) => {
        logger.log(step, metrics);
      },
      appendTrajectories: (records) => trajectories.append(...records),
      close: async () => {
        trajectories.close();
        await logger.close();
      },
    };
  }

  readJson(name: string): unknown {
    const path = join(this.location, name);
    if (!existsSync(path)) return undefined;
    try {
      return JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      throw new Error(`${path}: not valid JSON (${(error as Error).message})`);
    }
  }

  writeJson(name: string, value: unknown): void {
    mkdirSync(this.location, { recursive: true });
    writeFileAtomic(join(this.location, name), `${JSON.stringify(value, null, 2)}\n`);
  }

  saveCheckpoint(parts: CheckpointParts, state: CheckpointState): Promise<void> {
    return saveCheckpoint(this.location, parts, state);
  }

  writeReport(title: string, options: { validationEpisodes?: number } = {}): string {
    return writeReport(this.location, { ...options, title });
  }

  openVStarCache() {
    return VStarFileCache.open(join(this.location, VSTAR_CACHE_FILE));
  }

  async writeAdapter(id: string, adapters: LoraAdapters, baseModel: string): Promise<string> {
    const final = this.adapterPath(id);
    const partial = `${final}.partial`;
    const previous = `${final}.previous`;
    rmSync(partial, { recursive: true, force: true });
    try {
      mkdirSync(partial, { recursive: true });
      // The checkpoint's writer: a server loads these folders as it loads a LoRA run's checkpoint.
      await writeLoraAdapterFiles(partial, adapters, {
        rank: adapters.options.rank,
        alpha: adapters.options.alpha,
        targets: [...(adapters.options.targets ?? QWEN2_LINEAR_MODULES)],
        baseModel,
      });
    } catch (error) {
      rmSync(partial, { recursive: true, force: true });
      const code = (error as NodeJS.ErrnoException).code;
      throw new Error(
        `writing adapter ${id} failed: ${code ? `${code} on ${(error as NodeJS.ErrnoException).path ?? partial}` : (error as Error).message}`,
        { cause: error },
      );
    }
    // A resumed run writes a version its earlier attempt wrote too: swapped in whole, as a checkpoint.
    rmSync(previous, { recursive: true, force: true });
    if (existsSync(final)) renameSync(final, previous);
    renameSync(partial, final);
    rmSync(previous, { recursive: true, force: true });
    return final;
  }

  async readAdapter(id: string): Promise<Map<string, Float32Array>> {
    return readLoraAdapterWeights(this.adapterPath(id));
  }

  adapterPath(id: string): string {
    return resolve(this.location, ADAPTERS_DIR, id);
  }

  listAdapters(): string[] {
    const dir = join(this.location, ADAPTERS_DIR);
    if (!existsSync(dir)) return [];
    // A write killed midway leaves only its .partial or .previous: listed by its id, so it can be removed.
    return [...new Set(readdirSync(dir).map((name) => name.replace(/\.(partial|previous)$/, "")))].sort();
  }

  removeAdapter(id: string): void {
    const final = join(this.location, ADAPTERS_DIR, id);
    for (const path of [final, `${final}.partial`, `${final}.previous`])
      rmSync(path, { recursive: true, force: true });
  }
}

/** The step of one metrics.jsonl line, or undefined for a blank, half-written or foreign line. */
function stepOfRow(line: string): number | undefined {
  if (!line.trim()) return undefined;
  try {
    const step = (JSON.parse(line) as { step?: unknown }).step;
    return Number.isInteger(step) ? (step as number) : undefined;
  } catch {
    return undefined;
  }
}
