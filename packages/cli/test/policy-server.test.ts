/**
 * startPolicyServer with the embedded model, driven by VllmCompletionsPolicy over HTTP on 127.0.0.1:
 * at temperature 0 it samples what LocalModelPolicy samples with the same weights, and an adapter
 * published to it (AdapterPublisher, vLLM's admin endpoints) changes its outputs to the adapted model's
 * until it is unloaded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadLoraAdapter, writeLoraAdapterFiles } from "@ragen/models/node";
import {
  AdapterPublisher,
  LocalModelPolicy,
  type PolicyOutput,
  type PolicyPrompt,
  UnknownAdapterError,
  VllmCompletionsPolicy,
} from "@ragen/rollout";
import { createCpuBackend } from "@ragen/tensor-webgpu";
import type { LoadedPolicy } from "@ragen/trainer";
import { loadPolicy } from "@ragen/trainer/node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runRagen } from "../src/commands/main.js";
import { resolveServePolicyConfig } from "../src/commands/serve-policy.js";
import { type PolicyServer, startPolicyServer } from "../src/policy-server.js";

const root = mkdtempSync(join(tmpdir(), "ragen-policy-server-"));
let served: LoadedPolicy;
let reference: LoadedPolicy;
let server: PolicyServer;
let remote: VllmCompletionsPolicy;

beforeAll(async () => {
  // Two copies of the weights: the server's, and the local reference's (which gets the adapter locally).
  served = await loadPolicy("embedded", createCpuBackend());
  reference = await loadPolicy("embedded", createCpuBackend());
  server = await startPolicyServer({
    model: served.model,
    tokenizer: served.tokenizer,
    modelName: "embedded",
    port: 0,
  });
  remote = new VllmCompletionsPolicy({
    replicas: [server.url],
    model: "embedded",
    tokenizer: served.tokenizer,
    timeoutMs: 60_000,
  });
});

afterAll(async () => {
  remote?.close();
  await server?.close();
  served?.model.dispose();
  reference?.model.dispose();
  rmSync(root, { recursive: true, force: true });
});

function prompts(): PolicyPrompt[] {
  return ["FrozenLake: reach the goal.", "Bandit: pick an arm."].map((content, i) => ({
    tokens: Int32Array.from([
      ...reference.tokenizer.encodeChat([{ role: "user", content }], { addGenerationPrompt: true }),
      ...reference.tokenizer.encode("<think>"),
    ]),
    messages: [{ role: "user", content }],
    responsePrefix: "<think>",
    episodeId: `e${i}`,
  }));
}

const greedy = { maxNewTokens: 6, temperature: 0 };

function expectSameOutputs(actual: PolicyOutput[], expected: PolicyOutput[]): void {
  expect(actual.map((o) => Array.from(o.tokens))).toEqual(expected.map((o) => Array.from(o.tokens)));
  for (const [i, output] of actual.entries()) {
    expect(output.logProbs.length).toBe(expected[i]!.logProbs.length);
    for (const [j, logProb] of output.logProbs.entries())
      expect(Math.abs(logProb - expected[i]!.logProbs[j]!)).toBeLessThan(1e-4);
  }
}

/** Adapter weights far from zero, so the adapted model visibly differs from the base. */
async function writeAdapter(dir: string): Promise<void> {
  const targets = ["q_proj", "v_proj", "up_proj"] as const;
  const adapters = reference.model.attachLora({ rank: 4, alpha: 8, targets: [...targets], seed: 7 });
  let state = 12345;
  const uniform = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31 - 0.5;
  };
  const values = new Map(
    [...adapters.peftWeights()].map(([name, tensor]) => [
      name,
      Float32Array.from({ length: tensor.size }, () => uniform() * 0.6),
    ]),
  );
  adapters.load(values, "test adapter");
  try {
    await writeLoraAdapterFiles(dir, adapters, {
      rank: 4,
      alpha: 8,
      targets: [...targets],
      baseModel: "embedded",
    });
  } finally {
    reference.model.detachLora();
  }
}

describe("startPolicyServer", () => {
  it("samples at temperature 0 the tokens and log-probs LocalModelPolicy samples", async () => {
    const local = await new LocalModelPolicy(reference.model, reference.tokenizer).generate(
      prompts(),
      greedy,
    );
    const viaHttp = await remote.generate(prompts(), greedy);
    expect(viaHttp.every((o) => o.tokens.length > 0)).toBe(true);
    expectSameOutputs(viaHttp, local);
  });

  it("reproduces a seeded request at temperature 1", async () => {
    const sampling = { maxNewTokens: 6, temperature: 1, seed: 11 };
    const first = await remote.generate(prompts(), sampling);
    const again = await remote.generate(prompts(), sampling);
    expect(again.map((o) => Array.from(o.tokens))).toEqual(first.map((o) => Array.from(o.tokens)));
  });

  it("samples with a published adapter as the adapted model does, and as the base model once it is unloaded", async () => {
    const dir = mkdtempSync(join(root, "adapter-"));
    await writeAdapter(dir);
    const base = await remote.generate(prompts(), greedy);

    const publisher = new AdapterPublisher({ replicas: [server.url], server: "vllm" });
    const adapter = await publisher.publish("agent", 1, dir);
    expect(server.adapters()).toEqual([adapter]);
    remote.useAdapter(adapter);
    const adapted = await remote.generate(prompts(), greedy);

    loadLoraAdapter(reference.model, dir);
    try {
      expectSameOutputs(
        adapted,
        await new LocalModelPolicy(reference.model, reference.tokenizer).generate(prompts(), greedy),
      );
    } finally {
      reference.model.detachLora();
    }
    // The adapter changed what the model samples (its log-probs, at least).
    const firstLogProbs = (outputs: PolicyOutput[]) => outputs.map((o) => o.logProbs[0]!);
    const gaps = firstLogProbs(adapted).map((logProb, i) => Math.abs(logProb - firstLogProbs(base)[i]!));
    expect(Math.max(...gaps)).toBeGreaterThan(1e-3);

    await publisher.unload(adapter);
    expect(server.adapters()).toEqual([]);
    await expect(remote.generate(prompts(), greedy)).rejects.toBeInstanceOf(UnknownAdapterError);
    remote.useAdapter(undefined);
    expectSameOutputs(await remote.generate(prompts(), greedy), base);
  });

  it("answers vLLM's errors for what it does not serve", async () => {
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { error: { message: string } } };
    };
    const text = await post("/v1/completions", { model: "embedded", prompt: "hello", max_tokens: 2 });
    expect(text.status).toBe(400);
    expect(text.body.error.message).toMatch(/token ids/);
    const unknown = await post("/v1/completions", { model: "nope@1", prompt: [1, 2], max_tokens: 2 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toContain("nope@1");
    const missing = await post("/v1/load_lora_adapter", {
      lora_name: "x@1",
      lora_path: join(root, "absent"),
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toMatch(/adapter_config\.json/);
    expect((await post("/v1/unload_lora_adapter", { lora_name: "x@1" })).status).toBe(404);
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
  });

  it("binds 127.0.0.1 by default, and the command reads its fields", async () => {
    expect(server.host).toBe("127.0.0.1");
    expect(resolveServePolicyConfig(["model=embedded"])).toMatchObject({
      model: "embedded",
      port: 8000,
      host: "127.0.0.1",
    });
    expect(() => resolveServePolicyConfig(["port=8000"])).toThrow(/model/);
    const logs = vi.spyOn(console, "log").mockImplementation(() => {});
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(await runRagen(["--help"])).toBe(0);
      expect(await runRagen(["serve-policy", "--help"])).toBe(0);
      const printed = logs.mock.calls.map((call) => String(call[0])).join("\n");
      expect(printed).toContain("  serve-policy ");
      expect(printed).toContain("POST /v1/completions");
      expect(await runRagen(["serve-policy", "port=1"])).toBe(2);
      expect(errors.mock.calls.map((call) => String(call[0])).join("\n")).toMatch(/model/);
    } finally {
      logs.mockRestore();
      errors.mockRestore();
    }
  });
});
