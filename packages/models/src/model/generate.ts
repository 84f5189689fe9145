import {
  asyncScope,
  concat,
  narrow,
  noGradAsync,
  readSampledRows,
  type SampledRowsOnDevice,
  sampleRowsOnDevice,
  scope,
  type Tensor,
} from "@ragen/tensor-webgpu";
import { NormalSampler } from "./init.js";
import type { PackedProjections } from "./packed-projections.js";
import type { PrefixCache } from "./prefix-cache.js";
import type { KvCache, Qwen2Model } from "./qwen2.js";
import { checkSamplingOptions, type SampledToken, type SamplingOptions, sampleToken } from "./sampling.js";

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Generation of a sequence stops after any of these tokens (it is kept in the output). */
  stopTokenIds?: readonly number[];
  /** Seed of the sampler: the same seed, model and prompts give the same tokens. */
  seed?: number;
  /**
   * One seed per prompt, in place of `seed`: each row draws from its own stream, so a row's tokens do
   * not depend on which other prompts share its batch (as per-request seeds work on an inference
   * server). A one-prompt batch samples the same tokens with `rowSeeds: [s]` as with `seed: s`.
   */
  rowSeeds?: readonly number[];
  /**
   * Called after each step with the number of tokens generated so far. Without top-k / top-p the next
   * step is already recorded by then (decoding records a step before the previous one's tokens are read).
   */
  onStep?: (step: number) => void;
  /**
   * Reuse the keys and values of prompt prefixes computed by the previous call with the same cache, and
   * keep this call's for the next (see PrefixCache). Clear it whenever the weights change.
   */
  prefixCache?: PrefixCache;
  /**
   * Run each decoding step's q/k/v and gate/up projections as one product each, on stacked copies of those
   * weights made for this call (default true; the same results). The copies cost memory while generating:
   * hidden·(hidden + 2·kvHeads·headDim + 2·intermediate) floats per layer (0.9 GB for Qwen2.5-0.5B in f32).
   * With LoRA adapters the stacked weights are merged ones (W + (alpha/r)·B·A, and merged o and down
   * weights where those are adapted), so a step runs no adapter products; its log-probs then differ from
   * the unmerged forward's in the last bits (about 1e-6).
   */
  packProjections?: boolean;
  /**
   * The most prompt tokens one prefill pass runs (default DEFAULT_PREFILL_TOKENS). A longer batch is
   * prefilled in groups of whole rows, each into its rows of the KV cache, so a layer's intermediates are
   * alive for one group instead of the batch (2.7 GiB for 64 prompts of 512 tokens of Qwen2.5-0.5B in
   * f32, 0.7 GiB in groups of 8,192 tokens). The tokens and log-probs are the same.
   */
  prefillTokens?: number;
}

/**
 * Prompt tokens a prefill pass runs at most, by default: on a GPU 8,192 rows fill every product as well
 * as more would, and a layer's intermediates stay under 0.7 GiB at Qwen2.5-0.5B's shape.
 */
export const DEFAULT_PREFILL_TOKENS = 8192;

/** Rows of `chunk` tokens each prefill pass takes: at least one. */
export function prefillRows(chunk: number, prefillTokens = DEFAULT_PREFILL_TOKENS): number {
  return Math.max(1, Math.floor(prefillTokens / Math.max(1, chunk)));
}

const disposeSample = (sample: SampledRowsOnDevice): void => {
  sample.tokens.dispose();
  sample.logProbs.dispose();
};

export interface Generation {
  /** The generated token ids (not the prompt). */
  tokens: Int32Array;
  /** Log-probability of each generated token under softmax(logits / temperature). */
  logProbs: Float32Array;
  finishReason: "stop" | "length";
}

/**
 * The largest of `value(0)`, ..., `value(count - 1)` (-Infinity for none), in a loop: spreading a
 * large batch into Math.max puts every element on the stack and overflows it.
 */
export function maxOver(count: number, value: (index: number) => number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    const v = value(i);
    if (v > max) max = v;
  }
  return max;
}

/**
 * The logits a generation sampled from were not finite: a token's log-probability came out NaN. The
 * model's weights hold NaN or infinity, or an f16 model's activations passed f16's range; what was sampled
 * from such logits is noise, so generation stops instead of handing it on.
 */
export class NonFiniteLogitsError extends Error {
  constructor(
    readonly row: number,
    readonly step: number,
    dtype: string,
  ) {
    const hint =
      dtype === "f16"
        ? ', or its activations passed f16\'s range (65504): f32 weights (toDtype("f32"), precision=f32) avoid that'
        : "";
    super(
      `generate(): the log-probability of row ${row}'s token at step ${step} is NaN: the model's logits are not finite (its weights hold NaN or infinity${hint})`,
    );
    this.name = "NonFiniteLogitsError";
  }
}

/**
 * Batched generation with a KV cache: the prompts are left-padded together, prefilled in one pass,
 * then every unfinished sequence advances one token per step; finished ones stop contributing tokens.
 * An f16 model generates on its own weights with an f16 cache: every kernel of a step reads and writes
 * halves and sums in f32, as the f32 kernels do.
 */
export async function generate(
  model: Qwen2Model,
  prompts: readonly Int32Array[],
  options: GenerateOptions,
): Promise<Generation[]> {
  checkSamplingOptions(options);
  const prefillTokens = options.prefillTokens ?? DEFAULT_PREFILL_TOKENS;
  if (!Number.isInteger(prefillTokens) || prefillTokens < 1)
    throw new RangeError(
      `generate(): prefillTokens must be a positive integer, got ${options.prefillTokens}`,
    );
  if (prompts.length === 0) return [];
  if (prompts.some((p) => p.length === 0))
    throw new RangeError("generate(): every prompt needs at least one token");
  if (!Number.isInteger(options.maxNewTokens) || options.maxNewTokens < 1) {
    throw new RangeError(`generate(): maxNewTokens must be a positive integer, got ${options.maxNewTokens}`);
  }
  const batch = prompts.length;
  const promptLength = maxOver(batch, (b) => prompts[b]!.length);
  const start = Int32Array.from(prompts, (p) => promptLength - p.length);
  const stops = new Set(options.stopTokenIds ?? []);
  if (options.rowSeeds !== undefined && options.rowSeeds.length !== batch)
    throw new RangeError(`generate(): ${options.rowSeeds.length} rowSeeds for ${batch} prompts`);
  // One stream for the batch, or one per row; every row draws once per step either way.
  const streams = options.rowSeeds?.map((seed) => new NormalSampler(seed)) ?? [
    new NormalSampler(options.seed ?? 0),
  ];
  const vocab = model.config.vocabSize;
  const tokens: number[][] = prompts.map(() => []);
  const logProbs: number[][] = prompts.map(() => []);
  const finished = new Array<boolean>(batch).fill(false);
  const cache = model.createCache(batch, promptLength + options.maxNewTokens);
  let packed: PackedProjections | undefined;
  const prefixCache = options.prefixCache;
  let kept = false;

  const temperature = options.temperature ?? 1;
  const truncated = (options.topK ?? 0) > 0 || (options.topP ?? 1) < 1;

  /** Every row's logits at the last position of `hidden`. */
  const lastLogits = (hidden: Tensor): Tensor => {
    const seqLen = hidden.shape[1]!;
    return model.lmHead(seqLen === 1 ? hidden : narrow(hidden, 1, seqLen - 1, 1));
  };
  // Every sequence draws, finished or not, so one sequence's length never shifts another's randomness.
  const draws = (): number[] =>
    Array.from({ length: batch }, (_, b) => streams[options.rowSeeds ? b : 0]!.uniform());

  /**
   * Every row's next token, sampled where the logits are: recorded, not read (only a token and a
   * log-prob per row will come back, not batch x vocab).
   */
  const sampleOnDevice = (hidden: Tensor): SampledRowsOnDevice =>
    sampleRowsOnDevice(lastLogits(hidden), Float32Array.from(draws()), temperature);

  const readSample = async (sample: SampledRowsOnDevice): Promise<SampledToken[]> => {
    const read = await readSampledRows(sample);
    return Array.from(read.tokens, (token, b) => ({ token, logProb: read.logProbs[b]! }));
  };

  /** Top-k / top-p sampling reads the logits back and samples on the host (finished rows' are not used). */
  const sampleOnHost = async (hidden: Tensor): Promise<SampledToken[]> => {
    const uniforms = draws();
    const values = await lastLogits(hidden).floats();
    return uniforms.map((u, b) =>
      finished[b]
        ? { token: -1, logProb: 0 }
        : sampleToken(values.subarray(b * vocab, (b + 1) * vocab), options, u),
    );
  };

  /** Adds one step's tokens to the unfinished rows; whether generation is over after `step`. */
  const accept = (sampled: readonly SampledToken[], step: number): boolean => {
    for (let b = 0; b < batch; b++) {
      if (finished[b]) continue;
      const { token, logProb } = sampled[b]!;
      if (Number.isNaN(logProb)) throw new NonFiniteLogitsError(b, step + 1, model.dtype);
      tokens[b]!.push(token);
      logProbs[b]!.push(logProb);
      if (stops.has(token)) finished[b] = true;
    }
    options.onStep?.(step + 1);
    return finished.every(Boolean) || step + 1 === options.maxNewTokens;
  };
  const positionsAfter = (step: number) => Int32Array.from(start, (s) => promptLength - s + step);

  try {
    if (options.packProjections !== false) packed = model.packProjections();
    // Every row runs the same number of new tokens (`chunk`): the most any prompt lacks from the cache.
    // Rows missing fewer recompute a few cached tokens; rows shorter than the chunk are left-padded.
    const matches = prefixCache?.match(prompts) ?? prompts.map(() => ({ row: -1, length: 0 }));
    const chunk = maxOver(batch, (b) => prompts[b]!.length - matches[b]!.length);
    for (const [b, p] of prompts.entries()) {
      const reused = p.length - chunk;
      if (reused > 0) prefixCache!.copyInto(cache, b, start[b]!, matches[b]!, reused);
    }
    cache.length = promptLength - chunk;
    const chunkIds = new Int32Array(batch * chunk);
    const chunkPositions = new Int32Array(batch * chunk);
    for (const [b, p] of prompts.entries()) {
      for (let j = 0; j < chunk; j++) {
        const index = p.length - chunk + j;
        chunkIds[b * chunk + j] = index >= 0 ? p[index]! : 0;
        chunkPositions[b * chunk + j] = Math.max(0, index);
      }
    }
    if (prefixCache) {
      prefixCache.stats.computedTokens += batch * chunk;
      prefixCache.stats.reusedTokens += prompts.reduce((n, p) => n + Math.max(0, p.length - chunk), 0);
    }

    await noGradAsync(async () => {
      // `start` is in cache slots: it masks each row's left padding in the chunk and in the cache alike.
      const prefill = () =>
        prefillInGroups(
          model,
          cache,
          { ids: chunkIds, positions: chunkPositions, start, chunk },
          {
            rows: prefillRows(chunk, prefillTokens),
            packed,
          },
        );
      if (truncated) {
        let sampled = await asyncScope(() => sampleOnHost(prefill()));
        for (let step = 0; !accept(sampled, step); step++) {
          // Finished rows repeat their last token; their outputs are not used.
          const next = Int32Array.from(tokens, (t) => t.at(-1)!);
          sampled = await asyncScope(() =>
            sampleOnHost(
              model.run({ ids: next, batch, seqLen: 1, start }, positionsAfter(step), cache, packed),
            ),
          );
        }
        return;
      }
      // Pipelined: the next step is recorded from this step's tokens where they were sampled, while the
      // GPU runs this step and its tokens come back, so recording and the GPU's work overlap. Rows are
      // independent, so the tokens finished rows go on with change nothing else; a step recorded after
      // the last row finished is dropped.
      let current: SampledRowsOnDevice | undefined = scope(() => sampleOnDevice(prefill()));
      let next: SampledRowsOnDevice | undefined;
      try {
        for (let step = 0; current; step++) {
          const read = readSample(current);
          read.catch(() => undefined); // awaited below, unless recording the next step throws first
          const ids: Tensor = current.tokens;
          if (step + 1 < options.maxNewTokens)
            next = scope(() =>
              sampleOnDevice(
                model.run({ ids, batch, seqLen: 1, start }, positionsAfter(step), cache, packed),
              ),
            );
          const over = accept(await read, step);
          disposeSample(current);
          current = over ? undefined : next;
          if (!over) next = undefined;
        }
      } finally {
        for (const sample of [current, next]) if (sample) disposeSample(sample);
      }
    });
    if (prefixCache) {
      // A row's last sampled token was never run, so its keys are not in the cache.
      prefixCache.store(
        cache,
        prompts.map((p, b) => ({
          tokens: Int32Array.from([...p, ...tokens[b]!.slice(0, -1)]),
          start: start[b]!,
        })),
      );
      kept = true;
    }
  } catch (error) {
    prefixCache?.clear();
    throw error;
  } finally {
    packed?.dispose();
    if (!kept) cache.dispose();
  }
  return tokens.map((t, b) => ({
    tokens: Int32Array.from(t),
    logProbs: Float32Array.from(logProbs[b]!),
    finishReason: finished[b] ? "stop" : "length",
  }));
}

/** A prefill's tokens: `chunk` per row, left-padded, at absolute `positions`; `start` in cache slots. */
interface PrefillChunk {
  ids: Int32Array;
  positions: Int32Array;
  start: Int32Array;
  chunk: number;
}

/**
 * Runs `prefill` into `cache` at most `rows` rows at a time and returns every row's hidden state at the
 * chunk's last position ([batch, 1, hidden]; the whole [batch, chunk, hidden] in one pass). A group runs
 * on a cache of its own rows: the cache is [batch, capacity, kvHeads, headDim] per layer, so a group's
 * rows are one contiguous block, copied in (tokens cached before, from a prefix cache) and back.
 */
function prefillInGroups(
  model: Qwen2Model,
  cache: KvCache,
  prefill: PrefillChunk,
  options: { rows: number; packed: PackedProjections | undefined },
): Tensor {
  const { ids, positions, start, chunk } = prefill;
  const batch = start.length;
  if (options.rows >= batch)
    return model.run({ ids, batch, seqLen: chunk, start }, positions, cache, options.packed);
  const lasts: Tensor[] = [];
  const cached = cache.length;
  for (let first = 0; first < batch; first += options.rows) {
    const rows = Math.min(options.rows, batch - first);
    const part = model.createCache(rows, cache.capacity);
    // The group's rows, every slot: one block of positions in either cache.
    const positionsOfRows = rows * cache.capacity;
    try {
      if (cached > 0) cache.copyTo(part, first * cache.capacity, 0, positionsOfRows);
      part.length = cached;
      const tokens = first * chunk;
      const hidden = model.run(
        {
          ids: ids.subarray(tokens, tokens + rows * chunk),
          batch: rows,
          seqLen: chunk,
          start: start.subarray(first, first + rows),
        },
        positions.subarray(tokens, tokens + rows * chunk),
        part,
        options.packed,
      );
      lasts.push(narrow(hidden, 1, chunk - 1, 1));
      hidden.dispose();
      part.copyTo(cache, 0, first * cache.capacity, positionsOfRows);
    } finally {
      part.dispose();
    }
  }
  cache.length = cached + chunk;
  const last = concat(lasts, 0);
  for (const t of lasts) t.dispose();
  return last;
}
