/**
 * A seed sweep in Node: the seeds of `seeds=...` run one after another, each a normal run in
 * `<outDir>/seed-<N>` (so each resumes on its own), and after every seed the summary across the seeds
 * so far is rewritten in `<outDir>`: sweep.json, sweep.md and report.html.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { parseMetricsJsonl } from "@ragen/logging";
import { RUN_FILES, writeFileAtomic } from "@ragen/logging/node";
import type { TrainingSummary } from "../run/summary.js";
import {
  buildSweepReport,
  formatSweepMarkdown,
  type SeedRun,
  type SweepSummary,
  summarizeSweep,
} from "../run/sweep.js";
import { RUN_DOCUMENTS } from "../run/train.js";
import type { TrainingSettings } from "../settings/fields.js";
import type { ResolvedSettings } from "../settings/resolve.js";

export const SWEEP_FILES = { summary: "sweep.json", table: "sweep.md", report: "report.html" } as const;

/** The folder of one seed of a sweep. */
export function seedFolder(outDir: string, seed: number): string {
  return join(outDir, `seed-${seed}`);
}

/** The settings of one seed's run: its seed, its folder, and no sweep of its own. */
export function seedRunSettings(resolved: ResolvedSettings, seed: number): ResolvedSettings {
  const { settings, sources } = resolved;
  return {
    ...resolved,
    settings: { ...settings, seed, seeds: null, outDir: seedFolder(settings.outDir, seed) },
    sources: { ...sources, seed: sources.seeds ?? "default", outDir: sources.outDir ?? "default" },
  };
}

/**
 * How much a setting's source outranks the others: the command line over a file over an experiment's
 * layers over the profiles and defaults (the order resolveSettings lays them in).
 */
function sourceRank(source: string | undefined): number {
  if (source === undefined || source === "default" || source.startsWith("profile ")) return 0;
  if (source === "command line") return 3;
  if (source.startsWith("file ")) return 2;
  return 1;
}

/**
 * Refuses `seed` and `seeds` given together at the same level (which one was meant?). A `seeds` from a
 * later layer replaces an earlier `seed`: `seeds=0,1,2` on the command line sweeps a config file that
 * names `seed: 0`, as any command-line value wins over the file's.
 */
export function checkSweepSettings({ settings, sources }: ResolvedSettings): void {
  if (settings.seeds === null) return;
  const seedRank = sourceRank(sources.seed);
  if (seedRank > 0 && seedRank >= sourceRank(sources.seeds))
    throw new ConfigError("settings", [
      {
        field: "seeds",
        message: `seeds=${settings.seeds.join(",")} (${sources.seeds}) runs those seeds; seed=${settings.seed} is set too (${sources.seed}): keep one of them`,
      },
    ]);
}

/**
 * The logged rows of a seed's run folder (none when it has not started), and whether its run finished: its
 * summary.json is written at the end, and covers every logged step (a run extended with more steps and
 * killed midway keeps the older summary).
 */
export function readSeedRun(folder: string, seed: number): SeedRun {
  const metricsPath = join(folder, RUN_FILES.metrics);
  if (!existsSync(metricsPath)) return { seed, history: [], finished: false };
  const history = parseMetricsJsonl(readFileSync(metricsPath, "utf8"));
  const summaryPath = join(folder, RUN_DOCUMENTS.summary);
  const summarisedSteps = existsSync(summaryPath)
    ? (JSON.parse(readFileSync(summaryPath, "utf8")) as Partial<TrainingSummary>).steps
    : undefined;
  return {
    seed,
    history,
    finished: summarisedSteps !== undefined && coversEveryRow(summarisedSteps, history),
  };
}

/** Whether a summary of `steps` steps was written after every logged row (it is written at the end). */
const coversEveryRow = (steps: number, history: readonly { step: number }[]) =>
  steps >= (history.at(-1)?.step ?? 0);

/**
 * The summary of the finished run in `folder`, when it is complete for `settings` (its steps done, or its
 * token budget spent, on the same model); otherwise undefined. A sweep leaves such a run as it is without
 * loading anything, so the checkpoint of a finished seed may be deleted to save disk: without this, a
 * sweep run again would stop at that seed (its metrics cannot be resumed without a checkpoint).
 */
export function completedRun(folder: string, settings: TrainingSettings): TrainingSummary | undefined {
  const summaryPath = join(folder, RUN_DOCUMENTS.summary);
  const metricsPath = join(folder, RUN_FILES.metrics);
  if (!existsSync(summaryPath) || !existsSync(metricsPath)) return undefined;
  let summary: TrainingSummary;
  try {
    summary = JSON.parse(readFileSync(summaryPath, "utf8")) as TrainingSummary;
  } catch {
    return undefined; // a damaged summary: the run itself decides (resume, or say what is wrong)
  }
  const history = parseMetricsJsonl(readFileSync(metricsPath, "utf8"));
  if (!coversEveryRow(summary.steps, history) || summary.model !== settings.model) return undefined;
  const budget = settings.train.tokenBudget;
  const done = summary.steps >= settings.steps || (budget > 0 && summary.generatedTokens >= budget);
  return done ? summary : undefined;
}

/** What a sweep says of a run it leaves as it is. */
export function finishedEarlier(folder: string, summary: TrainingSummary): string {
  return `${folder} finished earlier (${summary.steps} steps, ${summary.generatedTokens} generated tokens); left as it is`;
}

/** Rewrites the sweep's summary files from the seed folders as they are now. */
export function writeSweepSummary(resolved: ResolvedSettings, title: string): SweepSummary {
  const { outDir, seeds, validation } = resolved.settings;
  const runs = (seeds ?? []).map((seed) => readSeedRun(seedFolder(outDir, seed), seed));
  const summary = summarizeSweep(runs, validation.groupsPerEnv);
  mkdirSync(outDir, { recursive: true });
  writeFileAtomic(join(outDir, SWEEP_FILES.summary), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileAtomic(join(outDir, SWEEP_FILES.table), formatSweepMarkdown(summary));
  writeFileAtomic(join(outDir, SWEEP_FILES.report), buildSweepReport(summary, runs, title));
  return summary;
}

/**
 * Runs every seed of `settings.seeds` with `trainSeed` (a finished seed is left as it is, an interrupted
 * one resumes), rewriting the summary after each; returns the summary over all of them.
 */
export async function runSeedSweep(
  resolved: ResolvedSettings,
  trainSeed: (seedSettings: ResolvedSettings) => Promise<unknown>,
  options: { title?: string; say?: (line: string) => void } = {},
): Promise<SweepSummary> {
  checkSweepSettings(resolved);
  const seeds = resolved.settings.seeds;
  if (!seeds) throw new Error("runSeedSweep: the settings name no seeds");
  const say = options.say ?? ((line: string) => console.log(line));
  const title = options.title ?? `Seed sweep — ${resolved.settings.model}`;
  let summary = writeSweepSummary(resolved, title);
  for (const [i, seed] of seeds.entries()) {
    const seedSettings = seedRunSettings(resolved, seed);
    const folder = seedSettings.settings.outDir;
    say(`\n— seed ${seed} (${i + 1} of ${seeds.length}) in ${folder}\n`);
    const finished = completedRun(folder, seedSettings.settings);
    if (finished) say(finishedEarlier(folder, finished));
    else await trainSeed(seedSettings);
    summary = writeSweepSummary(resolved, title);
  }
  say(
    `\n${formatSweepMarkdown(summary)}\nsweep summary: ${join(resolved.settings.outDir, SWEEP_FILES.table)}`,
  );
  return summary;
}
