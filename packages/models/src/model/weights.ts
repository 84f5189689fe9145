import type { TensorReader } from "../io/safetensors.js";
import { type Qwen2Shape, Qwen2WeightsError, qwen2ParameterShapes } from "./qwen2.js";

export interface ReadQwen2WeightsOptions {
  /**
   * Tensors the config does not use are an error by default (a config with fewer layers than the file
   * would silently drop the rest); true reads the config's tensors and ignores the others.
   */
  readonly ignoreUnexpected?: boolean;
  /** Where the weights come from (a folder or URL), for messages that cannot name a single file. */
  readonly source?: string;
}

/**
 * Tensors checkpoints commonly carry beside the config's parameters and that loading may skip: the
 * critic's value head, rotary tables some exporters save, and an lm_head copy next to tied embeddings.
 */
function isKnownExtra(name: string, config: Qwen2Shape): boolean {
  return (
    name.startsWith("score.") ||
    name.endsWith(".rotary_emb.inv_freq") ||
    (config.tieWordEmbeddings && name === "lm_head.weight")
  );
}

/** The file a tensor is stored in: the shard for sharded checkpoints, else the reader's own file. */
function fileOf(reader: TensorReader, name: string, fallback: string): string {
  const shardOf = (reader as { shardOf?: (name: string) => { fileName?: string } }).shardOf;
  const file = typeof shardOf === "function" ? shardOf.call(reader, name).fileName : undefined;
  return file ?? (reader as { fileName?: string }).fileName ?? fallback;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((size, i) => size === b[i]);
}

function listNames(names: readonly string[]): string {
  return `${names.slice(0, 5).join(", ")}${names.length > 5 ? ` and ${names.length - 5} more` : ""}`;
}

/**
 * f32 weights of every parameter the config needs, read from safetensors already in memory (a folder's
 * files in Node, fetched bytes in a browser). Every tensor must be present with exactly the config's
 * shape (a transposed [hidden, vocab] has the right element count but scrambles the weights) and hold
 * only finite values; tensors the config does not use are refused unless `ignoreUnexpected`.
 */
export function readQwen2Weights(
  checkpoint: {
    readonly config: Qwen2Shape;
    readonly weights: TensorReader;
    /** The folder read, when there is one: named in errors about absent tensors. */
    readonly path?: string;
  },
  options: ReadQwen2WeightsOptions = {},
): Map<string, Float32Array> {
  const { config, weights: reader } = checkpoint;
  const source =
    options.source ?? checkpoint.path ?? (reader as { fileName?: string }).fileName ?? "the checkpoint";
  const expected = qwen2ParameterShapes(config);
  const missing = expected.filter(([name]) => !reader.has(name)).map(([name]) => name);
  if (missing.length > 0) {
    throw new Qwen2WeightsError(
      `${source}: missing weights: ${listNames(missing)} (the config has ${config.numHiddenLayers} layers${config.tieWordEmbeddings ? ", tied embeddings" : ""})`,
    );
  }
  if (!options.ignoreUnexpected) {
    const wanted = new Set(expected.map(([name]) => name));
    const unexpected = reader.names().filter((name) => !wanted.has(name) && !isKnownExtra(name, config));
    if (unexpected.length > 0) {
      throw new Qwen2WeightsError(
        `${source}: tensors the config does not use: ${listNames(unexpected)} (the config has ${config.numHiddenLayers} layers, vocabulary ${config.vocabSize}, hidden size ${config.hiddenSize}; pass ignoreUnexpected to load anyway)`,
      );
    }
  }
  const out = new Map<string, Float32Array>();
  for (const [name, shape] of expected) {
    checkShape(reader, name, shape, source);
    out.set(name, finiteTensor(reader, name, source));
  }
  return out;
}

/**
 * A critic's weights (Qwen2ForTokenClassification with one label): the backbone as readQwen2Weights
 * reads it, plus `score.weight` [1, hidden] and `score.bias` [1], held to the same checks.
 */
export function readQwen2ValueWeights(
  checkpoint: Parameters<typeof readQwen2Weights>[0],
  options: ReadQwen2WeightsOptions = {},
): Map<string, Float32Array> {
  const out = readQwen2Weights(checkpoint, options);
  const { config, weights: reader } = checkpoint;
  const source =
    options.source ?? checkpoint.path ?? (reader as { fileName?: string }).fileName ?? "the checkpoint";
  const head: [string, number[]][] = [
    ["score.weight", [1, config.hiddenSize]],
    ["score.bias", [1]],
  ];
  for (const [name, shape] of head) {
    if (!reader.has(name))
      throw new Qwen2WeightsError(`${source}: missing weights: ${name} (the critic's value head)`);
    checkShape(reader, name, shape, source);
    out.set(name, finiteTensor(reader, name, source));
  }
  return out;
}

function checkShape(reader: TensorReader, name: string, shape: readonly number[], source: string): void {
  const found = reader.info(name).shape;
  if (!sameShape(found, shape)) {
    throw new Qwen2WeightsError(
      `${fileOf(reader, name, source)}: tensor "${name}" has shape [${found.join(", ")}], expected [${shape.join(", ")}] from the config`,
    );
  }
}

/** The tensor as f32, refusing NaN and ±Inf with the file, tensor and index named. */
function finiteTensor(reader: TensorReader, name: string, source: string): Float32Array {
  const data = reader.toFloat32(name);
  // x * 0 is NaN exactly for NaN and ±Inf, so one branch-free pass finds them; the index only on failure.
  let probe = 0;
  for (let i = 0; i < data.length; i++) probe += data[i]! * 0;
  if (Number.isNaN(probe)) {
    const i = data.findIndex((x) => !Number.isFinite(x));
    throw new Qwen2WeightsError(
      `${fileOf(reader, name, source)}: tensor "${name}" holds a non-finite value (${data[i]} at index ${i}); expected finite weights`,
    );
  }
  return data;
}
