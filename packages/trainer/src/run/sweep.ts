/**
 * A seed sweep's summary: per env, each seed's validation success at the start, at the end and at its
 * lowest, the mean ± standard error across seeds, the collapse flags, and a report with every seed's
 * curve and the mean ± SE band. Pure functions over the seeds' logged rows (browser-safe).
 */
import {
  escapeHtml,
  lineChart,
  markdownTable,
  type Series,
  successStandardError,
  type ValidationDrop,
  validationCurves,
  validationDrops,
} from "@ragen/logging";
import type { MetricsHistoryRow } from "./storage.js";

/** One seed's run as the sweep reads it. */
export interface SeedRun {
  seed: number;
  /** Its logged rows so far (a seed still to run has none). */
  history: readonly MetricsHistoryRow[];
  /** Whether its run has ended; an interrupted or running seed's last validation is not its end. */
  finished: boolean;
}

export interface SeedResult {
  seed: number;
  /** Whether the run has ended (otherwise `end` is its latest validation so far). */
  finished: boolean;
  /** Validation success at the first and the last validation, and the lowest in between. */
  start: number;
  end: number;
  lowest: number;
  /** The step of the last validation. */
  endStep: number;
  /** Validations more than two standard errors below the start. */
  drops: ValidationDrop[];
}

/** Mean and standard error (sample sd / sqrt(n)) of per-seed values; the error is NaN for one seed. */
export interface MeanWithError {
  mean: number;
  standardError: number;
}

export interface SweepEnvSummary {
  envTag: string;
  seeds: SeedResult[];
  /** Across every seed with a validation. */
  start: MeanWithError;
  /** Across the finished seeds only, so that every end is a run's last validation. */
  end: MeanWithError;
  /** Finished seeds, those of them that ended above their start, and seeds (any) with a validation more than 2 SE below it. */
  finished: number;
  improved: number;
  collapsed: number;
}

export interface SweepSummary {
  /** Validation episodes per env per validation. */
  episodes: number;
  /** The seeds with at least one validation, in sweep order. */
  seeds: number[];
  envs: SweepEnvSummary[];
}

export function meanWithError(values: readonly number[]): MeanWithError {
  const n = values.length;
  const mean = n === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, standardError: Number.NaN };
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1);
  return { mean, standardError: Math.sqrt(variance / n) };
}

export function summarizeSweep(runs: readonly SeedRun[], episodes: number): SweepSummary {
  const results = new Map<string, SeedResult[]>();
  const seeds: number[] = [];
  for (const run of runs) {
    const curves = validationCurves(run.history);
    if (curves.size === 0) continue;
    seeds.push(run.seed);
    const drops = validationDrops(run.history, episodes);
    for (const [envTag, curve] of curves) {
      const values = curve.map(([, v]) => v);
      results.set(envTag, [
        ...(results.get(envTag) ?? []),
        {
          seed: run.seed,
          finished: run.finished,
          start: values[0]!,
          end: values.at(-1)!,
          lowest: values.reduce((a, b) => Math.min(a, b)),
          endStep: curve.at(-1)![0],
          drops: drops.filter((d) => d.envTag === envTag),
        },
      ]);
    }
  }
  const envs = [...results].map(([envTag, perSeed]) => {
    const ended = perSeed.filter((r) => r.finished);
    return {
      envTag,
      seeds: perSeed,
      start: meanWithError(perSeed.map((r) => r.start)),
      end: meanWithError(ended.map((r) => r.end)),
      finished: ended.length,
      improved: ended.filter((r) => r.end > r.start).length,
      collapsed: perSeed.filter((r) => r.drops.length > 0).length,
    };
  });
  return { episodes, seeds, envs };
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "–");
const withError = ({ mean, standardError }: MeanWithError) =>
  Number.isFinite(standardError) ? `${pct(mean)} ± ${pct(standardError)}` : pct(mean);
/** A seed's end, or where an unfinished one has got to. */
const endCell = (r: SeedResult, episodes: number) =>
  r.finished
    ? `${pct(r.end)} ± ${pct(successStandardError(r.end, episodes))}`
    : `${pct(r.end)} at step ${r.endStep} (unfinished)`;
const improvedLine = (env: SweepEnvSummary) =>
  `${env.improved} of ${env.finished} finished seeds end above their start`;

/** The per-seed table and the across-seed line of every env, in markdown. */
export function formatSweepMarkdown(summary: SweepSummary): string {
  return `# Seed sweep\n\nValidation success on ${summary.episodes} episodes per env, seeds ${summary.seeds.join(", ")}. The end of each seed carries its binomial standard error; the mean carries the standard error across seeds, the end's over the finished seeds only.\n\n${envSections(summary)}\n`;
}

/** One section per env: its per-seed table and the across-seed line. */
function envSections(summary: SweepSummary): string {
  const sections = summary.envs.map((env) => {
    const rows = env.seeds.map((r) => [
      String(r.seed),
      pct(r.start),
      endCell(r, summary.episodes),
      pct(r.lowest),
      r.drops.length ? `yes (step ${r.drops.map((d) => d.step).join(", ")})` : "no",
    ]);
    rows.push([
      "**mean ± SE**",
      `**${withError(env.start)}**`,
      `**${withError(env.end)}**`,
      "",
      improvedLine(env),
    ]);
    return `### ${env.envTag}\n\n${markdownTable(["seed", "start", "end", "lowest", "fell > 2 SE below start"], rows)}`;
  });
  return sections.join("\n\n");
}

/** The combined report: per env, every seed's validation curve and the mean ± SE band, and the tables. */
export function buildSweepReport(summary: SweepSummary, runs: readonly SeedRun[], title: string): string {
  const charts = summary.envs.map((env) => {
    const curves = runs.map((run) => ({
      seed: run.seed,
      curve: validationCurves(run.history).get(env.envTag),
    }));
    const series: Series[] = curves
      .filter((c) => c.curve)
      .map(({ seed, curve }) => ({ label: `seed ${seed}`, points: curve!.map(([x, y]) => ({ x, y })) }));
    const steps = [...new Set(curves.flatMap((c) => c.curve?.map(([x]) => x) ?? []))].sort((a, b) => a - b);
    const atStep = steps.map((step) => ({
      step,
      stats: meanWithError(
        curves.flatMap((c) => c.curve?.filter(([x]) => x === step).map(([, y]) => y) ?? []),
      ),
    }));
    series.push({
      label: "mean ± SE",
      points: atStep.map(({ step, stats }) => ({ x: step, y: stats.mean })),
      band: atStep
        .filter(({ stats }) => Number.isFinite(stats.standardError))
        .map(({ step, stats }) => ({
          x: step,
          low: stats.mean - stats.standardError,
          high: stats.mean + stats.standardError,
        })),
    });
    return `<figure class="curve" id="sweep-${escapeHtml(env.envTag)}">${lineChart(`${env.envTag}: validation success`, series)}</figure>`;
  });
  const tables = summary.envs.map(
    (env) =>
      `<h3>${escapeHtml(env.envTag)}</h3><table><thead><tr><th>seed</th><th>start</th><th>end</th><th>lowest</th><th>fell &gt; 2 SE below start</th></tr></thead><tbody>${env.seeds
        .map(
          (r) =>
            `<tr data-seed="${escapeHtml(r.seed)}"${r.drops.length ? ' class="collapsed"' : ""}><td>${escapeHtml(r.seed)}</td><td>${pct(r.start)}</td><td>${escapeHtml(endCell(r, summary.episodes))}</td><td>${pct(r.lowest)}</td><td>${r.drops.length ? `<span class="badge bad">collapse</span> step ${r.drops.map((d) => escapeHtml(d.step)).join(", ")}` : "no"}</td></tr>`,
        )
        .join(
          "",
        )}<tr class="mean"><td>mean ± SE</td><td>${withError(env.start)}</td><td>${withError(env.end)}</td><td></td><td>${improvedLine(env)}</td></tr></tbody></table>`,
  );
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:16px;color:#222}
.charts{display:flex;flex-wrap:wrap;gap:8px}.curve{margin:0;border:1px solid #eee;border-radius:6px}
.chart text{font-size:11px;fill:#444}.chart .chart-title{font-size:13px;font-weight:600}.chart .grid{stroke:#eee}.chart .frame,.chart .tick{stroke:#888}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}tr.collapsed{background:#fff4f4}
.badge.bad{color:#fff;background:#d62728;border-radius:3px;padding:0 4px}.muted{color:#777}
</style></head><body><h1>${escapeHtml(title)}</h1>
<p class="muted">Seeds ${summary.seeds.map((s) => escapeHtml(s)).join(", ")}; validation on ${escapeHtml(summary.episodes)} episodes per env. The band is the mean ± the standard error across seeds.</p>
<section id="sweep-curves"><div class="charts">${charts.join("")}</div></section>
<section id="sweep-tables">${tables.join("")}</section></body></html>
`;
}

/**
 * An arm experiment's sweep in markdown: one row per arm and env (start and end mean ± SE across seeds,
 * how many seeds ended above their start, how many fell more than 2 SE below it), then every arm's
 * per-seed tables.
 */
export function formatArmSweepMarkdown(arms: readonly { arm: string; summary: SweepSummary }[]): string {
  const seeds = [...new Set(arms.flatMap(({ summary }) => summary.seeds))];
  if (seeds.length === 0) return "# Seed sweep of the arms\n\nNo seed has validated yet.\n";
  const rows = arms.flatMap(({ arm, summary }) =>
    summary.envs.map((env) => [
      arm,
      env.envTag,
      withError(env.start),
      withError(env.end),
      `${env.improved} of ${env.finished}`,
      `${env.collapsed} of ${env.seeds.length}`,
    ]),
  );
  const episodes = arms[0]?.summary.episodes ?? 0;
  const table = markdownTable(
    ["arm", "env", "start", "end", "ended above start", "fell > 2 SE below start"],
    rows,
  );
  const details = arms.map(({ arm, summary }) =>
    summary.envs.length === 0
      ? `## ${arm}\n\nNo seed has validated yet.\n`
      : `## ${arm}\n\n${envSections(summary)}\n`,
  );
  return `# Seed sweep of the arms\n\nValidation success on ${episodes} episodes per env, seeds ${seeds.join(", ")}; mean ± standard error across seeds (the end's over the finished seeds only).\n\n${table}\n\n${details.join("\n")}`;
}
