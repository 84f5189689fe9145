/**
 * Experiments that compare arms (StarPO-S against PPO, A*-PO against StarPO): each arm is the Quest job
 * with the experiment's common settings, then the arm's own, then the user's. The user's `outDir` names
 * the experiment's folder and every arm runs in a subfolder of it, so each arm resumes on its own. With
 * `seeds=0,1,2` every seed runs every arm, in `<outDir>/seed-<N>/<arm>`, and the sweep of each arm is
 * summarised across seeds.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { ConfigError } from "@ragen/envs";
import { writeFileAtomic } from "@ragen/logging/node";
import { formatTrainingSummary, type TrainingSummary } from "../run/summary.js";
import { buildSweepReport, formatArmSweepMarkdown, type SweepSummary, summarizeSweep } from "../run/sweep.js";
import type { TrainingSettings } from "../settings/fields.js";
import type { ResolvedSettings } from "../settings/resolve.js";
import { trainInFolder } from "./job.js";
import { resolveRunSettings } from "./run-settings.js";
import {
  checkSweepSettings,
  completedRun,
  finishedEarlier,
  readSeedRun,
  seedFolder,
  seedRunSettings,
} from "./sweep.js";

export interface ArmExperiment {
  /** Settings every arm shares, e.g. the env and the model. */
  common: readonly string[];
  /** Each arm's own settings, by arm name (the name is also its subfolder). */
  arms: Readonly<Record<string, readonly string[]>>;
  /** The experiment's folder unless the user passes outDir=... */
  outDir: string;
}

export interface ArmRun {
  arm: string;
  resolved: ResolvedSettings;
}

/**
 * The configs of the arms to run. `arms=a,b` among the user's args picks some arms (default: all); the
 * returned list follows the experiment's order. `seeds=...` stays in each arm's settings for
 * `runArmExperiment` to sweep. Throws naming the problem on a bad arm or setting.
 */
export async function resolveArmSettings(
  args: readonly string[],
  experiment: ArmExperiment,
  cwd: string,
): Promise<ArmRun[]> {
  const known = Object.keys(experiment.arms);
  let picked = known;
  let outDir = experiment.outDir;
  const rest: string[] = [];
  for (const arg of args) {
    const [key, ...value] = arg.split("=");
    if (key === "arms") {
      picked = value
        .join("=")
        .split(",")
        .map((name) => name.trim());
      const unknown = picked.filter((name) => !known.includes(name));
      if (unknown.length > 0 || picked.length === 0)
        throw new ConfigError("command line", [
          {
            field: "arms",
            message: `unknown arm "${unknown.join(", ")}"`,
            allowed: known,
            source: "command line",
          },
        ]);
    } else if (key === "outDir") outDir = value.join("=");
    else rest.push(arg);
  }
  const runs: ArmRun[] = [];
  for (const arm of known.filter((name) => picked.includes(name))) {
    const resolved = await resolveRunSettings({
      experiment: [
        { source: "experiment", overrides: experiment.common },
        { source: `arm ${arm}`, overrides: [...experiment.arms[arm]!, `outDir=${join(outDir, arm)}`] },
      ],
      overrides: rest,
      cwd,
    });
    checkSweepSettings(resolved);
    runs.push({ arm, resolved });
  }
  return runs;
}

export interface ArmResult {
  arm: string;
  /** The arm's settings as run (paths resolved). */
  settings: TrainingSettings;
  summary: TrainingSummary;
}

/** Runs the arms one after another, each printing its summary table; an arm whose run is complete is left as it is. */
export async function runArms(runs: readonly ArmRun[], title: string): Promise<ArmResult[]> {
  const results: ArmResult[] = [];
  for (const run of runs) {
    const { settings } = run.resolved;
    if (settings.seeds !== null)
      throw new Error(
        `runArms: arm ${run.arm} names seeds=${settings.seeds.join(",")}; runArmExperiment sweeps them`,
      );
    console.log(`\nRAGEN.ts ${title}, arm ${run.arm}: ${settings.envs.join(" + ")} on ${settings.model}\n`);
    const finished = completedRun(settings.outDir, settings);
    if (finished) console.log(finishedEarlier(settings.outDir, finished));
    const summary = finished ?? (await trainInFolder(run.resolved));
    console.log(`\n${formatTrainingSummary(summary)}`);
    results.push({ arm: run.arm, settings, summary });
  }
  return results;
}

/** The folder of an experiment whose arms run in `runs` (the parent of every arm's folder). */
export function experimentFolder(runs: readonly ArmRun[]): string {
  const first = runs[0];
  if (!first) throw new Error("an experiment needs at least one arm");
  return resolve(first.resolved.settings.outDir, "..");
}

/** The arms' runs for one seed of a sweep: that seed, each arm in `<experiment>/seed-<N>/<arm>`. */
export function armSeedRuns(runs: readonly ArmRun[], seed: number): ArmRun[] {
  const folder = seedFolder(experimentFolder(runs), seed);
  return runs.map(({ arm, resolved }) => {
    const seedRun = seedRunSettings(resolved, seed);
    return { arm, resolved: { ...seedRun, settings: { ...seedRun.settings, outDir: join(folder, arm) } } };
  });
}

export const ARM_SWEEP_FILES = { summary: "sweep.json", table: "sweep.md" } as const;

/** The report of one arm's sweep, in the experiment folder. */
export const armSweepReportFile = (arm: string): string => `sweep-${arm}.html`;

export interface ArmSweepSummary {
  seeds: number[];
  arms: { arm: string; summary: SweepSummary }[];
}

/**
 * Rewrites the sweep files of the experiment from its seed folders as they are now: sweep.json and
 * sweep.md (every arm, mean ± SE across seeds, per-seed tables) and one report per arm (every seed's
 * validation curve and the band).
 */
export function writeArmSweepSummary(
  runs: readonly ArmRun[],
  seeds: readonly number[],
  title: string,
): ArmSweepSummary {
  const dir = experimentFolder(runs);
  const arms = runs.map(({ arm, resolved }) => {
    const seedRuns = seeds.map((seed) => readSeedRun(join(seedFolder(dir, seed), arm), seed));
    const summary = summarizeSweep(seedRuns, resolved.settings.validation.groupsPerEnv);
    return { arm, summary, seedRuns };
  });
  mkdirSync(dir, { recursive: true });
  for (const { arm, summary, seedRuns } of arms)
    writeFileAtomic(
      join(dir, armSweepReportFile(arm)),
      buildSweepReport(summary, seedRuns, `${title}: ${arm}`),
    );
  const result = { seeds: [...seeds], arms: arms.map(({ arm, summary }) => ({ arm, summary })) };
  writeFileAtomic(join(dir, ARM_SWEEP_FILES.summary), `${JSON.stringify(result, null, 2)}\n`);
  writeFileAtomic(join(dir, ARM_SWEEP_FILES.table), formatArmSweepMarkdown(result.arms));
  return result;
}

export interface ArmExperimentResult<T> {
  /** What `compare` returned for each run of the arms: one, or one per seed of the sweep. */
  comparisons: { seed: number | null; dir: string; comparison: T }[];
  /** The sweep across seeds, when `seeds=...` was given. */
  sweep?: ArmSweepSummary;
}

/**
 * Runs an experiment: every arm once, or every arm for each seed of `seeds=...` (seed after seed, each
 * resumable; the sweep summary is rewritten after each seed). `compare` gets each run of the arms and
 * the folder holding them, and writes the experiment's own comparison there.
 */
export async function runArmExperiment<T>(
  runs: readonly ArmRun[],
  title: string,
  compare: (results: ArmResult[], dir: string) => T | Promise<T>,
): Promise<ArmExperimentResult<T>> {
  const seeds = runs[0]?.resolved.settings.seeds ?? null;
  if (seeds === null) {
    const dir = experimentFolder(runs);
    const results = await runArms(runs, title);
    return { comparisons: [{ seed: null, dir, comparison: await compare(results, dir) }] };
  }
  const comparisons: ArmExperimentResult<T>["comparisons"] = [];
  let sweep = writeArmSweepSummary(runs, seeds, title);
  for (const [i, seed] of seeds.entries()) {
    const seedRuns = armSeedRuns(runs, seed);
    const dir = experimentFolder(seedRuns);
    console.log(`\n— seed ${seed} (${i + 1} of ${seeds.length}) in ${dir}`);
    const results = await runArms(seedRuns, `${title}, seed ${seed}`);
    comparisons.push({ seed, dir, comparison: await compare(results, dir) });
    sweep = writeArmSweepSummary(runs, seeds, title);
  }
  console.log(
    `\n${formatArmSweepMarkdown(sweep.arms)}\nsweep summary: ${join(experimentFolder(runs), ARM_SWEEP_FILES.table)}`,
  );
  return { comparisons, sweep };
}
