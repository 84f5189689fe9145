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
import {
  buildSweepReport,
  formatSweepMarkdown,
  type SeedRun,
  type SweepSummary,
  summarizeSweep,
} from "../run/sweep.js";
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

/** Refuses `seed` and `seeds` set together by the user: which one was meant? */
export function checkSweepSettings({ settings, sources }: ResolvedSettings): void {
  const userSet = (source: string | undefined) =>
    source !== undefined && (source === "command line" || source.startsWith("file "));
  if (settings.seeds !== null && userSet(sources.seed))
    throw new ConfigError("settings", [
      {
        field: "seeds",
        message: `seeds=${settings.seeds.join(",")} runs those seeds; seed=${settings.seed} is set too (${sources.seed}): keep one of them`,
      },
    ]);
}

/** The logged rows of a seed's folder (none when it has not started). */
function seedRun(outDir: string, seed: number): SeedRun {
  const path = join(seedFolder(outDir, seed), RUN_FILES.metrics);
  if (!existsSync(path)) return { seed, history: [] };
  return { seed, history: parseMetricsJsonl(readFileSync(path, "utf8")) };
}

/** Rewrites the sweep's summary files from the seed folders as they are now. */
export function writeSweepSummary(resolved: ResolvedSettings, title: string): SweepSummary {
  const { outDir, seeds, validation } = resolved.settings;
  const runs = (seeds ?? []).map((seed) => seedRun(outDir, seed));
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
    say(`\n— seed ${seed} (${i + 1} of ${seeds.length}) in ${seedFolder(resolved.settings.outDir, seed)}\n`);
    await trainSeed(seedRunSettings(resolved, seed));
    summary = writeSweepSummary(resolved, title);
  }
  say(
    `\n${formatSweepMarkdown(summary)}\nsweep summary: ${join(resolved.settings.outDir, SWEEP_FILES.table)}`,
  );
  return summary;
}
