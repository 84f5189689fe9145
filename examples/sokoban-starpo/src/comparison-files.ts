/** The comparison of the arms as CSV, markdown and a self-contained HTML page of overlaid curves. */
import { escapeHtml, lineChart, markdownTable } from "@ragen/logging";
import { csvField } from "@ragen/logging/node";
import { type ArmSignals, COLLAPSE_STD, curve, SIGNALS, type StepMetrics } from "./signals.js";

function number(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? "-" : Number(x.toPrecision(4)).toString();
}

function collapse(arm: ArmSignals): string {
  return arm.collapseStep === null ? "none" : String(arm.collapseStep);
}

/** One row per arm, every number in a column of its own: for spreadsheets and pandas. */
export function comparisonCsv(arms: readonly ArmSignals[]): string {
  const header = [
    "arm",
    "collapse step",
    ...SIGNALS.flatMap(({ title }) => ["first", "last", "min", "max"].map((s) => `${title} ${s}`)),
  ];
  const rows = arms.map((arm) => [
    arm.arm,
    collapse(arm),
    ...SIGNALS.flatMap(({ key }) => {
      const s = arm.signals[key];
      return [s?.first, s?.last, s?.min, s?.max].map(number);
    }),
  ]);
  return `${[header, ...rows].map((cells) => cells.map(csvField).join(",")).join("\n")}\n`;
}

/** Header then one row per signal (first → last, and the range), one column per arm. */
function tableCells(arms: readonly ArmSignals[]): string[][] {
  return [
    ["signal", ...arms.map((a) => a.arm)],
    ["collapse step", ...arms.map(collapse)],
    ...SIGNALS.map(({ key, title }) => [
      title,
      ...arms.map((a) => {
        const s = a.signals[key];
        return s ? `${number(s.first)} → ${number(s.last)} (${number(s.min)}…${number(s.max)})` : "-";
      }),
    ]),
  ];
}

/** The table of `tableCells` in markdown: easier to read than the CSV. */
export function comparisonMarkdown(arms: readonly ArmSignals[]): string {
  const [header, ...rows] = tableCells(arms);
  return markdownTable(header!, rows);
}

export function comparisonHtml(
  arms: readonly { signals: ArmSignals; rows: readonly StepMetrics[] }[],
): string {
  const charts = SIGNALS.map(({ key, title }) => {
    const series = arms.map((a) => ({ label: a.signals.arm, points: curve(a.rows, key) }));
    return `<figure>${lineChart(title, series)}</figure>`;
  }).join("\n");
  const table = tableCells(arms.map((a) => a.signals))
    .map((cells, i) => {
      const tag = i === 0 ? "th" : "td";
      return `<tr>${cells.map((c) => `<${tag}>${escapeHtml(c)}</${tag}>`).join("")}</tr>`;
    })
    .join("\n");
  const title = escapeHtml(`Sokoban: ${arms.map((a) => a.signals.arm).join(" vs ")}`);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}figure{display:inline-block;margin:0 1em 1em 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}</style></head>
<body><h1>${title}</h1>
<p>RAGEN's collapse signals per training step. The collapse step is the first step from which the mean
in-group reward std stays below ${COLLAPSE_STD} to the end of the run.</p>
<table>
${table}
</table>
${charts}
</body></html>
`;
}
