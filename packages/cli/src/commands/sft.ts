/**
 * `ragen sft data | train | merge`: SFT chats from the envs' oracles, fine-tuning (full or LoRA) on
 * them, and merging a saved LoRA adapter into its base model.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  ConfigError,
  type ConfigSchema,
  listEnvs,
  listPresets,
  parseList,
  parseOverrides,
  parseTagValues,
  validateConfig,
} from "@ragen/envs";
import { ProgressBar } from "@ragen/logging";
import { writeFileAtomic } from "@ragen/logging/node";
import { QWEN2_LINEAR_MODULES } from "@ragen/models";
import { generateSftDataset } from "@ragen/sft";
import {
  ADAPTER_CONFIG_FILE,
  fineTune,
  type LoraTarget,
  loadLoraAdapter,
  readAdapterConfig,
  readSftJsonl,
  saveLoraAdapter,
  saveMergedPolicy,
  writeSftJsonl,
} from "@ragen/sft/node";
import { type Backend, createCpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import { EMBEDDED_MODEL, parameterCount, SMALL_MODEL_PARAMETERS } from "@ragen/trainer";
import { findCheckpoint, loadPolicy } from "@ragen/trainer/node";
import { describeConfigFields } from "./schema-help.js";
import { commandCwd, UsageError } from "./usage.js";

const device = {
  enum: ["webgpu", "cpu"],
  default: "webgpu",
  description: "webgpu (a GPU, or lavapipe on CPU-only machines) or cpu (the pure-TS reference backend)",
};

export const sftDataSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    envs: {
      type: "array",
      items: { type: "string", minLength: 1 },
      minItems: 1,
      default: ["FrozenLake", "Bandit"],
      description: "Env tags to make chats on",
    },
    chats: {
      type: "object",
      additionalProperties: { type: "integer", minimum: 1 },
      default: {},
      description: "Chats per env: N for every env, or Tag=N,Tag=N (default 400)",
    },
    oracle: {
      type: "object",
      additionalProperties: { type: "number", minimum: 0, maximum: 1 },
      default: {},
      description: "Probability a turn's action is the oracle's: p, or Tag=p,Tag=p (default 0.3)",
    },
    oracleChoice: {
      enum: ["turn", "chat"],
      default: "turn",
      description: "Draw oracle-or-random every turn, or once per chat (every turn then follows the first)",
    },
    maxTurns: {
      type: "integer",
      minimum: 1,
      maximum: 100,
      default: 5,
      description: "Turns per chat at most",
    },
    actionsPerTurn: {
      type: "integer",
      minimum: 1,
      maximum: 10,
      default: 1,
      description:
        'FrozenLake moves per answer, joined by "||" (train with rollout.maxActionsPerTurn to match); other envs answer one',
    },
    randomActionsPerTurn: {
      type: ["integer", "null"],
      minimum: 1,
      maximum: 10,
      default: null,
      description: "FrozenLake moves a random (non-oracle) answer tries (null: actionsPerTurn)",
    },
    seed: {
      type: "integer",
      minimum: 0,
      default: 100000,
      description: "First env seed (away from the validation seeds 123, 124, ...)",
    },
    out: { type: "string", minLength: 1, default: "sft.jsonl", description: "The JSONL file to write" },
  },
} satisfies ConfigSchema;

export const sftTrainSchema = {
  type: "object",
  additionalProperties: false,
  required: ["data"],
  properties: {
    model: {
      type: "string",
      minLength: 1,
      default: EMBEDDED_MODEL,
      description: '"embedded", a Hugging Face folder or a Hub repo id',
    },
    data: { type: "string", minLength: 1, description: "SFT JSONL (ragen sft data)" },
    mode: {
      enum: ["full", "lora"],
      default: "lora",
      description: "Train every weight, or LoRA adapters only",
    },
    steps: { type: "integer", minimum: 1, default: 100, description: "Optimiser steps" },
    batchSize: { type: "integer", minimum: 1, default: 8, description: "Chats per step" },
    lr: {
      type: ["number", "null"],
      exclusiveMinimum: 0,
      default: null,
      description:
        "Learning rate (null: 2e-3 for models under 50M parameters; 1e-4 LoRA, 1e-5 full otherwise)",
    },
    decay: {
      enum: ["none", "linear"],
      default: "none",
      description: "linear: down to a tenth by the last step",
    },
    seed: { type: "integer", minimum: 0, default: 0, description: "Batch order and adapter initialisation" },
    lora: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        rank: { type: "integer", minimum: 1, maximum: 4096, default: 8, description: "LoRA rank r" },
        alpha: {
          type: "number",
          exclusiveMinimum: 0,
          default: 16,
          description: "LoRA alpha (scale alpha / r)",
        },
        targets: {
          type: "array",
          items: { enum: [...QWEN2_LINEAR_MODULES] },
          minItems: 1,
          default: [...QWEN2_LINEAR_MODULES],
          description: "Linear modules with adapters",
        },
        merge: {
          type: "boolean",
          default: false,
          description: "Save the merged model (a Hugging Face folder) instead of the adapter",
        },
      },
    },
    out: { type: "string", minLength: 1, default: "runs/sft", description: "Output folder" },
    device,
  },
} satisfies ConfigSchema;

export const sftMergeSchema = {
  type: "object",
  additionalProperties: false,
  required: ["adapter", "out"],
  properties: {
    model: {
      type: ["string", "null"],
      minLength: 1,
      default: null,
      description:
        'The adapter\'s base: "embedded", a Hugging Face folder or a Hub repo id (null: the one its adapter_config.json names, base_model_name_or_path)',
    },
    adapter: {
      type: "string",
      minLength: 1,
      description:
        "Adapter folder (adapter_config.json, adapter_model.safetensors): a LoRA fine-tune, a LoRA training run's checkpoint/ folder, or the run folder itself",
    },
    out: { type: "string", minLength: 1, description: "The merged Hugging Face folder to write" },
    device,
  },
} satisfies ConfigSchema;

interface SftDataConfig {
  envs: string[];
  chats: Record<string, number>;
  oracle: Record<string, number>;
  oracleChoice: "turn" | "chat";
  maxTurns: number;
  actionsPerTurn: number;
  randomActionsPerTurn: number | null;
  seed: number;
  out: string;
}

interface SftTrainConfig {
  model: string;
  data: string;
  mode: "full" | "lora";
  steps: number;
  batchSize: number;
  lr: number | null;
  decay: "none" | "linear";
  seed: number;
  lora: { rank: number; alpha: number; targets: LoraTarget[]; merge: boolean };
  out: string;
  device: "webgpu" | "cpu";
}

interface SftMergeConfig {
  model: string | null;
  adapter: string;
  out: string;
  device: "webgpu" | "cpu";
}

const DEFAULT_CHATS = 400;
const DEFAULT_ORACLE = 0.3;

const HELP: Record<string, string> = {
  data: `usage: ragen sft data [key=value ...]

SFT chats in RAGEN's prompt format from the envs' oracles: each turn a short templated thought and one
action, the oracle's with probability \`oracle\`, else a random one. Writes JSONL, one chat per line.
e.g. ragen sft data envs=FrozenLake,Bandit chats=400 oracle=FrozenLake=0.3,Bandit=0.2 out=sft.jsonl

fields (default):
${describeConfigFields(sftDataSchema)}`,
  train: `usage: ragen sft train data=<file.jsonl> [key=value ...]

Fine-tunes a model on SFT chats (loss on the assistant's tokens only), fully or with LoRA adapters.
mode=full saves a Hugging Face folder; mode=lora saves the adapter in PEFT's layout (adapter_config.json,
adapter_model.safetensors), or with lora.merge=true the merged model.
e.g. ragen sft train model=embedded data=sft.jsonl mode=lora lora.rank=8 steps=200 out=runs/sft

fields (default):
${describeConfigFields(sftTrainSchema)}`,
  merge: `usage: ragen sft merge [model=<base>] adapter=<folder> out=<folder>

Folds a LoRA adapter (PEFT layout) into its base model and saves a Hugging Face folder. The adapter may
be a LoRA training run (ragen train lora.rank=64 ...): its folder or its checkpoint/ folder.
e.g. ragen sft merge adapter=runs/lora-run out=runs/lora-run-merged

fields (default):
${describeConfigFields(sftMergeSchema)}`,
};

/** A bad value of a field given on the command line. */
function fieldError(field: string, message: string): ConfigError {
  return new ConfigError("command line", [{ field, message, source: "command line" }]);
}

/** One number for every env, or Tag=value pairs, as a map over `envs`; the schema checks the values. */
function perEnv(field: string, value: unknown, envs: readonly string[], fallback: number): unknown {
  if (value === undefined) return Object.fromEntries(envs.map((env) => [env, fallback]));
  if (typeof value === "number") return Object.fromEntries(envs.map((env) => [env, value]));
  return parseTagValues(field, value);
}

export function resolveSftDataConfig(args: readonly string[]): SftDataConfig {
  const fields = parseOverrides(args);
  if (fields.envs !== undefined) fields.envs = parseList(fields.envs);
  const envs = (Array.isArray(fields.envs) ? fields.envs : ["FrozenLake", "Bandit"]) as string[];
  fields.chats = perEnv("chats", fields.chats, envs, DEFAULT_CHATS);
  fields.oracle = perEnv("oracle", fields.oracle, envs, DEFAULT_ORACLE);
  const config = validateConfig<SftDataConfig>("sft data", sftDataSchema, fields);
  const known = new Set([...listEnvs(), ...Object.keys(listPresets())]);
  const unknown = config.envs.filter((env) => !known.has(env));
  if (unknown.length > 0)
    throw fieldError("envs", `unknown env "${unknown.join(", ")}" (ragen envs lists them)`);
  for (const [field, map] of [
    ["chats", config.chats],
    ["oracle", config.oracle],
  ] as const) {
    const stray = Object.keys(map).filter((env) => !config.envs.includes(env));
    if (stray.length > 0)
      throw fieldError(field, `${stray.join(", ")} is not among envs (${config.envs.join(", ")})`);
    const missing = config.envs.filter((env) => !(env in map));
    if (missing.length > 0) throw fieldError(field, `no value for ${missing.join(", ")}`);
  }
  if (config.randomActionsPerTurn !== null && config.randomActionsPerTurn > config.actionsPerTurn)
    throw fieldError(
      "randomActionsPerTurn",
      `${config.randomActionsPerTurn} is more than actionsPerTurn (${config.actionsPerTurn})`,
    );
  return config;
}

export function resolveSftTrainConfig(args: readonly string[]): SftTrainConfig {
  const fields = parseOverrides(args);
  const lora = fields.lora as Record<string, unknown> | undefined;
  if (lora?.targets !== undefined) lora.targets = parseList(lora.targets);
  return validateConfig<SftTrainConfig>("sft train", sftTrainSchema, fields);
}

export function resolveSftMergeConfig(args: readonly string[]): SftMergeConfig {
  return validateConfig<SftMergeConfig>("sft merge", sftMergeSchema, parseOverrides(args));
}

/**
 * The learning rate when none is set: the warm start's for small models (the embedded one and others of
 * its size, see `SMALL_MODEL_PARAMETERS`), small ones for pretrained-size models.
 */
export function sftLearningRate(config: Pick<SftTrainConfig, "lr" | "mode">, parameterCount: number): number {
  if (config.lr !== null) return config.lr;
  if (parameterCount < SMALL_MODEL_PARAMETERS) return 2e-3;
  return config.mode === "lora" ? 1e-4 : 1e-5;
}

async function backendFor(name: "webgpu" | "cpu"): Promise<Backend> {
  return name === "cpu" ? createCpuBackend() : webGpuBackend();
}

/** A path typed by the user, from the folder the command was typed in; a model that is no path stays as is. */
const fromCwd = (path: string) => resolve(commandCwd(), path);

export async function sftData(config: SftDataConfig): Promise<string> {
  const chats = generateSftDataset({
    chats: config.chats,
    oracle: config.oracle,
    firstSeed: config.seed,
    maxTurns: config.maxTurns,
    actionsPerTurn: config.actionsPerTurn,
    // null: generateSftConversations' default, actionsPerTurn.
    randomActionsPerTurn: config.randomActionsPerTurn ?? undefined,
    oracleChoice: config.oracleChoice,
  });
  const out = fromCwd(config.out);
  writeSftJsonl(out, chats);
  const perTag = config.envs.map((env) => `${env} ${config.chats[env]} (oracle ${config.oracle[env]})`);
  console.log(`wrote ${chats.length} chats to ${out}: ${perTag.join(", ")}`);
  return out;
}

export async function sftTrain(config: SftTrainConfig): Promise<{ out: string; losses: number[] }> {
  const chats = readSftJsonl(fromCwd(config.data));
  const model = config.model === EMBEDDED_MODEL ? config.model : localOrHub(config.model);
  const policy = await loadPolicy(model, await backendFor(config.device));
  const lr = sftLearningRate(config, parameterCount(policy.model));
  const out = fromCwd(config.out);
  console.log(
    `RAGEN.ts sft — ${config.mode === "lora" ? `LoRA r=${config.lora.rank}` : "full"} fine-tuning of ${config.model} on ${chats.length} chats, ${config.steps} steps, lr ${lr}`,
  );
  const bar = new ProgressBar({ label: "sft", total: config.steps, stream: process.stderr });
  try {
    const { losses, adapters } = await fineTune(policy, chats, {
      mode: config.mode,
      steps: config.steps,
      batchSize: config.batchSize,
      lr,
      decay: config.decay,
      seed: config.seed,
      lora: config.lora,
      onStep: (_, loss) => bar.tick(1, `loss ${loss.toFixed(3)}`),
    });
    bar.finish();
    if (adapters && !config.lora.merge)
      await saveLoraAdapter(out, adapters, {
        rank: config.lora.rank,
        alpha: config.lora.alpha,
        targets: config.lora.targets,
        baseModel: config.model,
      });
    else await saveMergedPolicy(policy, out, adapters);
    writeFileAtomic(join(out, "sft_losses.json"), `${JSON.stringify({ lr, losses })}\n`);
    console.log(`loss: first ${losses[0]!.toFixed(3)}, last ${losses.at(-1)!.toFixed(3)}; saved ${out}`);
    return { out, losses };
  } finally {
    policy.model.dispose();
  }
}

export async function sftMerge(config: SftMergeConfig): Promise<string> {
  const adapterDir = adapterFolderOf(fromCwd(config.adapter));
  const base = config.model ?? readAdapterConfig(adapterDir).baseModel;
  if (!base)
    throw fieldError("model", `${adapterDir}'s adapter_config.json names no base model: pass model=<base>`);
  const model = base === EMBEDDED_MODEL ? base : localOrHub(base);
  const policy = await loadPolicy(model, await backendFor(config.device));
  const out = fromCwd(config.out);
  try {
    const adapters = loadLoraAdapter(policy.model, adapterDir);
    await saveMergedPolicy(policy, out, adapters);
  } finally {
    policy.model.dispose();
  }
  console.log(`merged ${adapterDir} into ${base}; saved ${out}`);
  return out;
}

/**
 * The folder holding the adapter files: `dir` itself (an adapter, a LoRA run's checkpoint/), or the
 * checkpoint of the training run `dir` is.
 */
function adapterFolderOf(dir: string): string {
  if (existsSync(join(dir, ADAPTER_CONFIG_FILE))) return dir;
  const checkpoint = findCheckpoint(dir);
  if (checkpoint && existsSync(join(checkpoint.dir, ADAPTER_CONFIG_FILE))) return checkpoint.dir;
  throw fieldError(
    "adapter",
    checkpoint
      ? `${dir} is a run that trained every weight: its model is ${join(checkpoint.dir, "actor")}, nothing to merge`
      : `${dir} has no ${ADAPTER_CONFIG_FILE}: not a LoRA adapter, nor a LoRA training run or its checkpoint`,
  );
}

/** A model reference: a folder relative to where the command was typed if one is there, else a Hub id. */
function localOrHub(reference: string): string {
  const local = fromCwd(reference);
  return existsSync(local) ? local : reference;
}

export async function sftCommand(args: readonly string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === undefined || action === "--help" || action === "-h") {
    const usage = "usage: ragen sft data | train | merge [key=value ...]   (ragen sft <action> --help)";
    if (action === undefined) throw new UsageError(`which action?\n${usage}`);
    console.log(`${usage}\n\n${HELP.data}\n\n${HELP.train}\n\n${HELP.merge}`);
    return;
  }
  if (!(action in HELP)) throw new UsageError(`unknown action "${action}": use data, train or merge`);
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(HELP[action]);
    return;
  }
  if (action === "data") await sftData(resolveSftDataConfig(rest));
  else if (action === "train") await sftTrain(resolveSftTrainConfig(rest));
  else await sftMerge(resolveSftMergeConfig(rest));
}
