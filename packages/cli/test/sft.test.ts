import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSafetensors } from "@ragen/models";
import { generateReadingDrills, generateSftDataset } from "@ragen/sft";
import {
  fineTune,
  loadLoraAdapter,
  readSftJsonl,
  saveLoraAdapter,
  saveMergedPolicy,
  saveTinyModel,
  writeSftJsonl,
} from "@ragen/sft/node";
import { createCpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import type { LoadedPolicy } from "@ragen/trainer";
import { loadPolicy } from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";
import { resolveSftDataConfig, resolveSftTrainConfig, sftLearningRate } from "../src/commands/sft.js";

const root = mkdtempSync(join(tmpdir(), "ragen-sft-"));
const baseDir = join(root, "base");
const dataPath = join(root, "sft.jsonl");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const chats = generateSftDataset({
  chats: { FrozenLake: 4, Bandit: 4 },
  oracle: { FrozenLake: 0.5, Bandit: 0.5 },
  firstSeed: 1000,
  maxTurns: 2,
});
// One-turn FrozenLake chats without the rules (~270 tokens each), so a training step takes about a second.
const drills = generateReadingDrills({ envTag: "FrozenLake", seeds: [1, 2, 3, 4], oracleProbability: 0.5 });

beforeAll(async () => {
  await saveTinyModel(baseDir, { envTags: ["FrozenLake", "Bandit"] });
  writeSftJsonl(dataPath, drills);
});

// Training runs on WebGPU (lavapipe without a GPU), several times faster than the CPU reference backend.
const load = async () => loadPolicy(baseDir, await webGpuBackend());

/** Logits of the start of the first chat under `policy`. */
async function logitsOf(policy: LoadedPolicy): Promise<Float32Array> {
  const ids = Int32Array.from(policy.tokenizer.encode(chats[0]!.messages[1]!.content).slice(0, 24));
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

const quiet = async <T>(fn: () => Promise<T>): Promise<T> => {
  const spies = [
    vi.spyOn(console, "log").mockImplementation(() => {}),
    vi.spyOn(console, "error").mockImplementation(() => {}),
    vi.spyOn(process.stderr, "write").mockImplementation(() => true),
  ];
  try {
    return await fn();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
};

// 4 chats in batches of 4: every step sees the same batch, so the loss must fall.
const training = { steps: 6, batchSize: 4, lr: 1e-2, seed: 0 } as const;

describe("SFT data", () => {
  it("writes chats as JSONL and reads them back; bad lines are named", () => {
    expect(readSftJsonl(dataPath)).toEqual(drills);
    const bad = join(root, "bad.jsonl");
    writeFileSync(bad, `${JSON.stringify(chats[0])}\n{"instructions": "x", "turns": []}\n`);
    expect(() => readSftJsonl(bad)).toThrow(/bad\.jsonl:2: the chat has no "turns"/);
    expect(() => readSftJsonl(join(root, "none.jsonl"))).toThrow(/no such SFT data file/);
  });

  it("takes chats and oracle shares per env or for all envs, and refuses what does not fit", () => {
    expect(
      resolveSftDataConfig(["envs=FrozenLake,Bandit", "chats=5", "oracle=FrozenLake=0.3,Bandit=0.2"]),
    ).toMatchObject({
      chats: { FrozenLake: 5, Bandit: 5 },
      oracle: { FrozenLake: 0.3, Bandit: 0.2 },
    });
    expect(resolveSftDataConfig(["envs=Bandit", "chats.Bandit=7"]).chats).toEqual({ Bandit: 7 });
    expect(() => resolveSftDataConfig(["oracle=2"])).toThrow(/oracle\.FrozenLake: must be <= 1/);
    expect(() => resolveSftDataConfig(["envs=Bandit", "chats=FrozenLake=3"])).toThrow(
      /chats: FrozenLake is not among envs/,
    );
    expect(() => resolveSftDataConfig(["envs=Chess"])).toThrow(/unknown env "Chess"/);
    expect(() => resolveSftDataConfig(["chats=FrozenLake=x"])).toThrow(/Tag=N pairs/);
    expect(resolveSftDataConfig([]).actionsPerTurn).toBe(1);
    expect(resolveSftDataConfig(["actionsPerTurn=2"]).actionsPerTurn).toBe(2);
    expect(resolveSftDataConfig([]).oracleChoice).toBe("turn");
    expect(resolveSftDataConfig(["oracleChoice=chat"]).oracleChoice).toBe("chat");
    expect(() => resolveSftDataConfig(["oracleChoice=episode"])).toThrow(/oracleChoice/);
    expect(() => resolveSftDataConfig(["actionsPerTurn=0"])).toThrow(/actionsPerTurn: must be >= 1/);
    expect(resolveSftDataConfig([]).randomActionsPerTurn).toBeNull();
    expect(resolveSftDataConfig(["actionsPerTurn=2", "randomActionsPerTurn=1"]).randomActionsPerTurn).toBe(1);
    expect(() => resolveSftDataConfig(["randomActionsPerTurn=2"])).toThrow(
      /randomActionsPerTurn: 2 is more than actionsPerTurn \(1\)/,
    );
  });

  it("ragen sft data writes the chats the oracle share asks for", async () => {
    const out = join(root, "cli.jsonl");
    expect(
      await quiet(() => runRagen(["sft", "data", "envs=Bandit", "chats=3", "oracle=1", `out=${out}`])),
    ).toBe(0);
    const written = readSftJsonl(out);
    expect(written).toHaveLength(3);
    expect(written.every((chat) => chat.envTag === "Bandit" && chat.fromOracle.every(Boolean))).toBe(true);
    expect(written[0]!.messages.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
    expect(await quiet(() => runRagen(["sft", "data", "chats=0"]))).toBe(2);
  });
});

describe("SFT training", () => {
  it("fine-tunes every weight: the loss goes down", async () => {
    const policy = await load();
    const { losses, adapters } = await fineTune(policy, drills, { mode: "full", ...training });
    expect(adapters).toBeUndefined();
    expect(losses).toHaveLength(6);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.9);
    policy.model.dispose();
  });

  it("fine-tunes LoRA adapters only; the saved adapter, reloaded and merged, gives the same logits", async () => {
    const policy = await load();
    const weight = "model.layers.0.self_attn.q_proj.weight";
    const before = await policy.model.param(weight).floats();
    const { losses, adapters } = await fineTune(policy, drills, {
      mode: "lora",
      ...training,
      lora: { rank: 4, alpha: 16, targets: ["q_proj", "v_proj", "down_proj"] },
    });
    expect(losses.at(-1)!).toBeLessThan(losses[0]! - 0.05);
    // The base weights did not move; only the adapters trained.
    expect(await policy.model.param(weight).floats()).toEqual(before);
    const adapted = await logitsOf(policy);

    const adapterDir = join(root, "adapter");
    await saveLoraAdapter(adapterDir, adapters!, {
      rank: 4,
      alpha: 16,
      targets: ["q_proj", "v_proj", "down_proj"],
      baseModel: baseDir,
    });
    const config = JSON.parse(readFileSync(join(adapterDir, "adapter_config.json"), "utf8"));
    expect(config).toMatchObject({
      peft_type: "LORA",
      r: 4,
      lora_alpha: 16,
      target_modules: ["q_proj", "v_proj", "down_proj"],
    });
    const file = parseSafetensors(readFileSync(join(adapterDir, "adapter_model.safetensors")));
    expect(file.info("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").shape).toEqual([
      4, 32,
    ]);
    expect(file.info("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight").shape).toEqual([32, 4]);
    expect(file.names()).toHaveLength(2 * 2 * 3);

    // Base + the saved adapter is the trained model.
    const reloaded = await load();
    loadLoraAdapter(reloaded.model, adapterDir);
    expect(maxDifference(await logitsOf(reloaded), adapted)).toBeLessThan(1e-6);
    // Merged into the weights, within float rounding.
    reloaded.model.mergeLora();
    expect(maxDifference(await logitsOf(reloaded), adapted)).toBeLessThan(1e-5);
    reloaded.model.dispose();

    // `ragen sft merge` saves the merged model as a Hugging Face folder that loads to the same logits.
    const mergedDir = join(root, "merged");
    const code = await quiet(() =>
      runRagen(["sft", "merge", `model=${baseDir}`, `adapter=${adapterDir}`, `out=${mergedDir}`]),
    );
    expect(code).toBe(0);
    const merged = await loadPolicy(mergedDir, await webGpuBackend());
    expect(maxDifference(await logitsOf(merged), adapted)).toBeLessThan(1e-5);
    merged.model.dispose();
    policy.model.dispose();
  });

  it("replaces an output folder whole, leaving no partial folders", async () => {
    const policy = await loadPolicy(baseDir, createCpuBackend());
    const out = join(root, "saved");
    await saveMergedPolicy(policy, out, undefined);
    writeFileSync(join(out, "stale.txt"), "from an earlier run");
    await saveMergedPolicy(policy, out, undefined);
    expect(existsSync(join(out, "stale.txt"))).toBe(false);
    expect(existsSync(join(out, "model.safetensors"))).toBe(true);
    const adapters = policy.model.attachLora({ rank: 2, alpha: 2 });
    const adapterDir = join(root, "adapter-twice");
    await saveLoraAdapter(adapterDir, adapters, { rank: 2, alpha: 2, targets: ["q_proj"], baseModel: "x" });
    writeFileSync(join(adapterDir, "stale.txt"), "old");
    await saveLoraAdapter(adapterDir, adapters, { rank: 2, alpha: 2, targets: ["q_proj"], baseModel: "x" });
    expect(readdirSync(adapterDir).sort()).toEqual(["adapter_config.json", "adapter_model.safetensors"]);
    expect(readdirSync(root).filter((name) => name.includes(".tmp-") || name.includes(".old-"))).toEqual([]);
    policy.model.dispose();
  });

  it("ragen sft train: a full run saves a Hugging Face folder and its losses; bad settings exit 2", async () => {
    const out = join(root, "full");
    const code = await quiet(() =>
      runRagen([
        "sft",
        "train",
        `model=${baseDir}`,
        `data=${dataPath}`,
        "mode=full",
        "steps=2",
        "batchSize=2",
        `out=${out}`,
        "device=cpu",
      ]),
    );
    expect(code).toBe(0);
    expect(existsSync(join(out, "config.json"))).toBe(true);
    expect(JSON.parse(readFileSync(join(out, "sft_losses.json"), "utf8")).losses).toHaveLength(2);
    expect(await quiet(() => runRagen(["sft", "train", "mode=qlora", `data=${dataPath}`]))).toBe(2);
    expect(await quiet(() => runRagen(["sft", "train", "steps=2"]))).toBe(2);
    expect(() => resolveSftTrainConfig(["data=x", "lora.targets=q_proj,wq"])).toThrow(/lora\.targets/);
    expect(sftLearningRate(resolveSftTrainConfig(["data=x"]), 820_000)).toBe(2e-3);
    expect(sftLearningRate(resolveSftTrainConfig(["data=x", "model=runs/sft-merged"]), 820_000)).toBe(2e-3);
    expect(
      sftLearningRate(resolveSftTrainConfig(["data=x", "model=Qwen/Qwen2.5-0.5B-Instruct"]), 494e6),
    ).toBe(1e-4);
    expect(
      sftLearningRate(
        resolveSftTrainConfig(["data=x", "mode=full", "model=Qwen/Qwen2.5-0.5B-Instruct"]),
        494e6,
      ),
    ).toBe(1e-5);
  });
});
