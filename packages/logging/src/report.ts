/**
 * A self-contained HTML run report (one file; inline CSS, JS and SVG; loads nothing from the network):
 * training curves, a trajectory viewer and automatic case studies. Browser-safe: it builds a string.
 * All model output is HTML-escaped and state SVGs are embedded as <img> data URLs, so nothing a model
 * writes can run in the page.
 */
import { describeDrop, validationDrops } from "./collapse.js";
import type { MetricsRow } from "./metrics.js";
import {
  type Contradiction,
  type EchoGroup,
  extremes,
  findContradictions,
  findEchoGroups,
  findInvalidFormats,
  groupSimilarities,
  seedsAcrossSteps,
} from "./report/case-studies.js";
import { escapeHtml, formatNumber, svgImage } from "./report/html.js";
import { lineChart, type Series } from "./report/line-chart.js";
import type { TrajectoryRecord } from "./trajectory.js";

export interface ReportOptions {
  title?: string;
  /** Trajectories shown in the viewer per (step, split); the case studies still see all (default 16). */
  viewerPerStep?: number;
  /** Mean in-group similarity at which a group counts as an echo-trap template (default 0.8). */
  echoThreshold?: number;
  /**
   * Validation episodes per env: with it the report flags every validation whose success fell below
   * the start by more than two standard errors (see validationDrops).
   */
  validationEpisodes?: number;
}

/** A chart of the report: its title and which metric keys become series. */
interface ChartSpec {
  id: string;
  title: string;
  keys: (allKeys: string[]) => string[];
}

const exact =
  (...names: string[]) =>
  (all: string[]) =>
    names.filter((n) => all.includes(n));

/** The curves RAGEN users look at, in reading order; a chart with no logged series is left out. */
export const CHARTS: readonly ChartSpec[] = [
  { id: "actor-loss", title: "Actor loss", keys: exact("actor/pg_loss", "actor/kl_loss", "actor/apo_loss") },
  { id: "critic-loss", title: "Critic loss", keys: exact("critic/vf_loss") },
  { id: "reward", title: "Reward (mean and max)", keys: exact("critic/score/mean", "critic/score/max") },
  {
    id: "success",
    title: "Success per env tag",
    keys: (all) => all.filter((k) => /^(train|val-env)\/[^/]+\/success$/.test(k)).sort(),
  },
  // The collapse signals: an env whose answers stop fitting its format, and the policy leaving its start.
  {
    id: "action-validity",
    title: "Action validity per env tag",
    keys: (all) => all.filter((k) => /^(train|val-env)\/[^/]+\/action_is_valid$/.test(k)).sort(),
  },
  {
    id: "format-penalty",
    title: "Format-penalty rate per env tag",
    keys: (all) => all.filter((k) => /^(train|val-env)\/[^/]+\/format_penalty_rate$/.test(k)).sort(),
  },
  { id: "kl", title: "KL to the reference", keys: exact("actor/kl_loss") },
  { id: "entropy", title: "Entropy", keys: exact("actor/entropy") },
  {
    id: "in-group-std",
    title: "In-group reward std",
    keys: exact("rollout/in_group_std", "rollout/chosen_in_group_std"),
  },
  { id: "grad-norm", title: "Gradient norm", keys: exact("actor/grad_norm", "critic/grad_norm") },
];

function seriesOf(rows: readonly MetricsRow[], key: string): Series {
  return {
    label: key,
    points: rows.filter((r) => key in r.metrics).map((r) => ({ x: r.step, y: r.metrics[key]! })),
  };
}

function curvesSection(rows: readonly MetricsRow[], trajectories: readonly TrajectoryRecord[]): string {
  const allKeys = [...new Set(rows.flatMap((r) => Object.keys(r.metrics)))];
  const charts = CHARTS.map((spec) => {
    const keys = spec.keys(allKeys);
    if (keys.length === 0) return "";
    return `<figure class="curve" id="chart-${escapeHtml(spec.id)}">${lineChart(
      spec.title,
      keys.map((k) => seriesOf(rows, k)),
    )}</figure>`;
  });
  // Template similarity per step comes from the trajectories themselves: the echo trap shows here first.
  const similarity = groupSimilarities(trajectories.filter((t) => t.split === "train"));
  if (similarity.length > 0) {
    const bySteps = new Map<number, number[]>();
    for (const g of similarity) bySteps.set(g.step, [...(bySteps.get(g.step) ?? []), g.similarity]);
    const points = [...bySteps].map(([x, v]) => ({ x, y: v.reduce((a, b) => a + b, 0) / v.length }));
    charts.push(
      `<figure class="curve" id="chart-template-similarity">${lineChart("In-group response similarity (Jaccard)", [{ label: "mean in-group similarity", points }])}</figure>`,
    );
  }
  const body = charts.join("") || '<p class="empty">No metrics logged.</p>';
  return `<section id="curves"><h2>Training curves</h2><div class="charts">${body}</div></section>`;
}

function collapseSection(rows: readonly MetricsRow[], episodes: number | undefined): string {
  if (episodes === undefined) return "";
  const drops = validationDrops(rows, episodes);
  const body = drops.length
    ? `<ul>${drops.map((d) => `<li class="collapse-flag" data-env="${escapeHtml(d.envTag)}" data-step="${escapeHtml(d.step)}"><span class="badge bad">collapse</span> ${escapeHtml(describeDrop(d))}</li>`).join("")}</ul>`
    : `<p class="muted">No validation fell more than two standard errors below its start (${escapeHtml(episodes)} episodes per env).</p>`;
  return `<section id="collapse-signals"><h2>Collapse signals</h2>${body}</section>`;
}

function trajectoryTitle(t: TrajectoryRecord): string {
  return `step ${t.step} · ${t.split} · ${t.envTag} · seed ${t.seed} · group ${t.group} · reward ${formatNumber(t.totalReward)} · ${t.success ? "success" : "fail"}`;
}

function turnHtml(t: TrajectoryRecord, index: number): string {
  const turn = t.turns[index]!;
  const state = turn.stateSvg
    ? svgImage(turn.stateSvg, `state before turn ${index + 1}`)
    : `<pre class="state-text">${escapeHtml(turn.stateText)}</pre>`;
  return `<div class="turn${turn.valid ? "" : " invalid"}">
<div class="turn-state">${state}</div>
<div class="turn-text"><div class="turn-head">Turn ${index + 1} · reward ${escapeHtml(formatNumber(turn.reward))}${turn.valid ? "" : ' · <span class="badge bad">invalid format</span>'}</div>
<div class="think"><b>think</b> ${escapeHtml(turn.think)}</div>
<div class="answer"><b>answer</b> ${escapeHtml(turn.answer)}</div>
<div class="actions"><b>actions</b> ${turn.actions.map((a) => `<code>${escapeHtml(a)}</code>`).join(" ") || "<i>none</i>"}</div></div>
</div>`;
}

function trajectoryHtml(t: TrajectoryRecord, open = false, note = ""): string {
  const attrs = `data-step="${escapeHtml(t.step)}" data-split="${escapeHtml(t.split)}" data-env="${escapeHtml(t.envTag)}" data-seed="${escapeHtml(t.seed)}"`;
  return `<details class="trajectory${t.success ? " ok" : ""}" ${attrs}${open ? " open" : ""}><summary>${escapeHtml(trajectoryTitle(t))}${note ? ` — ${escapeHtml(note)}` : ""}</summary>${t.turns.map((_, i) => turnHtml(t, i)).join("")}</details>`;
}

function viewerSection(trajectories: readonly TrajectoryRecord[], perStep: number): string {
  const shown: TrajectoryRecord[] = [];
  const counts = new Map<string, number>();
  for (const t of trajectories) {
    const key = `${t.step}/${t.split}`;
    const n = counts.get(key) ?? 0;
    if (n < perStep) shown.push(t);
    counts.set(key, n + 1);
  }
  const envs = [...new Set(trajectories.map((t) => t.envTag))].sort();
  const options = envs.map((e) => `<option value="${escapeHtml(e)}">${escapeHtml(e)}</option>`).join("");
  return `<section id="viewer"><h2>Trajectories</h2>
<div class="filters"><label>env <select id="filter-env"><option value="">all</option>${options}</select></label>
<label>split <select id="filter-split"><option value="">all</option><option>train</option><option>val</option></select></label>
<label>step <input id="filter-step" type="number" min="0" placeholder="any"></label>
<span class="muted">${shown.length} of ${trajectories.length} trajectories (at most ${perStep} per step and split)</span></div>
<div class="trajectory-list">${shown.map((t) => trajectoryHtml(t)).join("") || '<p class="empty">No trajectories logged.</p>'}</div></section>`;
}

function caseSection(id: string, title: string, explanation: string, items: string[]): string {
  const body = items.length ? items.join("") : '<p class="empty">None found.</p>';
  return `<section class="case-study" id="${escapeHtml(id)}"><h3>${escapeHtml(title)}</h3><p class="muted">${escapeHtml(explanation)}</p>${body}</section>`;
}

function contradictionNote(c: Contradiction): string {
  return `turn ${c.turn + 1}: reasoning settles on "${c.reasoned}", answer takes ${c.actions.join(", ")}`;
}

function echoHtml(g: EchoGroup): string {
  return `<div class="echo-group" data-similarity="${escapeHtml(g.similarity.toFixed(3))}"><h4>step ${escapeHtml(g.step)} · ${escapeHtml(g.split)} · ${escapeHtml(g.envTag)} · group ${escapeHtml(g.group)}: ${g.members.length} responses, mean similarity ${g.similarity.toFixed(2)}</h4>${g.members
    .slice(0, 3)
    .map((t) => trajectoryHtml(t))
    .join("")}</div>`;
}

function seedsSection(trajectories: readonly TrajectoryRecord[]): string {
  const rows = seedsAcrossSteps(trajectories);
  const body = rows.map(
    (r) =>
      `<div class="seed-row" data-env="${escapeHtml(r.envTag)}" data-seed="${escapeHtml(r.seed)}"><h4>${escapeHtml(r.envTag)} · seed ${escapeHtml(r.seed)}</h4><div class="side-by-side">${r.byStep
        .map(
          (t) =>
            `<div class="seed-cell" data-step="${escapeHtml(t.step)}"><div class="turn-head">step ${escapeHtml(t.step)} · reward ${escapeHtml(formatNumber(t.totalReward))} · ${t.success ? "success" : "fail"}</div>${t.turns
              .map(
                (turn, i) =>
                  `<div class="mini-turn">${turn.stateSvg ? svgImage(turn.stateSvg, `step ${t.step} turn ${i + 1}`, "state small") : ""}<div>${turn.actions.map((a) => `<code>${escapeHtml(a)}</code>`).join(" ") || "<i>none</i>"} <span class="muted">(${escapeHtml(formatNumber(turn.reward))})</span></div><div class="think small">${escapeHtml(turn.think)}</div></div>`,
              )
              .join("")}</div>`,
        )
        .join("")}</div></div>`,
  );
  return `<section id="seeds-across-steps"><h2>Same validation seeds across training</h2>${body.join("") || '<p class="empty">No validation seed was logged at two or more steps.</p>'}</section>`;
}

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:16px;color:#222}
h1{font-size:22px}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
.charts{display:flex;flex-wrap:wrap;gap:8px}.curve{margin:0;border:1px solid #eee;border-radius:6px;background:#fff}
.chart text{font-size:11px;fill:#444}.chart .chart-title{font-size:13px;font-weight:600;fill:#222}
.chart .grid{stroke:#eee}.chart .frame,.chart .tick{stroke:#888}
details.trajectory{border:1px solid #ddd;border-left:4px solid #d62728;border-radius:4px;margin:6px 0;padding:4px 8px}
details.trajectory.ok{border-left-color:#2ca02c}summary{cursor:pointer;font-weight:500}
.turn{display:flex;gap:12px;padding:8px 0;border-top:1px dashed #eee}.turn.invalid{background:#fff4f4}
img.state{width:160px;height:auto;flex:none;border:1px solid #eee}img.state.small{width:96px}
.state-text{font-size:12px;margin:0;background:#f7f7f7;padding:4px}
.think,.answer{white-space:pre-wrap;word-break:break-word}.think{color:#555}.small{font-size:12px}
.turn-head{font-weight:600}.muted{color:#777}.badge.bad{color:#fff;background:#d62728;border-radius:3px;padding:0 4px}
.filters{display:flex;gap:12px;align-items:center;margin:8px 0}
.side-by-side{display:flex;gap:8px;overflow-x:auto}.seed-cell{border:1px solid #ddd;border-radius:4px;padding:6px;min-width:200px;max-width:260px}
.mini-turn{margin:4px 0}code{background:#f0f0f0;padding:0 3px;border-radius:3px}.empty{color:#999;font-style:italic}`;

// Only filters the viewer; reads data attributes the report itself wrote, never model text.
const SCRIPT = `(function(){var env=document.getElementById("filter-env"),split=document.getElementById("filter-split"),step=document.getElementById("filter-step");
function apply(){document.querySelectorAll("#viewer details.trajectory").forEach(function(d){var ok=(!env.value||d.dataset.env===env.value)&&(!split.value||d.dataset.split===split.value)&&(step.value===""||d.dataset.step===step.value);d.style.display=ok?"":"none";});}
[env,split,step].forEach(function(e){e.addEventListener("input",apply);});})();`;

/** The report as one HTML document. */
export function buildReport(
  metrics: readonly MetricsRow[],
  trajectories: readonly TrajectoryRecord[],
  options: ReportOptions = {},
): string {
  const title = options.title ?? "RAGEN run report";
  const { highest, lowest } = extremes(trajectories);
  const contradictions = findContradictions(trajectories);
  const invalid = findInvalidFormats(trajectories);
  // The echo trap is a property of training groups (StarPO samples a group per prompt); val groups are not.
  const echoes = findEchoGroups(
    trajectories.filter((t) => t.split === "train"),
    options.echoThreshold ?? 0.8,
  );
  const lastStep = metrics.at(-1)?.step;
  const cases = [
    caseSection(
      "case-highest",
      "Highest reward",
      "The best-scoring trajectories of the run.",
      highest.map((t) => trajectoryHtml(t)),
    ),
    caseSection(
      "case-lowest",
      "Lowest reward",
      "The worst-scoring trajectories of the run.",
      lowest.map((t) => trajectoryHtml(t)),
    ),
    caseSection(
      "case-contradictions",
      "Reasoning that contradicts the action",
      "The last action the <think> text names differs from the action taken (heuristic).",
      contradictions.slice(0, 10).map((c) => trajectoryHtml(c.trajectory, false, contradictionNote(c))),
    ),
    caseSection(
      "case-invalid",
      "Invalid formats",
      `${invalid.length} trajectories have turns that broke the <think>/<answer> format.`,
      invalid
        .slice(0, 10)
        .map((x) => trajectoryHtml(x.trajectory, false, `${x.invalidTurns} invalid turn(s)`)),
    ),
    caseSection(
      "case-echo",
      "Repeated templates (echo trap)",
      `Groups whose responses are near-identical (mean pairwise token-set Jaccard ≥ ${options.echoThreshold ?? 0.8}); a sign of the collapse StarPO-S guards against.`,
      echoes.slice(0, 10).map(echoHtml),
    ),
  ];
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
<p class="muted">${metrics.length} logged steps${lastStep === undefined ? "" : ` (last step ${lastStep})`} · ${trajectories.length} trajectories</p>
${collapseSection(metrics, options.validationEpisodes)}
${curvesSection(metrics, trajectories)}
<section id="case-studies"><h2>Case studies</h2>${cases.join("\n")}</section>
${seedsSection(trajectories)}
${viewerSection(trajectories, options.viewerPerStep ?? 16)}
<script>${SCRIPT}</script></body></html>
`;
}
