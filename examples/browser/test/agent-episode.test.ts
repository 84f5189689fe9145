import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { loadQwen2 } from "@ragen/models/node";
import { EnvManager, LocalModelPolicy, runRollout, VALIDATION_SEED } from "@ragen/rollout";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import { loadTokenizer } from "@ragen/tokenizer/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentEpisode } from "../src/agent/agent-episode.js";
import { CheckpointLoadError, loadCheckpoint } from "../src/agent/load-checkpoint.js";
import { AGENT_CHECKPOINTS, CHECKPOINT_FILES } from "../src/checkpoints.js";

// The page's loading and turn-by-turn play, checked in Node against the packages' own Node loaders and
// runRollout, on the CPU reference backend (the browser runs the same code on WebGPU).
const FROZENLAKE = AGENT_CHECKPOINTS.frozenlake!;
const FOLDER = join(import.meta.dirname, "..", FROZENLAKE.source);

let server: Server;
let baseUrl = "";
beforeAll(async () => {
  server = createServer((request, response) => {
    const name = (request.url ?? "").replace(/^\/model\//, "");
    if (!CHECKPOINT_FILES.includes(name)) {
      response.writeHead(404).end();
      return;
    }
    response.end(readFileSync(join(FOLDER, name)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());

describe("the page's agent, in Node", () => {
  it("loads the checkpoint over HTTP into the same model and tokenizer as the Node loaders", async () => {
    const backend = createCpuBackend();
    const fetched = await loadCheckpoint(new URL(`${baseUrl}/model/`), backend);
    const { model, folder } = await loadQwen2(FOLDER, backend);
    expect(fetched.config).toEqual(folder.config);
    const reference = await model.stateDict();
    const loaded = await fetched.model.stateDict();
    expect([...loaded.keys()]).toEqual([...reference.keys()]);
    for (const [name, values] of reference) {
      const other = loaded.get(name)!;
      // A plain loop: toEqual's element-by-element diff of ~800k floats takes seconds.
      const differing = values.filter((value, i) => value !== other[i]).length;
      expect(other.length, name).toBe(values.length);
      expect(differing, name).toBe(0);
    }
    const tokenizer = await loadTokenizer(FOLDER);
    const text =
      "<|im_start|>user\nP _ G<|im_end|>\n<think>The goal is right of me.</think><answer>Right</answer>";
    expect(fetched.tokenizer.encode(text, { allowSpecial: true })).toEqual(
      tokenizer.encode(text, { allowSpecial: true }),
    );
  });

  it("names the file that is missing", async () => {
    await expect(loadCheckpoint(new URL(`${baseUrl}/elsewhere/`), createCpuBackend())).rejects.toThrow(
      CheckpointLoadError,
    );
    await expect(loadCheckpoint(new URL(`${baseUrl}/elsewhere/`), createCpuBackend())).rejects.toThrow(
      /\/elsewhere\/(config\.json|model\.safetensors|tokenizer\.json|tokenizer_config\.json): HTTP 404/,
    );
  });

  it("plays turn by turn exactly the episode runRollout plays from the same seeds", async () => {
    const backend = createCpuBackend();
    const { model, tokenizer } = await loadCheckpoint(new URL(`${baseUrl}/model/`), backend);
    // The preset and rollout settings the checkpoint was trained with, over two turns.
    const preset = FROZENLAKE.trainedOn;
    const { maxActionsPerTurn, maxNewTokens, temperature } = FROZENLAKE;
    const settings = { maxTurns: 2, maxActionsPerTurn, maxNewTokens, temperature };
    const samplingSeed = 7;

    const episode = new AgentEpisode(preset, VALIDATION_SEED, tokenizer, { ...settings, samplingSeed });
    const policy = new LocalModelPolicy(model, tokenizer);
    while (episode.end === undefined) await episode.playTurn(policy);

    const manager = new EnvManager({ envGroups: 1, groupSize: 1, tags: [{ tag: preset, nGroups: 1 }] });
    const batch = await runRollout(manager, new LocalModelPolicy(model, tokenizer), tokenizer, {
      ...settings,
      mode: "val",
      seed: samplingSeed,
    });
    const reference = batch.trajectories[0]!;
    expect(reference.seed).toBe(VALIDATION_SEED);
    expect(episode.turns.length).toBe(reference.turns.length);
    episode.turns.forEach((turn, i) => {
      const expected = reference.turns[i]!;
      expect(turn.observation).toBe(expected.observation);
      expect(turn.response).toBe(expected.response);
      expect(turn.think).toBe(expected.think);
      expect(turn.executed).toEqual(expected.executed);
      expect(turn.reward).toBeCloseTo(expected.reward, 10);
      expect(turn.formatPenalized).toBe(expected.formatPenalized);
    });
    expect(episode.success).toBe(reference.success);
    expect(episode.actionsUsed).toBe(reference.numActions);
    expect(episode.turns[0]!.think.length).toBeGreaterThan(0);
    await expect(episode.playTurn(policy)).rejects.toThrow(/the episode is over/);
  });
});
