import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StarPO } from "@ragen/algos-ppo";
import { runRagen } from "@ragen/cli";
import { parseMetricsJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { trainQuest } from "../src/main.js";

/** The process's memory mappings (Linux), of which the kernel allows vm.max_map_count. */
const memoryMappings = () =>
  existsSync("/proc/self/maps") ? readFileSync("/proc/self/maps", "utf8").split("\n").length : 0;

/** Metrics that measure time or memory rather than what was learned. */
const measured = (key: string) =>
  key.startsWith("timing_s/") || ["perf/time_per_step", "perf/throughput", "perf/max_memory"].includes(key);

function learnedMetrics(outDir: string) {
  return parseMetricsJsonl(readFileSync(join(outDir, "metrics.jsonl"), "utf8")).map((row) => ({
    step: row.step,
    metrics: Object.fromEntries(Object.entries(row.metrics).filter(([key]) => !measured(key))),
  }));
}

describe("the Quest training script", () => {
  let dir: string;
  let model: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "quest-script-"));
    model = join(dir, "model");
    await saveTinyModel(model, { envTags: ["FrozenLakeGridCoord", "Bandit"] });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const precision of ["f32", "f16"] as const)
    it(`logs the same metrics as \`ragen train\` with the same settings, so the two cannot drift (precision=${precision})`, async () => {
      const settings = [
        ...SMOKE_RUN_SETTINGS,
        `model=${model}`,
        "steps=2",
        "checkpointEvery=1",
        `precision=${precision}`,
      ];
      const script = join(dir, `script-${precision}`);
      const command = join(dir, `command-${precision}`);
      const summary = await trainQuest([...settings, `outDir=${script}`], dir);
      expect(summary?.steps).toBe(2);
      expect(await runRagen(["train", ...settings, `outDir=${command}`])).toBe(0);
      const fromScript = learnedMetrics(script);
      expect(fromScript.map((row) => row.step)).toEqual([0, 1, 2]);
      expect(fromScript[1]!.metrics["actor/pg_loss"]).toBeTypeOf("number");
      expect(fromScript[1]!.metrics["critic/vf_loss"]).toBeTypeOf("number");
      // Only an f16 run scales its losses.
      expect(fromScript[1]!.metrics["actor/loss_scale"] !== undefined).toBe(precision === "f16");
      expect(fromScript).toEqual(learnedMetrics(command));
      const saved = (path: string) => JSON.parse(readFileSync(join(path, "config.json"), "utf8")).settings;
      expect({ ...saved(script), outDir: "" }).toEqual({ ...saved(command), outDir: "" });
    });

  it("sweeps seeds=0,1 over quest.yaml (which names seed: 0): a folder per seed and the summary", async () => {
    const outDir = join(dir, "sweep");
    const questYaml = join(import.meta.dirname, "..", "quest.yaml");
    const args = [
      questYaml,
      ...SMOKE_RUN_SETTINGS,
      `model=${model}`,
      "steps=1",
      "seeds=0,1",
      `outDir=${outDir}`,
    ];
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const mappingsBefore = memoryMappings();
    try {
      await trainQuest(args, dir);
    } finally {
      log.mockRestore();
    }
    // Each seed's device is destroyed at its end. Left to the garbage collector, two seeds on lavapipe kept
    // about 12,500 more memory mappings, and a long sweep reached the kernel's limit (65,530) and crashed.
    expect(memoryMappings() - mappingsBefore).toBeLessThan(1000);
    const summary = JSON.parse(readFileSync(join(outDir, "sweep.json"), "utf8"));
    expect(summary.seeds).toEqual([0, 1]);
    for (const seed of [0, 1]) {
      const seedDir = join(outDir, `seed-${seed}`);
      expect(learnedMetrics(seedDir).map((row) => row.step)).toEqual([0, 1]);
      expect(JSON.parse(readFileSync(join(seedDir, "config.json"), "utf8")).settings.seed).toBe(seed);
    }
    expect(summary.envs.map((env: { envTag: string }) => env.envTag)).toEqual([
      "FrozenLakeGridCoord",
      "Bandit",
    ]);
    expect(readFileSync(join(outDir, "sweep.md"), "utf8")).toContain("### Bandit");
    expect(readFileSync(join(outDir, "report.html"), "utf8")).toContain('id="sweep-FrozenLakeGridCoord"');
  });

  it("stops, as `ragen train` does, when the loss has not been finite for 3 steps in a row", async () => {
    const update = vi
      .spyOn(StarPO.prototype, "update")
      .mockResolvedValue({ "actor/pg_loss": Number.NaN, "critic/vf_loss": 0.1 });
    try {
      const settings = [...SMOKE_RUN_SETTINGS, `model=${model}`, "steps=6", "validation.every=100"];
      await expect(trainQuest([...settings, `outDir=${join(dir, "nan")}`], dir)).rejects.toThrow(
        /step 3: actor\/pg_loss = NaN .*not been finite for 3 steps in a row/,
      );
      expect(learnedMetrics(join(dir, "nan")).map((row) => row.step)).toEqual([0, 1, 2]);
    } finally {
      update.mockRestore();
    }
  });

  it("prints its settings with their sources, and exits on a bad one with the field named", async () => {
    const out: string[] = [];
    const write = vi.spyOn(process.stdout, "write").mockImplementation((text) => out.push(String(text)) > 0);
    try {
      await trainQuest(["--print-config", "steps=3"], dir);
    } finally {
      write.mockRestore();
    }
    expect(out.join("")).toMatch(/^steps: 3 # command line$/m);
    expect(out.join("")).toMatch(/^ {2}ppoMiniBatchSize: 8 # profile embedded \(auto\)$/m);
    await expect(trainQuest(["starpo.ppoMiniBatchSize=0"], dir)).rejects.toThrow(
      /command line: starpo\.ppoMiniBatchSize: must be >= 1/,
    );
  });
});
