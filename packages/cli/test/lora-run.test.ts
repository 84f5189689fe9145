/**
 * A LoRA training run in a folder, end to end: its checkpoint holds the adapter in PEFT's layout beside
 * the optimiser state, a resumed run goes on exactly as an uninterrupted one, `ragen sft merge` exports
 * the adapted model as a Hugging Face folder, and `ragen eval` loads the run.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl, parseTrajectoriesJsonl } from "@ragen/logging";
import { loadLoraAdapter } from "@ragen/models/node";
import { saveTinyModel } from "@ragen/sft/node";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { type LoadedPolicy, SMOKE_RUN_SETTINGS } from "@ragen/trainer";
import { findCheckpoint, loadPolicy, resolveRunSettings, trainInFolder } from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";
import { quiet } from "./support/quiet.js";

const root = mkdtempSync(join(tmpdir(), "ragen-lora-run-"));
const modelDir = join(root, "model");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const train = (outDir: string, steps: number) =>
  quiet(async () =>
    trainInFolder(
      await resolveRunSettings({
        cwd: root,
        overrides: [
          ...SMOKE_RUN_SETTINGS,
          "envs=FrozenLake,Bandit",
          `model=${modelDir}`,
          `outDir=${outDir}`,
          `steps=${steps}`,
          "checkpointEvery=1",
          "validation.groupsPerEnv=3",
          "lora.rank=4",
          "lora.alpha=8",
          "lora.targetModules=q_proj,v_proj,up_proj,down_proj",
        ],
      }),
    ),
  );

/** Metrics that measure time or memory rather than what was learned. */
const learned = (metrics: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(metrics).filter(
      ([key]) =>
        !key.startsWith("timing_s/") &&
        !["perf/time_per_step", "perf/throughput", "perf/max_memory"].includes(key),
    ),
  );

const rowsOf = (dir: string) => parseMetricsJsonl(readFileSync(join(dir, "metrics.jsonl"), "utf8"));
const trajectoriesOf = (dir: string) =>
  parseTrajectoriesJsonl(readFileSync(join(dir, "trajectories.jsonl"), "utf8"));

/** Logits of a fixed prompt under `policy`. */
async function logitsOf(policy: LoadedPolicy): Promise<Float32Array> {
  const ids = Int32Array.from(policy.tokenizer.encode("You are on a frozen lake. Move: Left").slice(0, 16));
  const logits = policy.model.logits({ ids, batch: 1, seqLen: ids.length });
  try {
    return await logits.floats();
  } finally {
    logits.dispose();
  }
}

function maxDifference(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  return a.reduce((worst, x, i) => Math.max(worst, Math.abs(x - b[i]!)), 0);
}

const straightDir = join(root, "straight");

beforeAll(async () => {
  await saveTinyModel(modelDir, { envTags: ["FrozenLake", "Bandit"] });
  await train(straightDir, 2);
}, 300_000);

describe("a LoRA run in a folder", () => {
  it("checkpoints the adapter in PEFT's layout beside the optimiser state, and resumes exactly", async () => {
    const checkpoint = findCheckpoint(straightDir)!;
    expect(checkpoint.state).toMatchObject({ step: 2, lora: { rank: 4, alpha: 8, critic: true } });
    expect(readdirSync(checkpoint.dir).sort()).toEqual([
      "adapter_config.json",
      "adapter_model.safetensors",
      "critic.safetensors",
      "optimizers.safetensors",
      "state.json",
    ]);
    expect(JSON.parse(readFileSync(join(checkpoint.dir, "adapter_config.json"), "utf8"))).toMatchObject({
      peft_type: "LORA",
      r: 4,
      lora_alpha: 8,
      target_modules: ["q_proj", "v_proj", "up_proj", "down_proj"],
      base_model_name_or_path: modelDir,
    });

    const resumedDir = join(root, "resumed");
    await train(resumedDir, 1);
    await train(resumedDir, 2);
    const straight = rowsOf(straightDir);
    const resumed = rowsOf(resumedDir);
    expect(resumed.map((row) => row.step)).toEqual([0, 1, 2]);
    expect(learned(resumed[2]!.metrics)).toEqual(learned(straight[2]!.metrics));
    const step2 = (dir: string) => trajectoriesOf(dir).filter((t) => t.step === 2);
    expect(step2(resumedDir)).toEqual(step2(straightDir));
  });

  it("exports the adapted model with ragen sft merge: its logits are the base's with the adapter on", async () => {
    const backend = await webGpuBackend();
    const adapted = await loadPolicy(modelDir, backend);
    loadLoraAdapter(adapted.model, join(straightDir, "checkpoint"));
    const expected = await logitsOf(adapted);
    const base = await adapted.model.withoutAdapters(() => logitsOf(adapted));
    // The run moved the adapters: the adapted model is not the base.
    expect(maxDifference(expected, base)).toBeGreaterThan(1e-4);
    adapted.model.dispose();

    // The run folder names its base model; the checkpoint folder with the base named works as well.
    const merged = join(root, "merged");
    expect(await quiet(() => runRagen(["sft", "merge", `adapter=${straightDir}`, `out=${merged}`]))).toBe(0);
    const fromCheckpoint = join(root, "merged-2");
    expect(
      await quiet(() =>
        runRagen([
          "sft",
          "merge",
          `model=${modelDir}`,
          `adapter=${join(straightDir, "checkpoint")}`,
          `out=${fromCheckpoint}`,
        ]),
      ),
    ).toBe(0);
    for (const dir of [merged, fromCheckpoint]) {
      expect(existsSync(join(dir, "model.safetensors"))).toBe(true);
      const policy = await loadPolicy(dir, backend);
      expect(maxDifference(await logitsOf(policy), expected)).toBeLessThan(1e-5);
      policy.model.dispose();
    }
    // The checkpoint loads as a model too (what ragen eval reads), the adapter folded in.
    const checkpointModel = await loadPolicy(join(straightDir, "checkpoint"), backend);
    expect(maxDifference(await logitsOf(checkpointModel), expected)).toBeLessThan(1e-5);
    checkpointModel.model.dispose();
  });

  it("refuses to merge a run that trained every weight, naming its model", async () => {
    const fullDir = join(root, "full");
    await quiet(async () =>
      trainInFolder(
        await resolveRunSettings({
          cwd: root,
          overrides: [
            ...SMOKE_RUN_SETTINGS,
            "envs=Bandit",
            `model=${modelDir}`,
            `outDir=${fullDir}`,
            "steps=0",
          ],
        }),
      ),
    );
    const errors: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((line: string) => errors.push(line));
    try {
      const code = await quiet(() =>
        runRagen(["sft", "merge", `adapter=${fullDir}`, `out=${join(root, "nothing")}`]),
      );
      expect(code).toBe(2);
    } finally {
      spy.mockRestore();
    }
    expect(errors.join("\n")).toMatch(/trained every weight: its model is .*checkpoint\/actor/);
    expect(existsSync(join(root, "nothing"))).toBe(false);
  });

  it("is evaluated by ragen eval on its base model with the adapter", async () => {
    const outDir = join(root, "eval");
    const code = await quiet(() =>
      runRagen([
        "eval",
        straightDir,
        ...SMOKE_RUN_SETTINGS,
        "envs=FrozenLake,Bandit",
        "validation.groupsPerEnv=3",
        `outDir=${outDir}`,
      ]),
    );
    expect(code).toBe(0);
    const summary = JSON.parse(readFileSync(join(outDir, "summary.json"), "utf8"));
    expect(summary.weights).toMatch(/checkpoint \(LoRA adapter on .*model\)/);
    expect(summary.rows.map((row: { env: string }) => row.env)).toEqual(["FrozenLake", "Bandit"]);
  });
});
