import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { formatStepSummary, parseMetricsJsonl } from "../src/index.js";
import { RUN_FILES, RunLogger, TrajectoryLog } from "../src/node/index.js";

const dirs: string[] = [];
function runDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ragen-log-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function quietLogger(dir: string, lines: string[] = []) {
  let t = 1_700_000_000_000;
  return new RunLogger(dir, {
    console: { write: (text: string) => lines.push(text) },
    wandb: null,
    now: () => (t += 1500),
  });
}

function readLines(path: string): string[] {
  return readFileSync(path, "utf8").split("\n").filter(Boolean);
}

describe("RunLogger JSONL", () => {
  it("writes one JSON object per step with step and wall time, flushed before log returns", () => {
    const dir = runDir();
    const logger = quietLogger(dir);
    logger.log(0, { "actor/pg_loss": -0.5, "train/FrozenLake/success": 0.25 });
    // Read while the logger is still open: nothing may be buffered.
    expect(readLines(join(dir, RUN_FILES.metrics)).map((l) => JSON.parse(l))).toEqual([
      { step: 0, wall_time: 1_700_000_001.5, "actor/pg_loss": -0.5, "train/FrozenLake/success": 0.25 },
    ]);
    logger.log(1, { "critic/vf_loss": Number.NaN });
    const rows = parseMetricsJsonl(readFileSync(join(dir, RUN_FILES.metrics), "utf8"));
    expect(rows.map((r) => r.step)).toEqual([0, 1]);
    expect(Number.isNaN(rows[1]!.metrics["critic/vf_loss"])).toBe(true);
  });

  it("rejects steps that do not increase and bad metric values, writing nothing", () => {
    const dir = runDir();
    const logger = quietLogger(dir);
    logger.log(3, { a: 1 });
    expect(() => logger.log(3, { a: 2 })).toThrow(/already logged.*last logged step is 3/);
    expect(() => logger.log(4, { step: 2 })).toThrow(/reserved/);
    expect(() => logger.log(4, { a: "x" as unknown as number })).toThrow(/must be a number/);
    expect(readLines(join(dir, RUN_FILES.metrics))).toHaveLength(1);
  });

  it("resumes an existing run dir after the last complete step and drops a torn last line", async () => {
    const dir = runDir();
    const first = quietLogger(dir);
    for (let step = 0; step < 3; step++) first.log(step, { "actor/pg_loss": step / 10 });
    await first.close();
    // Simulate a kill in the middle of writing step 3.
    appendFileSync(join(dir, RUN_FILES.metrics), '{"step":3,"wall_time":17000,"actor/pg_lo');

    const resumed = quietLogger(dir);
    expect(resumed.lastStep).toBe(2);
    expect(resumed.history()).toHaveLength(3);
    resumed.log(3, { "actor/pg_loss": 0.3 });
    await resumed.close();
    const lines = readLines(join(dir, RUN_FILES.metrics));
    expect(lines.map((l) => JSON.parse(l).step)).toEqual([0, 1, 2, 3]);
    expect(readFileSync(join(dir, RUN_FILES.csv), "utf8").trim().split("\n")).toHaveLength(5);
  });
});

describe("resuming from a checkpoint", () => {
  it("drops metric rows and trajectory records logged after the checkpoint's step", async () => {
    const dir = runDir();
    const first = quietLogger(dir);
    const trajectories = new TrajectoryLog(dir);
    for (let step = 0; step < 5; step++) {
      first.log(step, { "actor/pg_loss": step });
      trajectories.append({
        step,
        split: "train",
        envTag: "Bandit",
        seed: step,
        group: 0,
        turns: [],
        totalReward: 0,
        success: false,
      });
    }
    await first.close();
    trajectories.close();

    // The run was checkpointed at step 2 and killed after logging steps 3 and 4.
    const resumed = new RunLogger(dir, { console: null, wandb: null, resumeAfterStep: 2 });
    expect(resumed.lastStep).toBe(2);
    resumed.log(3, { "actor/pg_loss": 30 });
    await resumed.close();
    new TrajectoryLog(dir, { resumeAfterStep: 2 }).close();
    expect(readLines(join(dir, RUN_FILES.metrics)).map((l) => JSON.parse(l)["actor/pg_loss"])).toEqual([
      0, 1, 2, 30,
    ]);
    expect(readLines(join(dir, RUN_FILES.csv))).toHaveLength(5);
    expect(readLines(join(dir, RUN_FILES.trajectories)).map((l) => JSON.parse(l).step)).toEqual([0, 1, 2]);
  });
});

describe("RunLogger CSV", () => {
  it("has the union of keys as columns and rewrites the file atomically when a new key appears", () => {
    const dir = runDir();
    const logger = quietLogger(dir);
    logger.log(0, { "actor/pg_loss": 1, "critic/vf_loss": 2 });
    logger.log(1, { "actor/pg_loss": 3, "critic/vf_loss": 4 });
    const csvPath = join(dir, RUN_FILES.csv);
    expect(readLines(csvPath)[0]).toBe("step,wall_time,actor/pg_loss,critic/vf_loss");
    logger.log(2, { "actor/pg_loss": 5, "timing_s/gen": 0.5 });
    expect(readLines(csvPath)).toEqual([
      "step,wall_time,actor/pg_loss,critic/vf_loss,timing_s/gen",
      "0,1700000001.5,1,2,",
      "1,1700000003,3,4,",
      "2,1700000004.5,5,,0.5",
    ]);
  });

  it("quotes metric names that need it", () => {
    const dir = runDir();
    const logger = quietLogger(dir);
    logger.log(0, { 'odd,"name"': 1 });
    expect(readLines(join(dir, RUN_FILES.csv))[0]).toBe('step,wall_time,"odd,""name"""');
  });
});

describe("console summary", () => {
  it("prints chosen key metrics, one aligned line per step, every env tag included", () => {
    const lines: string[] = [];
    const logger = quietLogger(runDir(), lines);
    logger.log(1, {
      "actor/pg_loss": -0.01234,
      "train/FrozenLake/success": 0.25,
      "train/Bandit/success": 1,
      "critic/vf_clipfrac": 0.3,
    });
    logger.log(12, {
      "actor/pg_loss": 12.5,
      "train/FrozenLake/success": 0.5,
      "train/Bandit/success": 0.75,
    });
    expect(lines[0]).toBe(
      "step     1 | Bandit/success    1.0000 | FrozenLake/success    0.2500 | pg_loss   -0.0123\n",
    );
    // Same columns at the same positions on the next line.
    expect(lines[1]!.indexOf("pg_loss")).toBe(lines[0]!.indexOf("pg_loss"));
    expect(lines[1]!.length).toBe(lines[0]!.length);
  });

  it("accepts custom summary keys", () => {
    expect(formatStepSummary(7, { "timing_s/gen": 1.5, x: 2 }, ["timing_s/gen"])).toBe(
      "step     7 | gen_s    1.5000",
    );
  });
});
