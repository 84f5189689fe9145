import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl } from "@ragen/logging";
import { saveTinyModel } from "@ragen/sft/node";
import { SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";

const root = mkdtempSync(join(tmpdir(), "ragen-sweep-"));
const modelDir = join(root, "model");
const outDir = join(root, "sweep");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const quiet = async <T>(fn: () => Promise<T>): Promise<T> => {
  const spies = [
    vi.spyOn(console, "log").mockImplementation(() => {}),
    vi.spyOn(process.stderr, "write").mockImplementation(() => true),
  ];
  try {
    return await fn();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
};

const args = [
  "train",
  ...SMOKE_RUN_SETTINGS,
  "envs=Bandit",
  `model=${modelDir}`,
  "steps=2",
  "validation.every=2",
  `outDir=${outDir}`,
  "seeds=0,1",
];

beforeAll(async () => {
  await saveTinyModel(modelDir, { envTags: ["Bandit"] });
});

describe("ragen train seeds=...", () => {
  it("runs each seed into its own folder and summarises them; a rerun leaves finished seeds alone", async () => {
    expect(await quiet(() => runRagen(args))).toBe(0);
    const summary = JSON.parse(readFileSync(join(outDir, "sweep.json"), "utf8"));
    expect(summary.seeds).toEqual([0, 1]);
    const bandit = summary.envs.find((e: { envTag: string }) => e.envTag === "Bandit");
    for (const seed of [0, 1]) {
      const rows = parseMetricsJsonl(readFileSync(join(outDir, `seed-${seed}`, "metrics.jsonl"), "utf8"));
      const validations = rows.filter((r) => "val-env/Bandit/success" in r.metrics);
      const result = bandit.seeds.find((r: { seed: number }) => r.seed === seed);
      expect(result.start).toBe(validations[0]!.metrics["val-env/Bandit/success"]);
      expect(result.end).toBe(validations.at(-1)!.metrics["val-env/Bandit/success"]);
      const config = JSON.parse(readFileSync(join(outDir, `seed-${seed}`, "config.json"), "utf8"));
      expect(config.settings).toMatchObject({ seed, seeds: null });
    }
    expect(readFileSync(join(outDir, "sweep.md"), "utf8")).toMatch(/### Bandit[\s\S]*mean ± SE/);
    expect(readFileSync(join(outDir, "report.html"), "utf8")).toContain('id="sweep-Bandit"');

    const metricsFile = join(outDir, "seed-0", "metrics.jsonl");
    const before = readFileSync(metricsFile, "utf8");
    const modified = statSync(metricsFile).mtimeMs;
    expect(await quiet(() => runRagen(args))).toBe(0);
    expect(readFileSync(metricsFile, "utf8")).toBe(before);
    expect(statSync(metricsFile).mtimeMs).toBe(modified);
  });

  it("refuses seed and seeds together with exit code 2", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await quiet(() => runRagen([...args, "seed=3"]))).toBe(2);
      expect(errors).toHaveBeenCalledWith(expect.stringMatching(/seeds[\s\S]*keep one of them/));
    } finally {
      errors.mockRestore();
    }
  });
});
