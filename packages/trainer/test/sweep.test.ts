import { describe, expect, it } from "vitest";
import {
  buildSweepReport,
  formatSweepMarkdown,
  meanWithError,
  resolveSettings,
  type SeedRun,
  summarizeSweep,
} from "../src/index.js";
import { checkSweepSettings, seedRunSettings } from "../src/node.js";

const row = (step: number, metrics: Record<string, number>) => ({ step, metrics });

// Three seeds, validated at steps 0, 9 and 18 on 64 episodes per env.
const runs: SeedRun[] = [
  {
    seed: 0,
    history: [
      row(0, { "val-env/A/success": 0.2, "val-env/B/success": 0.6 }),
      row(1, { "train/A/success": 0.1 }),
      row(9, { "val-env/A/success": 0.3, "val-env/B/success": 0.7 }),
      row(18, { "val-env/A/success": 0.35, "val-env/B/success": 0.9 }),
    ],
  },
  {
    seed: 1,
    history: [
      row(0, { "val-env/A/success": 0.1, "val-env/B/success": 0.55 }),
      row(9, { "val-env/A/success": 0.2, "val-env/B/success": 0.0 }),
      row(18, { "val-env/A/success": 0.3, "val-env/B/success": 0.5 }),
    ],
  },
  // Not started yet: left out of the summary.
  { seed: 2, history: [] },
];

describe("summarizeSweep", () => {
  const summary = summarizeSweep(runs, 64);

  it("takes start, end and lowest per seed and env, and mean ± standard error across seeds", () => {
    expect(summary.seeds).toEqual([0, 1]);
    const a = summary.envs.find((e) => e.envTag === "A")!;
    expect(a.seeds.map((r) => [r.seed, r.start, r.end, r.lowest, r.endStep])).toEqual([
      [0, 0.2, 0.35, 0.2, 18],
      [1, 0.1, 0.3, 0.1, 18],
    ]);
    expect(a.start.mean).toBeCloseTo(0.15, 12);
    // Sample sd of (0.35, 0.3) is 0.0354; over sqrt(2) seeds 0.025.
    expect(a.end.standardError).toBeCloseTo(0.025, 12);
    expect(a.improved).toBe(2);
    expect(a.collapsed).toBe(0);
  });

  it("flags a seed whose validation fell more than two standard errors below its start", () => {
    const b = summary.envs.find((e) => e.envTag === "B")!;
    expect(b.collapsed).toBe(1);
    expect(b.seeds[1]!.drops.map((d) => d.step)).toEqual([9]);
    expect(b.seeds[1]!.lowest).toBe(0);
    expect(b.improved).toBe(1);
  });

  it("writes the tables in markdown and the curves with a band in the report", () => {
    const markdown = formatSweepMarkdown(summary);
    expect(markdown).toContain("### A");
    expect(markdown).toMatch(/\| 1 \| 55\.0% \| 50\.0% ± 6\.3% \| 0\.0% \| yes \(step 9\) \|/);
    expect(markdown).toMatch(/\*\*mean ± SE\*\* \| \*\*15\.0% ± 5\.0%\*\* \| \*\*32\.5% ± 2\.5%\*\*/);
    const html = buildSweepReport(summary, runs, "sweep");
    expect(html).toContain('id="sweep-A"');
    expect(html.match(/data-series="seed \d"/g)?.length).toBe(4);
    expect(html.match(/<polygon class="band"/g)?.length).toBe(2);
    expect(html.match(/class="collapsed"/g)?.length).toBe(1);
  });

  it("gives no standard error for a single value", () => {
    expect(meanWithError([0.4])).toEqual({ mean: 0.4, standardError: Number.NaN });
  });
});

describe("the seeds setting", () => {
  it("reads seeds=0,1,2 and seeds=3 as lists, and refuses anything else naming the field", async () => {
    expect((await resolveSettings({ overrides: ["seeds=0,1,2"] })).settings.seeds).toEqual([0, 1, 2]);
    expect((await resolveSettings({ overrides: ["seeds=3"] })).settings.seeds).toEqual([3]);
    expect((await resolveSettings({})).settings.seeds).toBeNull();
    await expect(resolveSettings({ overrides: ["seeds=0,x"] })).rejects.toThrow(/seeds/);
    await expect(resolveSettings({ overrides: ["seeds=1,1"] })).rejects.toThrow(/seeds/);
  });

  it("refuses seed and seeds set together, and gives each seed its own folder", async () => {
    const both = await resolveSettings({ overrides: ["seed=4", "seeds=0,1"] });
    expect(() => checkSweepSettings(both)).toThrow(/seeds[\s\S]*seed=4 is set too/);
    const sweep = await resolveSettings({ overrides: ["seeds=0,1", "outDir=runs/s"] });
    expect(() => checkSweepSettings(sweep)).not.toThrow();
    const one = seedRunSettings(sweep, 1);
    expect(one.settings).toMatchObject({ seed: 1, seeds: null, outDir: "runs/s/seed-1" });
  });
});
