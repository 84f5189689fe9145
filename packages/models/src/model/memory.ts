/**
 * How much device memory training a Qwen2 model takes here, term by term, from the tensors this package
 * and @ragen/tensor-webgpu actually keep (see the comments on each formula). Used to choose settings
 * that fit a GPU before starting a run, and checked in the tests against measured peaks.
 */
import { prefillRows } from "./generate.js";
import { QWEN2_LINEAR_MODULES } from "./lora.js";
import { DEFAULT_MAX_LOGITS, logitsChunkTokens, type Qwen2Shape, qwen2ParameterShapes } from "./qwen2.js";

/** Storage formats and their bytes per value. f16 and bf16 are planned; tensors are f32 today. */
export const PRECISION_BYTES = { f32: 4, f16: 2, bf16: 2 } as const;
export type Precision = keyof typeof PRECISION_BYTES;

export interface TrainingMemoryOptions {
  /** Sequences per optimizer step (the trainer's mini-batch); default `microBatch`. */
  batch?: number;
  /** Sequences per forward and backward (the trainer's micro-batch); their gradients accumulate. */
  microBatch: number;
  /** Tokens per sequence as trained (the padded length of a micro-batch). */
  seqLen: number;
  /** Weights as stored for the forward (default f32). */
  weights?: Precision;
  /**
   * Activations and logits (default: as the weights). Below f32, as Qwen2Model runs an f16 layer: every
   * activation in that precision but the attention's log-sum-exp and the norms' rstd, kept in f32;
   * generation runs on the f32 copy of the weights, with an f32 KV cache.
   */
  activations?: Precision;
  /** Gradients (default: as the weights). */
  gradients?: Precision;
  /** AdamW's two moments per trainable value (default f32). */
  optimizerState?: Precision;
  /** An f32 copy of the weights that the optimizer updates (default: when the weights are not f32). */
  masterWeights?: boolean;
  /** Activation recomputation per decoder layer (`model.gradientCheckpointing`). */
  recompute?: boolean;
  /** LoRA adapters instead of full fine-tuning: only they have gradients and optimizer state. */
  lora?: { rank: number; targets?: readonly (typeof QWEN2_LINEAR_MODULES)[number][] };
  /** The most logits alive at once (`Qwen2Model.maxLogits`, default DEFAULT_MAX_LOGITS): the head's chunks. */
  maxLogits?: number;
  /** The loss reads the entropy as well as the log-probs (PPO's entropy bonus): two logits gradients. Default true. */
  entropy?: boolean;
  /** A frozen copy of the weights for a KL penalty against the reference policy. */
  referenceModel?: boolean;
  /**
   * A critic of the same size (PPO with GAE): its weights and optimizer state stay for the whole run.
   * The trainers update it before the actor and clear its gradients, so the actor's step, with its
   * logits, remains the peak.
   */
  critic?: boolean;
  /**
   * Generation: sequences decoded together, their (padded) prompt length and the tokens generated, and
   * whether `generate` stacks the projections' weights (its `packProjections`, default true).
   */
  rollout?: {
    batch: number;
    promptLength: number;
    newTokens: number;
    packProjections?: boolean;
    /** `generate`'s prefillTokens: the most prompt tokens one prefill pass runs (default 8,192). */
    prefillTokens?: number;
  };
}

/** Bytes per term. Persistent terms live through the whole run; the rest are the peaks of their phase. */
export interface TrainingMemoryBreakdown {
  weights: number;
  masterWeights: number;
  gradients: number;
  optimizerState: number;
  referenceWeights: number;
  /** The critic's weights, master weights and optimizer state. */
  criticState: number;
  /** What one decoder layer keeps for the backward (its input alone under recomputation). */
  activationsPerLayer: number;
  /** Every layer's kept activations, plus the final norm's input. */
  activations: number;
  /** One layer's full activations while it is recomputed in the backward (0 without recomputation). */
  recomputedLayer: number;
  /** The largest gradient transients of a layer's backward (the MLP's). */
  layerBackward: number;
  /** The head at its peak: logits and their gradients (tokens × vocabulary each), and the last hidden states. */
  logits: number;
  /** Adding a new gradient of the embedding into the one accumulated (two vocabulary × hidden tensors). */
  embeddingGradient: number;
  /** Keys and values of every layer for the rollout batch. */
  kvCache: number;
  /**
   * One layer's intermediates over one prefill pass's prompt tokens, the last-token logits, and when the
   * prefill runs in groups of rows, the group's own KV cache.
   */
  rolloutForward: number;
  /** The rollout's stacked q/k/v and gate/up weights, and merged o and down weights under LoRA. */
  packedWeights: number;
}

export interface TrainingMemoryEstimate {
  parameters: number;
  trainableParameters: number;
  tokensPerMicroBatch: number;
  microBatchesPerStep: number;
  bytes: TrainingMemoryBreakdown;
  /** What lives between steps: weights, master weights, optimizer state, reference weights, the critic's. */
  persistent: number;
  /** The most a training step holds: persistent + its largest phase (gradients included). */
  trainingPeak: number;
  /** Which phase of the step that is. */
  trainingPeakPhase: "head backward" | "layer backward" | "embedding backward";
  /** The most a rollout holds: what survives between steps (no gradients) + stacked weights + KV cache + one layer. */
  rolloutPeak: number;
  peak: number;
}

export class MemoryEstimateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MemoryEstimateError";
  }
}

function positiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new MemoryEstimateError(`estimateTrainingMemory: ${name} must be a positive integer, got ${value}`);
  }
}

/** Parameters of the adapters: rank × (in + out) for each targeted linear layer. */
function loraParameters(config: Qwen2Shape, rank: number, targets: ReadonlySet<string>): number {
  let count = 0;
  for (const [name, shape] of qwen2ParameterShapes(config)) {
    const match = /\.(\w+_proj)\.weight$/.exec(name);
    if (match && targets.has(match[1]!)) count += rank * (shape[0]! + shape[1]!);
  }
  return count;
}

/**
 * Bytes to train `config` with `options`, term by term, with the step's and the rollout's peaks. The
 * formulas follow what the tape keeps in this implementation (f32 tensors today; other precisions
 * scale the same counts), so the estimate tracks the measured peak closely rather than a textbook
 * bound.
 */
export function estimateTrainingMemory(
  config: Qwen2Shape,
  options: TrainingMemoryOptions,
): TrainingMemoryEstimate {
  const { microBatch, seqLen } = options;
  positiveInteger("microBatch", microBatch);
  positiveInteger("seqLen", seqLen);
  const batch = options.batch ?? microBatch;
  positiveInteger("batch", batch);
  if (batch < microBatch) {
    throw new MemoryEstimateError(
      `estimateTrainingMemory: batch (${batch}) is smaller than microBatch (${microBatch})`,
    );
  }
  if (options.lora) positiveInteger("lora.rank", options.lora.rank);
  if (options.rollout) {
    positiveInteger("rollout.batch", options.rollout.batch);
    positiveInteger("rollout.promptLength", options.rollout.promptLength);
    positiveInteger("rollout.newTokens", options.rollout.newTokens);
    if (options.rollout.prefillTokens !== undefined)
      positiveInteger("rollout.prefillTokens", options.rollout.prefillTokens);
  }

  const weightBytes = PRECISION_BYTES[options.weights ?? "f32"];
  const activationBytes = PRECISION_BYTES[options.activations ?? options.weights ?? "f32"];
  const gradientBytes = PRECISION_BYTES[options.gradients ?? options.weights ?? "f32"];
  const stateBytes = PRECISION_BYTES[options.optimizerState ?? "f32"];
  const master = options.masterWeights ?? (options.weights ?? "f32") !== "f32";

  const H = config.hiddenSize;
  const I = config.intermediateSize;
  const L = config.numHiddenLayers;
  const V = config.vocabSize;
  const heads = config.numAttentionHeads;
  const kv = config.numKeyValueHeads * (H / heads); // width of k and v
  const N = microBatch * seqLen; // tokens in one forward
  const microBatchesPerStep = Math.ceil(batch / microBatch);

  const parameters = qwen2ParameterShapes(config).reduce((n, [, s]) => n + s.reduce((a, b) => a * b, 1), 0);
  const loraTargets = new Set<string>(options.lora?.targets ?? QWEN2_LINEAR_MODULES);
  const trainableParameters = options.lora
    ? loraParameters(config, options.lora.rank, loraTargets)
    : parameters;
  // LoRA keeps the adapters themselves in f32 beside the frozen weights.
  const adapterBytes = options.lora ? trainableParameters * PRECISION_BYTES.f32 : 0;

  // Persistent: every weight; an f32 master copy when the forward reads lower-precision weights;
  // AdamW's m and v per trainable value. Gradients, one per trainable value, live from the backward of
  // a step's first micro-batch to the optimizer step (see the phases below).
  const weights = parameters * weightBytes + adapterBytes;
  const masterWeights = master ? trainableParameters * PRECISION_BYTES.f32 : 0;
  const gradients = trainableParameters * gradientBytes;
  const optimizerState = 2 * trainableParameters * stateBytes;
  const referenceWeights = options.referenceModel ? parameters * weightBytes : 0;
  const criticState = options.critic ? weights + masterWeights + optimizerState : 0;

  // What one decoder layer's backward reads, in values per token (see Qwen2Model.decoderLayer and the
  // ops' saved tensors): its input x, the normed h (read by q/k/v), rotated q and k, v, the attention
  // output (read by o_proj too), x + attention (read by the second norm), the normed m, the MLP's gate, up
  // and silu(gate)·up, and LoRA's x·Aᵀ (rank values) for each adapted projection, in the activations'
  // precision; the attention's log-sum-exp per head and each norm's reciprocal RMS, in f32.
  const adaptedModules = options.lora ? loraTargets.size : 0;
  const layerValuesPerToken =
    6 * H + 2 * kv + 3 * I + (options.lora ? adaptedModules * options.lora.rank : 0);
  const statisticsPerToken = heads + 2;
  const layerFull = N * (layerValuesPerToken * activationBytes + statisticsPerToken * PRECISION_BYTES.f32);
  const layerInput = N * H * activationBytes;
  // Under recomputation only the input stays; the layer's activations come back one layer at a time.
  const activationsPerLayer = options.recompute ? layerInput : layerFull;
  // ... plus the last layer's output, which the final norm keeps.
  const activations = L * activationsPerLayer + layerInput;
  const recomputedLayer = options.recompute ? layerFull - layerInput : 0;
  // The MLP's backward holds d(silu(gate)·up), d gate and d up (tokens × intermediate each) and the
  // gradient flowing down the residual stream.
  const layerBackward = N * (3 * I + H) * activationBytes;

  // The head: the final norm's output (read by lm_head's backward) and the logits (read by the
  // log-prob and entropy backwards). When the last of those runs, the logits and each consumer's
  // gradient of them (tokens × vocabulary each) are alive at once.
  // Past `maxLogits` the head runs over chunks of tokens, recomputed in the backward: a chunk's logits
  // and gradients at once, and each chunk's input kept for its recomputation (a copy of the final norm's
  // output).
  const logitsConsumers = options.entropy === false ? 1 : 2;
  const chunk = logitsChunkTokens(V, options.maxLogits ?? DEFAULT_MAX_LOGITS);
  const headTokens = Math.min(N, chunk);
  const chunkInputs = N > chunk ? N * H * activationBytes : 0;
  const logits =
    N * H * activationBytes + chunkInputs + (1 + logitsConsumers) * headTokens * V * activationBytes;
  // The embedding's gradient is a dense vocabulary × hidden tensor; adding it to the gradient already
  // there (the tied lm_head's, or an earlier micro-batch's) makes one more of those for a moment.
  const embeddingTrains = !options.lora;
  const accumulates = config.tieWordEmbeddings || microBatchesPerStep > 1;
  const embeddingGradient = embeddingTrains && accumulates ? 2 * V * H * gradientBytes : 0;

  // Gradients alive in each phase: all of them once an earlier micro-batch of the step has left its
  // own; in a step of one micro-batch they appear as the backward reaches each parameter, and only the
  // head's (the vocabulary × hidden lm_head, or the tied embedding) precedes the layers'.
  const accumulating = microBatchesPerStep > 1;
  const headGradient = embeddingTrains ? V * H * gradientBytes : 0;
  // In chunks, each chunk's backward makes a head gradient of its own and adds it into the one its
  // predecessors left (in a step of one micro-batch, that one too is extra here).
  const chunkHeadGradients = N > chunk ? (accumulating ? 1 : 2) * headGradient : 0;
  const persistent = weights + masterWeights + optimizerState + referenceWeights + criticState;
  const phases = {
    // The head's backward: every kept activation, and the logits with their gradients.
    "head backward": activations + logits + (accumulating ? gradients : 0) + chunkHeadGradients,
    // The top layer's backward, once the head's tensors have gone: its kept (or recomputed)
    // activations and the MLP's gradients.
    "layer backward":
      activations + recomputedLayer + layerBackward + (accumulating ? gradients : headGradient),
    // The last node of the backward: activations are gone, every gradient is there (the optimizer step
    // that follows holds no more than this), and the embedding's new gradient arrives.
    "embedding backward": layerInput + gradients + embeddingGradient,
  } as const;
  const [trainingPeakPhase, phasePeak] = (Object.entries(phases) as [keyof typeof phases, number][]).reduce(
    (best, entry) => (entry[1] > best[1] ? entry : best),
  );
  const trainingPeak = persistent + phasePeak;

  // Rollouts: weights, master and reference copies and the optimizers' moments survive between steps;
  // gradients are cleared after each. Generation runs in the weights' precision (an f16 model decodes
  // on its halves with an f16 cache). The KV cache holds keys and values of every layer for every
  // prompt and generated token. The prefill runs the prompts one layer
  // at a time, and all that layer's tensors are alive until it ends: its input, h, q, k, v, rotated q
  // and k, the attention output, x + o_proj's (the residual is added in the projection's epilogue), m,
  // gate, up, silu(gate)·up and the output (x + attention + down_proj's, likewise). Then only the last
  // position's logits are computed.
  const rollout = options.rollout;
  const rolloutBytes = weightBytes;
  const kvCache = rollout
    ? 2 * L * rollout.batch * (rollout.promptLength + rollout.newTokens) * kv * rolloutBytes
    : 0;
  // generate() prefills at most prefillTokens prompt tokens at once, in groups of whole rows, each on a
  // KV cache of its own rows (copied back after the group).
  const prefillGroup = rollout
    ? Math.min(rollout.batch, prefillRows(rollout.promptLength, rollout.prefillTokens))
    : 0;
  const groupCache =
    rollout && prefillGroup < rollout.batch
      ? 2 * L * prefillGroup * (rollout.promptLength + rollout.newTokens) * kv * rolloutBytes
      : 0;
  const rolloutForward = rollout
    ? prefillGroup * rollout.promptLength * (8 * H + 3 * kv + 3 * I) * rolloutBytes +
      rollout.batch * V * rolloutBytes +
      groupCache
    : 0;
  // generate() stacks each layer's q/k/v and gate/up weights (see PackedProjections); with LoRA they are
  // merged, and the adapted o and down projections get merged copies too.
  const mergedValues = options.lora
    ? (loraTargets.has("o_proj") ? H * H : 0) + (loraTargets.has("down_proj") ? H * I : 0)
    : 0;
  const packedWeights =
    rollout && rollout.packProjections !== false
      ? L * (H * (H + 2 * kv + 2 * I) + mergedValues) * weightBytes
      : 0;
  const rolloutPeak = rollout ? persistent + packedWeights + kvCache + rolloutForward : 0;

  return {
    parameters,
    trainableParameters,
    tokensPerMicroBatch: N,
    microBatchesPerStep,
    bytes: {
      weights,
      masterWeights,
      gradients,
      optimizerState,
      referenceWeights,
      criticState,
      activationsPerLayer,
      activations,
      recomputedLayer,
      layerBackward,
      logits,
      embeddingGradient,
      kvCache,
      rolloutForward,
      packedWeights,
    },
    persistent,
    trainingPeak,
    trainingPeakPhase,
    rolloutPeak,
    peak: Math.max(trainingPeak, rolloutPeak),
  };
}
