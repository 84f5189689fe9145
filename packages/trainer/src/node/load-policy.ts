/**
 * Models from disk or the Hub: the embedded tiny checkpoint shipped with this package, a local Hugging
 * Face folder, a Hub repo id (downloaded into the standard Hugging Face cache), or a LoRA adapter folder
 * in PEFT's layout (`ragen sft train mode=lora`, a LoRA run's checkpoint) on the base model it names.
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { downloadFile } from "@huggingface/hub";
import { parseQwen2Config, qwen2ParameterShapes } from "@ragen/models";
import {
  ADAPTER_CONFIG_FILE,
  CONFIG_FILE,
  isLoraAdapterFolder,
  loadLoraAdapter,
  loadQwen2,
  readAdapterConfig,
  resolveModel,
  TOKENIZER_FILE,
} from "@ragen/models/node";
import type { Backend } from "@ragen/tensor-webgpu";
import type { Tokenizer } from "@ragen/tokenizer";
import { loadTokenizer } from "@ragen/tokenizer/node";
import { EMBEDDED_MODEL_DIR } from "../embedded-model.js";
import type { LoadedPolicy } from "../run/policy.js";
import { EMBEDDED_MODEL } from "../settings/fields.js";

/** The folder or Hub id a model name stands for ("embedded" is the shipped checkpoint). */
export function modelLocation(name: string): string {
  return name === EMBEDDED_MODEL ? EMBEDDED_MODEL_DIR : name;
}

/** `name`: "embedded", a folder, a Hub repo id, or a LoRA adapter folder. */
export async function loadPolicy(
  name: string,
  backend: Backend,
  onProgress?: (loaded: number, total: number) => void,
): Promise<LoadedPolicy> {
  const adapterDir = adapterFolder(name);
  if (adapterDir) return loadAdaptedPolicy(adapterDir, backend, onProgress);
  const { model, folder } = await loadQwen2(modelLocation(name), backend, {
    ...(onProgress ? { onProgress: (p) => onProgress(p.bytesDone, p.bytesTotal) } : {}),
  });
  const tokenizer = await loadTokenizer(folder.path);
  if (tokenizer.imEndId === undefined)
    throw new Error(`${folder.path}: the tokenizer has no <|im_end|> token, so responses could never end`);
  checkTokenizerFitsModel(tokenizer, folder.config.vocabSize, folder.path);
  return {
    model,
    config: folder.config,
    tokenizer,
    source: folder.path,
    tokenizerFiles: { tokenizer: folder.tokenizer, tokenizerConfig: folder.tokenizerConfig },
    identity: () => weightsIdentity(name, folder.path),
  };
}

/** `name` as a LoRA adapter folder (one without a model of its own), or undefined. */
function adapterFolder(name: string): string | undefined {
  if (name === EMBEDDED_MODEL || !existsSync(name) || !statSync(name).isDirectory()) return undefined;
  return isLoraAdapterFolder(name) && !existsSync(join(name, CONFIG_FILE)) ? name : undefined;
}

/** The base model an adapter folder names, checked to be something loadPolicy can follow. */
function adapterBase(dir: string): string {
  const { baseModel } = readAdapterConfig(dir);
  if (!baseModel)
    throw new Error(
      `${join(dir, ADAPTER_CONFIG_FILE)} names no base model (base_model_name_or_path); merge it with ragen sft merge model=<base> adapter=${dir} out=<folder>`,
    );
  if (existsSync(baseModel) && resolve(baseModel) === resolve(dir))
    throw new Error(`${join(dir, ADAPTER_CONFIG_FILE)} names its own folder as its base model`);
  return baseModel;
}

/**
 * An adapter folder as a plain model: its base, loaded as any model is, with the adapter folded into the
 * weights (the adapted model's function, no adapters left to train or skip).
 */
async function loadAdaptedPolicy(
  dir: string,
  backend: Backend,
  onProgress?: (loaded: number, total: number) => void,
): Promise<LoadedPolicy> {
  const base = await loadPolicy(adapterBase(dir), backend, onProgress);
  try {
    loadLoraAdapter(base.model, dir);
    base.model.mergeLora();
  } catch (error) {
    base.model.dispose();
    throw error;
  }
  return {
    ...base,
    source: `${dir} (LoRA adapter on ${base.source})`,
    identity: async () => `${await weightsIdentity(dir, dir)}+${await base.identity()}`,
  };
}

/**
 * Every id the tokenizer can produce must have a row in the embedding: an id past the model's vocabulary
 * would otherwise load fine and fail only when a rollout or validation first samples or encodes it.
 */
export function checkTokenizerFitsModel(tokenizer: Tokenizer, modelVocabSize: number, folder: string): void {
  const tokenizerFile = join(folder, TOKENIZER_FILE);
  const configFile = join(folder, CONFIG_FILE);
  const named: [string, number | undefined][] = [
    ["bos", tokenizer.bosTokenId],
    ["eos", tokenizer.eosTokenId],
    ["pad", tokenizer.padTokenId],
    ["unk", tokenizer.unkTokenId],
    ["<|im_start|>", tokenizer.imStartId],
    ["<|im_end|>", tokenizer.imEndId],
  ];
  const outside = [
    ...named
      .filter(([, id]) => id !== undefined && id >= modelVocabSize)
      .map(([what, id]) => `${what} ${id}`),
    ...tokenizer.addedTokens
      .filter((token) => token.id >= modelVocabSize)
      .map((token) => `${JSON.stringify(token.content).slice(0, 40)} ${token.id}`),
  ];
  if (outside.length > 0 || tokenizer.vocabSize > modelVocabSize) {
    const ids = outside.length > 0 ? ` (${[...new Set(outside)].slice(0, 5).join(", ")})` : "";
    throw new Error(
      `${tokenizerFile} has token ids up to ${tokenizer.vocabSize - 1}${ids}, but ${configFile} has vocab_size ${modelVocabSize}: every token id must be below it`,
    );
  }
}

/**
 * The reference model's identity in V* cache keys: its name and a hash of its weights, so estimates of
 * a rebuilt model (same folder, new weights) are never reused.
 */
async function weightsIdentity(name: string, folder: string): Promise<string> {
  const hash = createHash("sha256");
  const files = readdirSync(folder)
    .filter((file) => file.endsWith(".safetensors"))
    .sort();
  for (const file of files) {
    hash.update(file);
    for await (const chunk of createReadStream(join(folder, file))) hash.update(chunk as Buffer);
  }
  return `${name}#sha256:${hash.digest("hex").slice(0, 16)}`;
}

/**
 * The model's parameter count from its config.json alone (the settings depend on it before the weights
 * load): read from the folder, or for a Hub id fetched alone — from the cache when the model is there.
 */
export async function modelParameterCount(name: string): Promise<number> {
  // An adapter folder has the size of its base (the adapter is folded in).
  const adapterDir = adapterFolder(name);
  if (adapterDir) return modelParameterCount(adapterBase(adapterDir));
  const location = modelLocation(name);
  const json = await readConfigJson(location);
  const config = parseQwen2Config(json, { fileName: `${location}/${CONFIG_FILE}` });
  return qwen2ParameterShapes(config).reduce(
    (total, [, shape]) => total + shape.reduce((a, b) => a * b, 1),
    0,
  );
}

async function readConfigJson(location: string): Promise<unknown> {
  const folderConfig = join(location, CONFIG_FILE);
  if (existsSync(location) && statSync(location).isDirectory()) {
    if (!existsSync(folderConfig))
      throw new Error(`${location}: has no ${CONFIG_FILE}: not a Hugging Face model folder`);
    return JSON.parse(readFileSync(folderConfig, "utf8"));
  }
  try {
    const blob = await downloadFile({ repo: location, path: CONFIG_FILE });
    if (blob) return JSON.parse(await blob.text());
  } catch {
    // Offline: the cached snapshot, if the model was downloaded before (resolveModel names the problem otherwise).
  }
  const resolved = await resolveModel(location);
  return JSON.parse(readFileSync(join(resolved.path, CONFIG_FILE), "utf8"));
}
