import { describe, expect, it } from "vitest";
import {
  buildReport,
  lineChart,
  type MetricsRow,
  successStandardError,
  validationDrops,
} from "../src/index.js";

const row = (step: number, metrics: Record<string, number>): MetricsRow => ({
  step,
  wall_time: step,
  metrics,
});

// Bandit falls from 55% to 20% on 64 episodes (2 SE of the difference is about 16 points); FrozenLake
// dips 5 points, which the validation cannot tell from noise.
const rows = [
  row(0, { "val-env/Bandit/success": 0.55, "val-env/FrozenLake/success": 0.2 }),
  row(1, {
    "train/Bandit/success": 0.5,
    "train/Bandit/action_is_valid": 1,
    "train/FrozenLake/action_is_valid": 0.9,
    "train/Bandit/format_penalty_rate": 0,
    "train/FrozenLake/format_penalty_rate": 0.1,
    "actor/kl_loss": 0.01,
  }),
  row(9, { "val-env/Bandit/success": 0.2, "val-env/FrozenLake/success": 0.15, "actor/kl_loss": 0.4 }),
  row(18, { "val-env/Bandit/success": 0.5, "val-env/FrozenLake/success": 0.3 }),
];

describe("validationDrops", () => {
  it("flags a validation more than two standard errors of the difference below the start", () => {
    expect(successStandardError(0.5, 64)).toBeCloseTo(0.0625, 10);
    const drops = validationDrops(rows, 64);
    expect(drops).toHaveLength(1);
    const [drop] = drops;
    expect(drop).toMatchObject({ envTag: "Bandit", step: 9, start: 0.55, value: 0.2 });
    const expected = 2 * Math.hypot(successStandardError(0.55, 64), successStandardError(0.2, 64));
    expect(drop!.threshold).toBeCloseTo(expected, 12);
  });

  it("needs more episodes to flag a smaller drop, and flags nothing at the start itself", () => {
    const small = [row(0, { "val-env/X/success": 0.5 }), row(5, { "val-env/X/success": 0.4 })];
    expect(validationDrops(small, 64)).toEqual([]);
    expect(validationDrops(small, 1024)).toHaveLength(1);
    expect(validationDrops([row(0, { "val-env/X/success": 0 })], 64)).toEqual([]);
  });
});

describe("collapse signals in the report", () => {
  it("flags the drop, and draws validity, format penalties and KL per env", () => {
    const html = buildReport(rows, [], { validationEpisodes: 64 });
    const flags = [...html.matchAll(/class="collapse-flag" data-env="([^"]+)" data-step="(\d+)"/g)];
    expect(flags.map((m) => [m[1], m[2]])).toEqual([["Bandit", "9"]]);
    // Each chart's series, by the chart they are drawn in.
    const seriesOf = (id: string) => {
      const chart = html.slice(html.indexOf(`id="chart-${id}"`));
      const figure = chart.slice(0, chart.indexOf("</figure>"));
      return [...figure.matchAll(/data-series="([^"]+)"/g)].map((m) => m[1]);
    };
    expect(seriesOf("action-validity")).toEqual([
      "train/Bandit/action_is_valid",
      "train/FrozenLake/action_is_valid",
    ]);
    expect(seriesOf("format-penalty")).toEqual([
      "train/Bandit/format_penalty_rate",
      "train/FrozenLake/format_penalty_rate",
    ]);
    expect(seriesOf("kl")).toEqual(["actor/kl_loss"]);
    const calm = buildReport(rows.slice(0, 2), [], { validationEpisodes: 64 });
    expect(calm).toContain("No validation fell more than two standard errors below its start");
    expect(buildReport(rows, [])).not.toContain('id="collapse-signals"');
  });

  it("shades a band under a series", () => {
    const svg = lineChart("band", [
      {
        label: "mean",
        points: [
          { x: 0, y: 0.5 },
          { x: 9, y: 0.6 },
        ],
        band: [
          { x: 0, low: 0.4, high: 0.6 },
          { x: 9, low: 0.5, high: 0.7 },
        ],
      },
    ]);
    expect(svg.match(/<polygon class="band"[^>]*points="([^"]+)"/)![1]!.split(" ")).toHaveLength(4);
  });
});
