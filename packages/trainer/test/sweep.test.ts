import { describe, expect, it } from "vitest";
import {
  buildSweepReport,
  formatArmSweepMarkdown,
  formatSweepMarkdown,
  meanWithError,
  resolveSettings,
  type SeedRun,
  summarizeSweep,
  warnOnCollapse,
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
    finished: true,
  },
  {
    seed: 1,
    history: [
      row(0, { "val-env/A/success": 0.1, "val-env/B/success": 0.55 }),
      row(9, { "val-env/A/success": 0.2, "val-env/B/success": 0.0 }),
      row(18, { "val-env/A/success": 0.3, "val-env/B/success": 0.5 }),
    ],
    finished: true,
  },
  // Interrupted after its step-9 validation: shown where it got to, kept out of the end's mean.
  {
    seed: 2,
    history: [
      row(0, { "val-env/A/success": 0.3, "val-env/B/success": 0.6 }),
      row(9, { "val-env/A/success": 0.9, "val-env/B/success": 0.6 }),
    ],
    finished: false,
  },
  // Not started yet: left out of the summary.
  { seed: 3, history: [], finished: false },
];

describe("summarizeSweep", () => {
  const summary = summarizeSweep(runs, 64);

  it("takes start, end and lowest per seed and env, and mean ± standard error across seeds", () => {
    expect(summary.seeds).toEqual([0, 1, 2]);
    const a = summary.envs.find((e) => e.envTag === "A")!;
    expect(a.seeds.map((r) => [r.seed, r.start, r.end, r.lowest, r.endStep, r.finished])).toEqual([
      [0, 0.2, 0.35, 0.2, 18, true],
      [1, 0.1, 0.3, 0.1, 18, true],
      [2, 0.3, 0.9, 0.3, 9, false],
    ]);
    // Starts of all three seeds: mean 0.2, sample sd 0.1, SE 0.1 / sqrt(3).
    expect(a.start.mean).toBeCloseTo(0.2, 12);
    expect(a.start.standardError).toBeCloseTo(0.1 / Math.sqrt(3), 12);
    // Ends of the two finished seeds only: sample sd of (0.35, 0.3) is 0.0354; over sqrt(2) seeds 0.025.
    expect(a.end.mean).toBeCloseTo(0.325, 12);
    expect(a.end.standardError).toBeCloseTo(0.025, 12);
    expect([a.finished, a.improved, a.collapsed]).toEqual([2, 2, 0]);
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
    expect(markdown).toMatch(
      /\*\*mean ± SE\*\* \| \*\*20\.0% ± 5\.8%\*\* \| \*\*32\.5% ± 2\.5%\*\* \|\s+\| 2 of 2 finished seeds/,
    );
    expect(markdown).toMatch(/\| 2 \| 30\.0% \| 90\.0% at step 9 \(unfinished\) \|/);
    const html = buildSweepReport(summary, runs, "sweep");
    expect(html).toContain('id="sweep-A"');
    expect(html.match(/data-series="seed \d"/g)?.length).toBe(6);
    expect(html.match(/<polygon class="band"/g)?.length).toBe(2);
    expect(html.match(/class="collapsed"/g)?.length).toBe(1);
  });

  it("gives no standard error for a single value", () => {
    expect(meanWithError([0.4])).toEqual({ mean: 0.4, standardError: Number.NaN });
  });
});

describe("formatArmSweepMarkdown", () => {
  it("puts every arm's start and end across seeds in one table, then each arm's per-seed tables", () => {
    const first = summarizeSweep(runs, 64);
    const second = summarizeSweep(runs.slice(0, 1), 64);
    const markdown = formatArmSweepMarkdown([
      { arm: "starpo", summary: first },
      { arm: "apo", summary: second },
    ]);
    expect(markdown).toContain("seeds 0, 1, 2;");
    // Env A over seeds 0-2: starts 0.2, 0.1, 0.3 (mean 20.0% ± 5.8%), ends of the finished seeds 0.35 and 0.3.
    expect(markdown).toContain("| starpo | A | 20.0% ± 5.8% | 32.5% ± 2.5% | 2 of 2 | 0 of 3 |");
    expect(markdown).toContain("| starpo | B | 58.3% ± 1.7% | 70.0% ± 20.0% | 1 of 2 | 1 of 3 |");
    expect(markdown).toContain("| apo | A | 20.0% | 35.0% | 1 of 1 | 0 of 1 |");
    expect(markdown).toMatch(/## starpo\n\n### A\n/);
    expect(markdown).toMatch(/## apo\n\n### A\n/);
  });

  it("says so when no seed has validated yet", () => {
    const empty = summarizeSweep([{ seed: 0, history: [], finished: false }], 32);
    expect(formatArmSweepMarkdown([{ arm: "starpo", summary: empty }])).toBe(
      "# Seed sweep of the arms\n\nNo seed has validated yet.\n",
    );
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
    expect(() => checkSweepSettings(both)).toThrow(/seeds[\s\S]*seed=4 is set too \(command line\)/);
    const file = (values: Record<string, unknown>) => ({ file: { path: "run.yaml", values } });
    const inOneFile = await resolveSettings(file({ seed: 0, seeds: [0, 1] }));
    expect(() => checkSweepSettings(inOneFile)).toThrow(/seed=0 is set too \(file run\.yaml\)/);
    // A file's sweep with a command-line seed: which was meant is unclear, so it is refused too.
    const seedOverFile = await resolveSettings({ ...file({ seeds: [0, 1] }), overrides: ["seed=2"] });
    expect(() => checkSweepSettings(seedOverFile)).toThrow(/keep one of them/);
    const sweep = await resolveSettings({ overrides: ["seeds=0,1", "outDir=runs/s"] });
    expect(() => checkSweepSettings(sweep)).not.toThrow();
    // seeds= on the command line over a file's seed (quest.yaml names `seed: 0`): the command line wins.
    const overFile = await resolveSettings({
      file: { path: "q.yaml", values: { seed: 0 } },
      overrides: ["seeds=0,1"],
    });
    expect(() => checkSweepSettings(overFile)).not.toThrow();
    const one = seedRunSettings(sweep, 1);
    expect(one.settings).toMatchObject({ seed: 1, seeds: null, outDir: "runs/s/seed-1" });
  });
});

describe("warnOnCollapse", () => {
  it("says so once, at the validation that fell more than two standard errors below the start", async () => {
    const { settings } = await resolveSettings({ overrides: ["validation.groupsPerEnv=64"] });
    const history = [
      row(0, { "val-env/Bandit/success": 0.55 }),
      row(9, { "val-env/Bandit/success": 0.2 }),
      row(10, { "train/Bandit/success": 0.3 }),
    ];
    // As a run calls it: after logging each row, with the history so far.
    const lines: string[] = [];
    for (const [i, { step }] of history.entries())
      warnOnCollapse(history.slice(0, i + 1), step, settings, (line) => lines.push(line));
    expect(lines).toEqual([
      expect.stringMatching(/^collapse: Bandit at step 9: validation success 20\.0%, down from 55\.0%/),
    ]);
  });
});
