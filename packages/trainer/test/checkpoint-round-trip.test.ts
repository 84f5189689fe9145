import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  NormalSampler,
  QWEN2_5_0_5B_INSTRUCT_CONFIG,
  type Qwen2Config,
  Qwen2Model,
  Qwen2ValueModel,
} from "@ragen/models";
import { loadQwen2 } from "@ragen/models/node";
import { AdamW, type AdamWState, createCpuBackend, type Tensor } from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckpointParts } from "../src/index.js";
import {
  checkpointActorDir,
  findCheckpoint,
  loadCheckpointCritic,
  loadCheckpointOptimizers,
  saveCheckpoint,
} from "../src/node/checkpoint-files.js";

const config: Qwen2Config = {
  ...QWEN2_5_0_5B_INSTRUCT_CONFIG,
  vocabSize: 24,
  hiddenSize: 8,
  intermediateSize: 16,
  numHiddenLayers: 2,
  numAttentionHeads: 2,
  numKeyValueHeads: 1,
  headDim: 4,
  bosTokenId: 0,
  eosTokenId: 1,
  torchDtype: "float32",
};
const cpu = createCpuBackend();
const root = mkdtempSync(join(tmpdir(), "checkpoint-round-trip-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An optimiser with distinct moments for every parameter but the second, which never had a gradient. */
function optimizerWithMoments(params: Tensor[], seed: number, steps: number): AdamW {
  const sampler = new NormalSampler(seed);
  const optimizer = new AdamW(params, { lr: 1e-3 });
  optimizer.loadStateDict({
    steps,
    moments: params.map((p, i) =>
      i === 1 ? undefined : { m: sampler.normals(p.size, 1), v: sampler.normals(p.size, 1).map(Math.abs) },
    ),
  });
  return optimizer;
}

function parts(): Omit<CheckpointParts, "critic" | "optimizers"> & {
  critic: Qwen2ValueModel;
  optimizers: { actor: AdamW; critic: AdamW };
} {
  const actor = Qwen2Model.random(config, 1, cpu);
  const critic = Qwen2ValueModel.random(config, 2, cpu);
  return {
    actor,
    actorConfig: config,
    tokenizerFiles: { tokenizer: "{}", tokenizerConfig: undefined },
    critic,
    optimizers: {
      actor: optimizerWithMoments(actor.parameters(), 3, 7),
      critic: optimizerWithMoments(critic.parameters(), 4, 5),
    },
  };
}

function flat(state: AdamWState) {
  return { steps: state.steps, moments: state.moments.map((m) => m && { m: [...m.m], v: [...m.v] }) };
}

describe("a saved checkpoint", () => {
  it("gives back the actor, the critic and both optimisers' moments exactly", async () => {
    const saved = parts();
    const outDir = join(root, "run");
    await saveCheckpoint(outDir, saved, { step: 3, trainResets: 4, model: "tiny" });
    const found = findCheckpoint(outDir)!;
    expect(found.state).toEqual({ step: 3, trainResets: 4, model: "tiny" });

    const { model: actor } = await loadQwen2(checkpointActorDir(found.dir), cpu);
    expect(await actor.stateDict()).toEqual(await saved.actor.stateDict());
    const critic = loadCheckpointCritic(found.dir, config, cpu);
    expect(await critic.stateDict()).toEqual(await saved.critic.stateDict());

    const restored = {
      actor: new AdamW(actor.parameters(), { lr: 1e-3 }),
      critic: new AdamW(critic.parameters(), { lr: 1e-3 }),
    };
    loadCheckpointOptimizers(found.dir, restored);
    for (const name of ["actor", "critic"] as const) {
      expect(flat(await restored[name].stateDict())).toEqual(flat(await saved.optimizers[name].stateDict()));
    }
  });

  it("keeps an f16 actor's f32 master weights and its optimiser's loss scale", async () => {
    const actor = Qwen2Model.random(config, 5, cpu).toDtype("f16");
    const params = actor.parameters();
    const sampler = new NormalSampler(6);
    const optimizer = new AdamW(params, { lr: 1e-3, lossScaling: true });
    optimizer.loadStateDict({
      steps: 4,
      moments: params.map((p) => ({
        m: sampler.normals(p.size, 1),
        v: sampler.normals(p.size, 1).map(Math.abs),
        // Masters between f16 values: a copy widened from the weights would lose them.
        master: sampler.normals(p.size, 1),
      })),
      lossScale: { scale: 2 ** 11, finiteSteps: 17 },
    });
    const outDir = join(root, "f16");
    await saveCheckpoint(
      outDir,
      {
        actor,
        actorConfig: config,
        tokenizerFiles: { tokenizer: "{}", tokenizerConfig: undefined },
        critic: undefined,
        optimizers: { actor: optimizer },
      },
      { step: 4, trainResets: 4, model: "tiny" },
    );
    const { model: loaded } = await loadQwen2(checkpointActorDir(findCheckpoint(outDir)!.dir), cpu);
    loaded.toDtype("f16");
    const restored = { actor: new AdamW(loaded.parameters(), { lr: 1e-3, lossScaling: true }) };
    loadCheckpointOptimizers(findCheckpoint(outDir)!.dir, restored);
    const [before, after] = [await optimizer.stateDict(), await restored.actor.stateDict()];
    expect(after.lossScale).toEqual({ scale: 2 ** 11, finiteSteps: 17 });
    expect(after.moments.map((m) => m && [...m.master!])).toEqual(
      before.moments.map((m) => m && [...m.master!]),
    );
    expect(await loaded.stateDict()).toEqual(await actor.stateDict());
  });

  it("that fails reading a moment leaves no partial folder and names the file and the moment", async () => {
    const saved = parts();
    const moment = saved.optimizers.critic.moments(2)!.v;
    Object.assign(moment, { floats: () => Promise.reject(new Error("device lost")) });
    const outDir = join(root, "failing");
    await expect(saveCheckpoint(outDir, saved, { step: 1, trainResets: 1, model: "tiny" })).rejects.toThrow(
      /saving the checkpoint failed: .*checkpoint\.partial[/\\]optimizers\.safetensors: tensor "critic\.2\.v": reading its values failed \(device lost\)/,
    );
    expect(readdirSync(outDir)).toEqual([]);
    expect(existsSync(join(outDir, "checkpoint.partial"))).toBe(false);
  });
});
