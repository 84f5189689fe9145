import { describe, expect, it } from "vitest";
import { comparisonCsv, comparisonHtml, comparisonMarkdown } from "../src/comparison-files.js";
import { armSignals, collapseStep, SIGNALS, type StepMetrics } from "../src/signals.js";

const rows = (stds: number[], extra: (step: number) => Record<string, number> = () => ({})): StepMetrics[] =>
  stds.map((std, i) => ({ step: i + 1, metrics: { "rollout/in_group_std": std, ...extra(i + 1) } }));

describe("collapse signals", () => {
  it("finds the step from which the in-group std stays below the threshold", () => {
    expect(collapseStep(rows([0.4, 0.3, 0.04, 0.02, 0.01]))).toBe(3);
    // A dip that recovers is no collapse; a later one that lasts is.
    expect(collapseStep(rows([0.4, 0.01, 0.3, 0.2, 0.3]))).toBeNull();
    expect(collapseStep(rows([0.4, 0.01, 0.3, 0.02, 0.01]))).toBe(4);
    expect(collapseStep(rows([0.2, 0.1]), 0.15)).toBe(2);
    expect(collapseStep([{ step: 0, metrics: { "val-env/SimpleSokoban/success": 0.1 } }])).toBeNull();
  });

  it("summarises every signal per arm, leaving out those never logged", () => {
    const arm = armSignals(
      "ppo",
      rows([0.3, 0.1, 0.02], (step) => ({
        "actor/entropy": 2 - step / 2,
        "actor/grad_norm": step === 2 ? 9 : 1,
      })),
    );
    expect(arm.collapseStep).toBe(3);
    expect(arm.signals["actor/entropy"]).toEqual({ first: 1.5, last: 0.5, min: 0.5, max: 1.5 });
    expect(arm.signals["actor/grad_norm"]!.max).toBe(9);
    expect(arm.signals).not.toHaveProperty(["critic/score/mean"]);
  });

  it("writes the arms side by side as CSV, markdown and HTML", () => {
    const steady = rows([0.3, 0.3, 0.3], () => ({ "actor/entropy": 1, "train/SimpleSokoban/success": 0.5 }));
    const falling = rows([0.3, 0.04, 0.01], (step) => ({ "actor/entropy": 1 / step }));
    const arms = [
      { signals: armSignals("starpo-s", steady), rows: steady },
      { signals: armSignals("ppo<b>", falling), rows: falling },
    ];
    const csv = comparisonCsv(arms.map((a) => a.signals))
      .trim()
      .split("\n");
    expect(csv).toHaveLength(3);
    expect(csv[0]).toMatch(/^arm,collapse step,In-group reward std first/);
    expect(csv[1]).toMatch(/^starpo-s,none,0\.3,0\.3,/);
    expect(csv[2]).toMatch(/^ppo<b>,2,0\.3,0\.01,/);
    // Every signal has four columns, a missing one "-": the table stays rectangular.
    const cells = csv.map((line) => line.split(","));
    expect(cells.map((c) => c.length)).toEqual([
      2 + 4 * SIGNALS.length,
      2 + 4 * SIGNALS.length,
      2 + 4 * SIGNALS.length,
    ]);
    const trainSuccessLast = cells[0]!.indexOf("Train success last");
    expect([cells[1]![trainSuccessLast], cells[2]![trainSuccessLast]]).toEqual(["0.5", "-"]);
    const markdown = comparisonMarkdown(arms.map((a) => a.signals));
    expect(markdown).toContain("| collapse step | none | 2 |");
    expect(markdown).toContain("| Entropy | 1 → 1 (1…1) | 1 → 0.3333 (0.3333…1) |");
    const html = comparisonHtml(arms);
    expect(html.match(/<figure>/g)).toHaveLength(SIGNALS.length);
    for (const { title } of SIGNALS) expect(html).toContain(`aria-label="${title}"`);
    expect(html).toContain("<td>collapse step</td><td>none</td><td>2</td>");
    expect(html).toContain("ppo&lt;b&gt;");
    expect(html).not.toContain("ppo<b>");
  });
});
