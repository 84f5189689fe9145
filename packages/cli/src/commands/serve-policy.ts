/**
 * `ragen serve-policy model=<name|folder> [port=8000] [host=127.0.0.1]`: this project's model behind
 * vLLM's HTTP API (see ../policy-server.ts), for VllmCompletionsPolicy and vLLM clients.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type ConfigSchema, parseOverrides, validateConfig } from "@ragen/envs";
import { createCpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import { EMBEDDED_MODEL } from "@ragen/trainer";
import { loadPolicy } from "@ragen/trainer/node";
import { startPolicyServer } from "../policy-server.js";
import { describeConfigFields } from "./schema-help.js";
import { commandCwd } from "./usage.js";

export const servePolicySchema = {
  type: "object",
  additionalProperties: false,
  required: ["model"],
  properties: {
    model: {
      type: "string",
      minLength: 1,
      description:
        '"embedded", a Hugging Face folder, a Hub repo id, a LoRA adapter folder (merged into its base) or a run\'s checkpoint/actor',
    },
    name: {
      type: ["string", "null"],
      minLength: 1,
      default: null,
      description: "The name requests give in `model` for the base model (null: the model argument as typed)",
    },
    port: { type: "integer", minimum: 0, maximum: 65535, default: 8000, description: "0 picks a free port" },
    host: {
      type: "string",
      minLength: 1,
      default: "127.0.0.1",
      description: "The address to bind; the admin endpoints check no credentials: private networks only",
    },
    maxBatch: {
      type: "integer",
      minimum: 1,
      default: 16,
      description: "Prompts the model runs at once, at most",
    },
    seed: { type: "integer", default: 0, description: "Where the seeds of requests that send none start" },
    device: {
      enum: ["webgpu", "cpu"],
      default: "webgpu",
      description: "webgpu (a GPU, or lavapipe on CPU-only machines) or cpu (the pure-TS reference backend)",
    },
  },
} satisfies ConfigSchema;

export interface ServePolicyConfig {
  model: string;
  name: string | null;
  port: number;
  host: string;
  maxBatch: number;
  seed: number;
  device: "webgpu" | "cpu";
}

export const SERVE_POLICY_HELP = `usage: ragen serve-policy model=<name|folder> [port=8000] [host=127.0.0.1] [key=value ...]

Serves a model through vLLM's HTTP API, token in, token out, sampled by this project's sampler:
  POST /v1/completions        prompt as token ids; max_tokens, temperature, top_p, top_k, seed,
                              stop_token_ids, logprobs: 0, return_token_ids, return_tokens_as_token_ids
  GET  /v1/models, GET /health
  POST /v1/load_lora_adapter   {"lora_name", "lora_path"}: a PEFT adapter folder this project wrote;
  POST /v1/unload_lora_adapter {"lora_name"}; requests pick an adapter by its name in "model".
Drive it with VllmCompletionsPolicy of @ragen/rollout. The admin endpoints check no credentials: keep
the server on loopback (the default) or a private network.
e.g. ragen serve-policy model=embedded port=8000

fields (default):
${describeConfigFields(servePolicySchema)}`;

export function resolveServePolicyConfig(args: readonly string[]): ServePolicyConfig {
  return validateConfig<ServePolicyConfig>("serve-policy", servePolicySchema, parseOverrides(args));
}

export async function servePolicyCommand(args: readonly string[]): Promise<void> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(SERVE_POLICY_HELP);
    return;
  }
  const config = resolveServePolicyConfig(args);
  const local = resolve(commandCwd(), config.model);
  const location = config.model !== EMBEDDED_MODEL && existsSync(local) ? local : config.model;
  const backend = config.device === "cpu" ? createCpuBackend() : await webGpuBackend();
  const policy = await loadPolicy(location, backend);
  const server = await startPolicyServer({
    model: policy.model,
    tokenizer: policy.tokenizer,
    modelName: config.name ?? config.model,
    host: config.host,
    port: config.port,
    maxModelLength: policy.config.maxPositionEmbeddings,
    maxBatch: config.maxBatch,
    seed: config.seed,
  });
  console.log(`serving ${policy.source} as "${config.name ?? config.model}" at ${server.url} (Ctrl-C stops)`);
  if (!["127.0.0.1", "localhost", "::1"].includes(config.host))
    console.error(
      `ragen serve-policy: listening on ${config.host}: anyone who reaches it can load adapters; keep it on a private network`,
    );
  await new Promise<void>((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await server.close();
  policy.model.dispose();
}
