import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  buildReport,
  escapeHtml,
  findContradictions,
  findEchoGroups,
  jaccard,
  lineChart,
  niceTicks,
} from "../src/index.js";
import { RUN_FILES, RunLogger, TrajectoryLog, writeReport } from "../src/node/index.js";
import { SCRIPT_THINK, syntheticMetrics, syntheticTrajectories } from "./fixtures/synthetic-run.js";

/** The inner HTML of the element with `id` (sections do not nest sections of the same tag here). */
function section(html: string, id: string): string {
  const start = html.search(new RegExp(`<(section|figure)[^>]*id="${id}"`));
  expect(start, `element #${id}`).toBeGreaterThanOrEqual(0);
  const tag = html.slice(start + 1, html.indexOf(" ", start));
  return html.slice(start, html.indexOf(`</${tag}>`, start));
}

function seriesNames(fragment: string): string[] {
  return [...fragment.matchAll(/<g class="series" data-series="([^"]+)"/g)].map((m) => m[1]!);
}

const html = buildReport(syntheticMetrics(), syntheticTrajectories(), { title: "Quest run" });

describe("HTML report structure", () => {
  it("is one self-contained document with no network references", () => {
    expect(html.startsWith("<!DOCTYPE html>")).toBe(true);
    expect(html).not.toMatch(/(src|href)="https?:/);
    expect(html).not.toMatch(/<link /);
    expect(html.match(/<script>/g)).toHaveLength(1);
  });

  it("draws every training curve as an SVG line chart with axes and a legend", () => {
    for (const id of [
      "actor-loss",
      "critic-loss",
      "reward",
      "success",
      "entropy",
      "in-group-std",
      "grad-norm",
      "template-similarity",
    ]) {
      const chart = section(html, `chart-${id}`);
      expect(chart, id).toMatch(/<svg class="chart"/);
      expect(chart, id).toMatch(/class="axis y-axis"/);
      expect(chart, id).toMatch(/class="axis x-axis"/);
      expect(chart, id).toMatch(/class="legend-item"/);
    }
    expect(seriesNames(section(html, "chart-actor-loss"))).toEqual(["actor/pg_loss"]);
    expect(seriesNames(section(html, "chart-reward"))).toEqual(["critic/score/mean", "critic/score/max"]);
    // FrozenLake and Bandit share one success chart.
    expect(seriesNames(section(html, "chart-success"))).toEqual([
      "train/Bandit/success",
      "train/FrozenLake/success",
    ]);
    // The NaN grad norm at step 7 splits the line into two polylines instead of plotting a fake value.
    expect(section(html, "chart-grad-norm").match(/<polyline/g)).toHaveLength(2);
  });

  it("lists trajectories in the viewer with state SVG, think, actions and reward per turn", () => {
    const viewer = section(html, "viewer");
    expect(viewer.match(/<details class="trajectory/g)).toHaveLength(syntheticTrajectories().length);
    const first = viewer.slice(viewer.indexOf("<details"), viewer.indexOf("</details>"));
    expect(first).toMatch(/step 0 · train · FrozenLake · seed 11/);
    expect(first.match(/class="turn"/g)).toHaveLength(2);
    expect(first).toMatch(/<img class="state" alt="state before turn 1" src="data:image\/svg\+xml;base64,/);
    expect(first).toMatch(/I should move Down first/);
    expect(first).toMatch(/<code>Right<\/code>/);
    expect(first).toMatch(/Turn 2 · reward 1/);
  });

  it("has every case-study section with the expected cases", () => {
    expect(section(html, "case-highest")).toMatch(/reward 1 · success/);
    expect(section(html, "case-lowest")).toMatch(/reward -0\.100 · fail/);
    expect(section(html, "case-contradictions")).toMatch(
      /reasoning settles on &quot;left&quot;, answer takes Right/,
    );
    expect(section(html, "case-invalid")).toMatch(/1 invalid turn/);
    const echo = section(html, "case-echo");
    expect(echo).toMatch(/Bandit · group 3: 4 responses/);
    expect(echo).not.toMatch(/FrozenLake · group 0/);
  });

  it("shows the same validation seeds at several steps side by side", () => {
    const seeds = section(html, "seeds-across-steps");
    const rows = [...seeds.matchAll(/<div class="seed-row" data-env="FrozenLake" data-seed="(\d+)"/g)].map(
      (m) => m[1],
    );
    expect(rows).toEqual(["100", "101"]);
    const firstRow = seeds.slice(seeds.indexOf('data-seed="100"'), seeds.indexOf('data-seed="101"'));
    expect([...firstRow.matchAll(/class="seed-cell" data-step="(\d+)"/g)].map((m) => m[1])).toEqual([
      "0",
      "10",
      "19",
    ]);
  });

  it("escapes model output so a <script> in a think text is inert", () => {
    expect(html).not.toContain("<script>window.__pwned");
    expect(html).not.toContain('<img src=x onerror="window.__pwned=true">');
    expect(html).toContain(escapeHtml(SCRIPT_THINK));
    // The only <script> element is the report's own filter code.
    expect(html.indexOf("<script>")).toBe(html.lastIndexOf("<script>"));
  });
});

describe("case-study heuristics", () => {
  it("measures template similarity by token-set Jaccard", () => {
    expect(jaccard("go Down now", "now go down")).toBe(1);
    expect(jaccard("a b", "c d")).toBe(0);
    expect(jaccard("a b c", "a b d")).toBeCloseTo(0.5);
  });

  it("flags only groups of near-identical responses", () => {
    const groups = findEchoGroups(syntheticTrajectories().filter((t) => t.split === "train"));
    expect(groups.map((g) => `${g.envTag}/${g.group}@${g.step}`)).toEqual(["Bandit/3@5"]);
  });

  it("takes bandit arm names from the logged actions when checking reasoning against the answer", () => {
    const [t] = syntheticTrajectories().filter((x) => x.envTag === "Bandit");
    const pickedPhoenix = {
      ...t!,
      turns: [{ ...t!.turns[0]!, think: "Phoenix is safe", actions: ["Phoenix"] }],
    };
    const contradicting = { ...t!, turns: [{ ...t!.turns[0]!, think: "Phoenix is safer, choose Phoenix" }] };
    expect(findContradictions([t!, contradicting])).toEqual([]);
    expect(findContradictions([t!, pickedPhoenix, contradicting]).map((c) => c.reasoned)).toEqual([
      "phoenix",
    ]);
  });

  it("picks round axis ticks", () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0, 19)).toEqual([0, 5, 10, 15]);
  });

  it("draws a chart whose values differ only by rounding (a mean one ulp from its max)", () => {
    expect(niceTicks(-0.30000000000000004, -0.3)).toEqual([-0.30000000000000004]);
    const flat = (y: number) => ({ label: String(y), points: [{ x: 1, y }] });
    const svg = lineChart("Reward", [flat(-0.3), flat(-0.30000000000000004)]);
    expect(svg).toContain("<svg");
    expect(svg.match(/class="tick"/g)?.length ?? 0).toBeLessThan(20);
  });
});

describe("writeReport from a run dir", () => {
  const dir = mkdtempSync(join(tmpdir(), "ragen-report-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads metrics.jsonl and trajectories.jsonl and writes report.html", async () => {
    const logger = new RunLogger(dir, { console: null, wandb: null });
    for (const row of syntheticMetrics(5)) logger.log(row.step, row.metrics);
    await logger.close();
    const trajectories = new TrajectoryLog(dir);
    trajectories.append(...syntheticTrajectories());
    trajectories.close();
    const out = writeReport(dir);
    expect(out).toBe(join(dir, RUN_FILES.report));
    const text = readFileSync(out, "utf8");
    expect(text).toMatch(/5 logged steps \(last step 4\) · 14 trajectories/);
    expect(seriesNames(section(text, "chart-success"))).toHaveLength(2);
  });
});
