import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Qwen2Config, Qwen2ValueModel, qwen2ParameterShapes, serializeSafetensors } from "@ragen/models";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import { loadCheckpointCritic } from "../src/node/checkpoint-files.js";

const config = {
  vocabSize: 24,
  hiddenSize: 8,
  intermediateSize: 16,
  numHiddenLayers: 1,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  rmsNormEps: 1e-6,
  ropeTheta: 10000,
  tieWordEmbeddings: true,
  initializerRange: 0.1,
} as Qwen2Config;
const cpu = createCpuBackend();
const root = mkdtempSync(join(tmpdir(), "checkpoint-critic-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes a checkpoint folder whose critic file holds `weights` (shapes from the config unless overridden). */
function checkpointWith(
  name: string,
  weights: Map<string, Float32Array>,
  shapes: Record<string, number[]> = {},
): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const known = new Map(qwen2ParameterShapes(config));
  known.set("score.weight", [1, config.hiddenSize]);
  known.set("score.bias", [1]);
  const tensors = new Map(
    [...weights].map(([tensorName, data]) => [
      tensorName,
      { dtype: "F32" as const, shape: shapes[tensorName] ?? known.get(tensorName) ?? [data.length], data },
    ]),
  );
  writeFileSync(join(dir, "critic.safetensors"), serializeSafetensors(tensors));
  return dir;
}

async function criticWeights(): Promise<Map<string, Float32Array>> {
  return Qwen2ValueModel.random(config, 3, cpu).stateDict();
}

describe("loadCheckpointCritic", () => {
  it("loads a sound critic with the values it was saved with", async () => {
    const weights = await criticWeights();
    const critic = loadCheckpointCritic(checkpointWith("sound", weights), config, cpu);
    expect(await critic.scoreWeight.floats()).toEqual(weights.get("score.weight"));
  });

  it("refuses a transposed tensor, naming the file, tensor and shapes", async () => {
    const dir = checkpointWith("transposed", await criticWeights(), {
      "model.embed_tokens.weight": [config.hiddenSize, config.vocabSize],
    });
    expect(() => loadCheckpointCritic(dir, config, cpu)).toThrow(
      /critic\.safetensors: tensor "model\.embed_tokens\.weight" has shape \[8, 24\], expected \[24, 8\]/,
    );
  });

  it("refuses non-finite weights and a missing or misshapen value head", async () => {
    const nan = await criticWeights();
    nan.get("model.norm.weight")![2] = Number.NaN;
    expect(() => loadCheckpointCritic(checkpointWith("nan", nan), config, cpu)).toThrow(
      /critic\.safetensors: tensor "model\.norm\.weight" holds a non-finite value \(NaN at index 2\)/,
    );
    const noHead = await criticWeights();
    noHead.delete("score.bias");
    expect(() => loadCheckpointCritic(checkpointWith("no-head", noHead), config, cpu)).toThrow(
      /missing weights: score\.bias/,
    );
    const wideHead = await criticWeights();
    wideHead.set("score.weight", new Float32Array(2 * config.hiddenSize));
    expect(() =>
      loadCheckpointCritic(checkpointWith("wide-head", wideHead, { "score.weight": [2, 8] }), config, cpu),
    ).toThrow(/tensor "score\.weight" has shape \[2, 8\], expected \[1, 8\]/);
  });
});
