// The path a RAGEN user takes, at a size the tests can afford: a Hugging Face folder with Qwen's full
// vocabulary and tokenizer files (2 small layers, random weights), `ragen train profile=ragen` with LoRA
// for one step, then `ragen eval` on its checkpoint. bench/qwen-step.ts runs the same path at
// Qwen2.5-0.5B's size.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseMetricsJsonl } from "@ragen/logging";
import { QWEN2_5_0_5B_INSTRUCT_CONFIG, type Qwen2Config } from "@ragen/models";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { writeRandomQwenFolder } from "../scripts/random-qwen-folder.js";
import { runRagen } from "../src/commands/main.js";

const root = mkdtempSync(join(tmpdir(), "ragen-qwen-shaped-"));
const model = join(root, "qwen-2-layers");
const run = join(root, "run");
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Qwen2.5-0.5B-Instruct's config (vocabulary, tied embeddings, rope) with 2 narrow layers. */
const TWO_LAYER_QWEN: Qwen2Config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  hiddenSize: 64,
  intermediateSize: 128,
  numHiddenLayers: 2,
  numAttentionHeads: 4,
  numKeyValueHeads: 2,
  headDim: 16,
  torchDtype: "float32",
};

let logs: string[] = [];
async function ragen(args: string[]): Promise<number> {
  logs = [];
  const spies = [
    vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void logs.push(parts.join(" "))),
    vi.spyOn(console, "error").mockImplementation((...parts: unknown[]) => void logs.push(parts.join(" "))),
    vi.spyOn(process.stderr, "write").mockImplementation(() => true),
  ];
  try {
    return await runRagen(args);
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

beforeAll(async () => {
  await writeRandomQwenFolder(model, TWO_LAYER_QWEN);
}, 60_000);

describe("a Qwen-shaped model through ragen train profile=ragen with LoRA, and ragen eval", () => {
  it("trains one step, saves the adapter, and evaluates the checkpoint", async () => {
    const code = await ragen([
      "train",
      "profile=ragen",
      `model=${model}`,
      `outDir=${run}`,
      "steps=1",
      "envs=Bandit",
      "train.envGroups=1",
      "train.groupSize=2",
      "rollout.maxNewTokens=16",
      "validation.groupsPerEnv=1",
      "lora.rank=8",
      "lora.alpha=8",
      "lora.critic=true",
    ]);
    expect(code, logs.join("\n")).toBe(0);
    expect(logs.some((line) => line.startsWith("profile ragen: "))).toBe(true);
    const rows = parseMetricsJsonl(readFileSync(join(run, "metrics.jsonl"), "utf8"));
    const step = rows.find((row) => row.step === 1)!.metrics;
    for (const phase of ["gen", "values", "update_critic", "update_actor"])
      expect(step[`timing_s/${phase}`], phase).toBeGreaterThan(0);
    const saved = JSON.parse(readFileSync(join(run, "config.json"), "utf8"));
    expect(saved.settings.profile).toBe("ragen");
    expect(saved.settings.lora.rank).toBe(8);

    const evalOut = join(root, "eval");
    expect(
      await ragen([
        "eval",
        run,
        `outDir=${evalOut}`,
        "envs=Bandit",
        "rollout.maxNewTokens=16",
        "validation.groupsPerEnv=1",
      ]),
      logs.join("\n"),
    ).toBe(0);
    const evalRows = parseMetricsJsonl(readFileSync(join(evalOut, "metrics.jsonl"), "utf8"));
    expect(evalRows[0]!.metrics["val-env/Bandit/success"]).toBeGreaterThanOrEqual(0);
  }, 600_000);
});
