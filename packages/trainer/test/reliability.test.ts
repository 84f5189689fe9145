import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { serializeSafetensors } from "@ragen/models";
import type { WebGpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryRunStorage, nonFiniteLosses, resolveSettings, runTraining } from "../src/index.js";
import {
  acquireRunLock,
  findCheckpoint,
  LOCK_FILE,
  NodeRunStorage,
  prepareRunFolder,
  runEval,
} from "../src/node.js";

const root = mkdtempSync(join(tmpdir(), "reliability-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
const freshFolder = () => {
  const dir = join(root, `run-${folders++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
};

/** A checkpoint folder as a save leaves it: complete, or cut short before its state.json. */
function writeCheckpointFolder(dir: string, step: number, complete = true): void {
  mkdirSync(join(dir, "actor"), { recursive: true });
  writeFileSync(join(dir, "actor", "config.json"), "{}");
  writeFileSync(join(dir, "optimizers.safetensors"), serializeSafetensors(new Map(), { "actor.steps": "1" }));
  if (complete)
    writeFileSync(join(dir, "state.json"), JSON.stringify({ step, trainResets: step, model: "m" }));
}

describe("checkpoint recovery from every point of death of the swap", () => {
  const stepFound = (dir: string) => findCheckpoint(dir, { repair: true })?.state.step;

  it("killed while writing .partial: the old checkpoint", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint"), 1);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2, false);
    expect(stepFound(dir)).toBe(1);
  });

  it("killed between the two renames: the complete .partial, swapped in", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint.previous"), 1);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2);
    expect(stepFound(dir)).toBe(2);
    expect(readdirSync(dir)).toEqual(["checkpoint"]);
  });

  it("killed before .previous is removed: the new checkpoint", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint"), 2);
    writeCheckpointFolder(join(dir, "checkpoint.previous"), 1);
    expect(stepFound(dir)).toBe(2);
  });

  it("killed between the renames, then during the next save after .previous went: the complete .partial", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2);
    expect(stepFound(dir)).toBe(2);
    expect(readdirSync(dir)).toEqual(["checkpoint"]);
  });

  it("an incomplete .partial beside .previous: .previous", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint.previous"), 1);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2, false);
    expect(stepFound(dir)).toBe(1);
  });

  it("a .partial whose optimiser file is torn is not used", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint.previous"), 1);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2);
    writeFileSync(join(dir, "checkpoint.partial", "optimizers.safetensors"), "torn");
    expect(stepFound(dir)).toBe(1);
  });

  it("without repair (an eval reading a run), nothing is renamed", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint.previous"), 1);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 2);
    expect(findCheckpoint(dir)?.dir).toBe(join(dir, "checkpoint.partial"));
    expect(readdirSync(dir).sort()).toEqual(["checkpoint.partial", "checkpoint.previous"]);
  });

  it("a corrupt checkpoint/state.json is an error naming it", () => {
    const dir = freshFolder();
    writeCheckpointFolder(join(dir, "checkpoint"), 1);
    writeFileSync(join(dir, "checkpoint", "state.json"), "{ torn");
    expect(() => findCheckpoint(dir)).toThrow(/checkpoint[/\\]state\.json: not valid JSON/);
  });
});

const settingsFor = async (outDir: string, ...overrides: string[]) =>
  (await resolveSettings({ overrides: [`outDir=${outDir}`, "checkpointEvery=10", ...overrides] })).settings;
// The refusals come before anything touches the GPU.
const noBackend = {} as WebGpuBackend;
const noLoader = () => Promise.reject(new Error("no model should be loaded"));

describe("a run never drops logged rows silently", () => {
  const rowsUpTo = (last: number) =>
    Array.from(
      { length: last + 1 },
      (_, step) => `${JSON.stringify({ step, wall_time: step, metrics: {} })}\n`,
    ).join("");

  it("refuses to resume rows past the checkpoint that should exist for them, naming the choice", async () => {
    const dir = freshFolder();
    // checkpointEvery is 10: rows up to step 12 mean the step-10 checkpoint was saved, and is gone.
    const rows = rowsUpTo(12);
    writeFileSync(join(dir, "metrics.jsonl"), rows);
    writeCheckpointFolder(join(dir, "checkpoint.partial"), 10, false);
    const storage = new NodeRunStorage(dir, { console: null, wandb: false });
    await expect(
      runTraining({
        settings: await settingsFor(dir),
        backend: noBackend,
        storage,
        loadPolicy: noLoader,
        say: () => {},
      }),
    ).rejects.toThrow(
      /up to step 12 but no usable checkpoint \(the next was due at step 10\).*resume=false with outDir=<new folder>/,
    );
    expect(readFileSync(join(dir, "metrics.jsonl"), "utf8")).toBe(rows);
    // Released on the error.
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  });

  it("refuses rows past the next checkpoint after the one found", async () => {
    const dir = freshFolder();
    writeFileSync(join(dir, "metrics.jsonl"), rowsUpTo(25));
    writeCheckpointFolder(join(dir, "checkpoint"), 10);
    const run = { backend: noBackend, loadPolicy: noLoader, say: () => {} };
    const storage = new NodeRunStorage(dir, { console: null, wandb: false });
    await expect(
      runTraining({ ...run, settings: await settingsFor(dir, "model=m", "steps=40"), storage }),
    ).rejects.toThrow(
      /up to step 25 but its last usable checkpoint is of step 10 \(the next was due at step 20\)/,
    );
  });

  it("starts over, saying so, when a kill came before the first checkpoint was saved", async () => {
    const dir = freshFolder();
    writeFileSync(join(dir, "metrics.jsonl"), rowsUpTo(10));
    const said: string[] = [];
    const storage = new NodeRunStorage(dir, { console: null, wandb: false });
    // It gets past the folder checks to loading the model, which this test refuses.
    await expect(
      runTraining({
        settings: await settingsFor(dir),
        backend: noBackend,
        storage,
        loadPolicy: noLoader,
        say: (line) => said.push(line),
      }),
    ).rejects.toThrow(/no model should be loaded/);
    expect(said.join("\n")).toMatch(
      /no checkpoint yet \(the first is due at step 10\); starting over, the rows logged up to step 10 are redone/,
    );
  });

  it("MemoryRunStorage has no lock and refuses the same way", async () => {
    const storage = new MemoryRunStorage();
    const logs = storage.openLogs(-1);
    for (let step = 0; step <= 11; step++) logs.log(step, { x: 1 });
    await expect(
      runTraining({
        settings: await settingsFor("mem"),
        backend: noBackend,
        storage,
        loadPolicy: noLoader,
        say: () => {},
      }),
    ).rejects.toThrow(/no usable checkpoint/);
  });
});

describe("one run per folder", () => {
  it("a second run refuses at once, naming the holder", () => {
    const dir = freshFolder();
    const first = acquireRunLock(dir);
    const holder = JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8"));
    expect(holder).toMatchObject({ pid: process.pid, host: hostname() });
    expect(() => acquireRunLock(dir)).toThrow(
      new RegExp(`in use by another run \\(pid ${process.pid} on ${hostname()}, since ${holder.since}\\)`),
    );
    first.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    acquireRunLock(dir).release();
  });

  it("takes over the lock of a dead process on this host, saying so", () => {
    const dir = freshFolder();
    const deadPid = Number(
      execFileSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" }),
    );
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: deadPid, host: hostname(), since: "earlier" }));
    const said: string[] = [];
    const lock = acquireRunLock(dir, (line) => said.push(line));
    expect(said.join("\n")).toMatch(new RegExp(`taking over the lock of pid ${deadPid}.*no longer running`));
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).pid).toBe(process.pid);
    lock.release();
  });

  it("refuses a lock held on another host, which it cannot check", () => {
    const dir = freshFolder();
    writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 1, host: "elsewhere", since: "earlier" }));
    expect(() => acquireRunLock(dir)).toThrow(/pid 1 on elsewhere, since earlier/);
  });

  it("runTraining refuses a folder another run holds, before reading it", async () => {
    const dir = freshFolder();
    const other = acquireRunLock(dir);
    const storage = new NodeRunStorage(dir, { console: null, wandb: false });
    await expect(
      runTraining({
        settings: await settingsFor(dir),
        backend: noBackend,
        storage,
        loadPolicy: noLoader,
        say: () => {},
      }),
    ).rejects.toThrow(/in use by another run/);
    // The refused run did not take away the holder's lock.
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
    other.release();
  });
});

describe("clear errors for a bad outDir", () => {
  it("an outDir that is a file", () => {
    const file = join(freshFolder(), "file");
    writeFileSync(file, "");
    expect(() => prepareRunFolder(file)).toThrow(/outDir .*file is a file, not a folder/);
    expect(() => prepareRunFolder(join(file, "run"))).toThrow(
      /a file stands where a folder of its path should be/,
    );
  });
});

describe("eval never writes into a training run's folder", () => {
  it.each([
    ["a checkpoint", (dir: string) => writeCheckpointFolder(join(dir, "checkpoint"), 1)],
    ["a swap's .previous", (dir: string) => writeCheckpointFolder(join(dir, "checkpoint.previous"), 1)],
    [
      "a training config.json",
      (dir: string) => writeFileSync(join(dir, "config.json"), JSON.stringify({ settings: {}, sources: {} })),
    ],
  ])("refuses a folder with %s before writing anything", async (_, makeRun) => {
    const dir = freshFolder();
    writeFileSync(join(dir, "metrics.jsonl"), `${JSON.stringify({ step: 0, wall_time: 0, metrics: {} })}\n`);
    makeRun(dir);
    const before = readdirSync(dir).sort();
    const error = await runEval({ ...(await settingsFor(dir)), model: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues[0]!.field).toBe("outDir");
    expect((error as Error).message).toMatch(/holds a training run/);
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});

describe("non-finite losses", () => {
  it("names the loss metrics that are NaN or infinite", () => {
    expect(
      nonFiniteLosses({
        "actor/pg_loss": Number.NaN,
        "critic/vf_loss": 1,
        "actor/kl": Number.NaN,
        "actor/loss": Infinity,
      }),
    ).toEqual(["actor/pg_loss", "actor/loss"]);
  });
});
