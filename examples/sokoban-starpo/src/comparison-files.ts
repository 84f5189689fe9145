/** The comparison of the arms as CSV, markdown and a self-contained HTML page of overlaid curves. */
import { escapeHtml, lineChart } from "@ragen/logging";
import { type ArmSignals, COLLAPSE_STD, curve, SIGNALS, type StepMetrics } from "./signals.js";

const COLUMNS: [string, (a: ArmSignals) => string][] = [
  ["arm", (a) => a.arm],
  ["collapse step", (a) => (a.collapseStep === null ? "none" : String(a.collapseStep))],
  ...SIGNALS.flatMap(({ key, title }): [string, (a: ArmSignals) => string][] => [
    [`${title} first`, (a) => number(a.signals[key]?.first)],
    [`${title} last`, (a) => number(a.signals[key]?.last)],
    [`${title} min`, (a) => number(a.signals[key]?.min)],
    [`${title} max`, (a) => number(a.signals[key]?.max)],
  ]),
];

function number(x: number | undefined): string {
  return x === undefined || !Number.isFinite(x) ? "-" : Number(x.toPrecision(4)).toString();
}

export function comparisonCsv(arms: readonly ArmSignals[]): string {
  const field = (text: string) => (/[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  const lines = [COLUMNS.map(([name]) => field(name)).join(",")];
  for (const arm of arms) lines.push(COLUMNS.map(([, cell]) => field(cell(arm))).join(","));
  return `${lines.join("\n")}\n`;
}

/** One row per signal (first → last, and the range), one column per arm: easier to read than the CSV. */
export function comparisonMarkdown(arms: readonly ArmSignals[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  const header = ["signal", ...arms.map((a) => a.arm)];
  const rows = [
    ["collapse step", ...arms.map((a) => (a.collapseStep === null ? "none" : String(a.collapseStep)))],
    ...SIGNALS.map(({ key, title }) => [
      title,
      ...arms.map((a) => {
        const s = a.signals[key];
        return s ? `${number(s.first)} → ${number(s.last)} (${number(s.min)}…${number(s.max)})` : "-";
      }),
    ]),
  ];
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

export function comparisonHtml(
  arms: readonly { signals: ArmSignals; rows: readonly StepMetrics[] }[],
): string {
  const charts = SIGNALS.map(({ key, title }) => {
    const series = arms.map((a) => ({ label: a.signals.arm, points: curve(a.rows, key) }));
    return `<figure>${lineChart(title, series)}</figure>`;
  }).join("\n");
  const header = ["signal", ...arms.map((a) => a.signals.arm)];
  const table = comparisonMarkdown(arms.map((a) => a.signals))
    .split("\n")
    .filter((_, i) => i !== 1)
    .map((line, i) => {
      const cells = line.slice(2, -2).split(" | ");
      const tag = i === 0 ? "th" : "td";
      return `<tr>${cells.map((c) => `<${tag}>${escapeHtml(c)}</${tag}>`).join("")}</tr>`;
    })
    .join("\n");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sokoban: ${escapeHtml(header.slice(1).join(" vs "))}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}figure{display:inline-block;margin:0 1em 1em 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}</style></head>
<body><h1>Sokoban: ${escapeHtml(header.slice(1).join(" vs "))}</h1>
<p>RAGEN's collapse signals per training step. The collapse step is the first step from which the mean
in-group reward std stays below ${COLLAPSE_STD} to the end of the run.</p>
<table>
${table}
</table>
${charts}
</body></html>
`;
}
