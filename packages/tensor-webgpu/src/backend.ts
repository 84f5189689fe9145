/**
 * The list of primitive operations a backend provides (in the spirit of candle's backend trait): the
 * WebGPU backend runs the hand-written WGSL kernels, the CPU backend the pure-TS references. Ops and
 * autograd are written once against this interface. `B` is the backend's buffer type (GPUBuffer or
 * ArrayBuffer); every buffer holds contiguous row-major f32 (or i32 where the field says ids/positions),
 * except where an op takes `dtype: "f16"`: then its float operands and result are f16 (computed in f32).
 * The WebGPU backend stores f16 as halves; the CPU backend emulates it as f32 words rounded to halves.
 */

import type { AttentionDims } from "./core/attention.js";
import type { DType, FloatDType } from "./core/dtype.js";
import type { LossScaleUpdate } from "./core/loss-scale.js";
import type { BinaryOp, ReduceOp, UnaryOp } from "./core/ops.js";

// Re-exported so users of the interface need one import.
export type { AttentionDims, BinaryOp, DType, FloatDType, LossScaleUpdate, ReduceOp, UnaryOp };

export interface Backend<B = unknown> {
  readonly name: "webgpu" | "cpu";
  /** Bytes one element of `dtype` takes here; throws when this backend cannot hold `dtype` (f16 without shader-f16). */
  elementBytes(dtype: DType): number;
  /** A buffer of at least `bytes` bytes (contents undefined). */
  alloc(bytes: number): B;
  free(buffer: B): void;
  write(buffer: B, data: ArrayBufferView): void;
  read(buffer: B, bytes: number): Promise<ArrayBuffer>;
  /** Wait for all recorded work (a no-op on the CPU). */
  sync(): Promise<void>;

  matmul(args: {
    a: B;
    b: B;
    out: B;
    batch: number;
    m: number;
    n: number;
    k: number;
    transA?: boolean;
    transB?: boolean;
    aBatchStride?: number;
    bBatchStride?: number;
    accumulate?: boolean;
    alpha?: number;
    /** Added to every row of the result after alpha: [n], of the result's element type. */
    bias?: B;
    /** Added to the result after alpha: [batch, m, n] like out, of its element type. */
    addend?: B;
    /** a, b and out are f16 (products still accumulate in f32). */
    dtype?: FloatDType;
  }): void;

  binary(args: {
    op: BinaryOp;
    a: B;
    b: B;
    out: B;
    shape: number[];
    aStrides: number[];
    bStrides: number[];
    dtype?: FloatDType;
  }): void;
  unary(args: { op: UnaryOp; x: B; out: B; n: number; dtype?: FloatDType }): void;
  affine(args: { x: B; out: B; n: number; scale: number; shift: number; dtype?: FloatDType }): void;
  clamp(args: { x: B; out: B; n: number; min: number; max: number }): void;
  where(args: { cond: B; a: B; b: B; out: B; n: number }): void;
  /** x is stored as `dtype`, out as `outDtype` (both default f32); the reduction runs in f32. */
  reduce(args: {
    op: ReduceOp;
    x: B;
    out: B;
    outer: number;
    size: number;
    inner: number;
    dtype?: FloatDType;
    outDtype?: FloatDType;
  }): void;
  argmax(args: { x: B; out: B; outer: number; size: number }): void;

  fill(args: { out: B; n: number; value: number; dtype?: DType }): void;
  stridedCopy(args: {
    x: B;
    out: B;
    shape: number[];
    xStrides: number[];
    xOffset?: number;
    outStrides?: number[];
    outOffset?: number;
    dtype?: DType;
  }): void;
  cast(args: { x: B; out: B; n: number; from: DType; to: DType }): void;

  adamw(args: {
    param: B;
    grad: B;
    m: B;
    v: B;
    n: number;
    lr: number;
    beta1: number;
    beta2: number;
    eps: number;
    weightDecay: number;
    step: number;
    gradScale?: B;
  }): void;
  sumOfSquares(args: { x: B; n: number; out: B; accumulate: boolean }): void;
  /**
   * out[0] = the clip factor of the gradients whose squares sum to sumSquares[0] (0 when not finite);
   * `norm` receives their norm. With `lossScale` the gradients are of a scaled loss: the factor and the
   * norm are the unscaled gradients', the factor includes 1/scale, and the scale state is updated.
   */
  clipScale(args: {
    sumSquares: B;
    out: B;
    maxNorm: number;
    eps?: number;
    norm?: B;
    lossScale?: LossScaleUpdate<B>;
  }): void;
  scaleInPlace(args: { x: B; n: number; scale: B }): void;

  /**
   * `dtype` (default f32) is how x and out are stored, `weightDtype` the weight's; the sums are f32 and
   * rstd is f32 either way.
   */
  rmsNorm(args: {
    x: B;
    weight: B;
    out: B;
    rstd?: B;
    rows: number;
    dim: number;
    eps: number;
    dtype?: FloatDType;
    weightDtype?: FloatDType;
  }): void;
  /** x, dOut and dX are stored as `dtype`, weight and dWeight as `weightDtype` (both default f32). */
  rmsNormBackward(args: {
    x: B;
    weight: B;
    rstd: B;
    dOut: B;
    dX: B;
    dWeight: B;
    rows: number;
    dim: number;
    accumulateWeightGrad?: boolean;
    dtype?: FloatDType;
    weightDtype?: FloatDType;
  }): void;
  rope(args: {
    x: B;
    out: B;
    positions: B;
    batch: number;
    seqLen: number;
    numHeads: number;
    headDim: number;
    theta: number;
    inverse?: boolean;
    /** Elements of x and out (default f32): f16 is rotated in f32 and rounded once. */
    dtype?: FloatDType;
  }): void;
  /**
   * rope of q into qOut, and rope of k and a copy of v into the KV caches at slots at..at+seqLen, in one
   * kernel; false when this backend cannot (then the op runs rope and the copies). `packed`: q, k and v are
   * one buffer [batch, seqLen, numHeads + 2·numKvHeads, headDim] (q's heads, k's, v's). Optional.
   */
  ropeAppend?(args: {
    q: B;
    qOut: B;
    k: B;
    v: B;
    keys: B;
    values: B;
    positions: B;
    batch: number;
    seqLen: number;
    numHeads: number;
    numKvHeads: number;
    headDim: number;
    theta: number;
    capacity: number;
    at: number;
    packed?: boolean;
    /** q, k, v, qOut and the caches are stored as `dtype` (default f32): rotated in f32, rounded once. */
    dtype?: FloatDType;
  }): boolean;
  softmax(args: { x: B; out: B; rows: number; cols: number }): void;
  softmaxBackward(args: { y: B; dY: B; dX: B; rows: number; cols: number }): void;
  logSoftmax(args: { x: B; out: B; rows: number; cols: number }): void;
  logSoftmaxBackward(args: { y: B; dY: B; dX: B; rows: number; cols: number }): void;
  /** Every buffer stored as `dtype` (default f32), computed in f32. */
  swiglu(args: { gate: B; up: B; out: B; n: number; dtype?: FloatDType }): void;
  /**
   * swiglu of a packed [rows, 2·width] gateUp (each row's gate, then its up) into out [rows, width]; false
   * when this backend cannot (then the op splits the halves). Optional.
   */
  swigluPacked?(args: { gateUp: B; out: B; rows: number; width: number; dtype?: FloatDType }): boolean;
  /**
   * x · Wᵀ (+ bias, + addend) of a transformed x [rows, k] in one kernel, where this backend has one
   * for the product (decoding's few rows on a GPU): `input` "rmsNorm" normalises each row of x with its
   * weight and eps first; "swiglu" takes x as packed [rows, 2k] rows (gate, then up) and uses
   * silu(gate) · up. False when it cannot, having recorded nothing (the op then runs the two ops).
   * Optional.
   */
  linearOfInput?(args: {
    x: B;
    weight: B;
    out: B;
    rows: number;
    n: number;
    k: number;
    bias?: B;
    addend?: B;
    input: { kind: "rmsNorm"; weight: B; eps: number } | { kind: "swiglu" };
    /** Every buffer (the norm's weight included) is stored as `dtype` (default f32); sums are f32. */
    dtype?: FloatDType;
  }): boolean;
  /** Every buffer stored as `dtype` (default f32), computed in f32. */
  swigluBackward(args: { gate: B; up: B; dOut: B; dGate: B; dUp: B; n: number; dtype?: FloatDType }): void;
  embedding(args: {
    table: B;
    ids: B;
    out: B;
    count: number;
    dim: number;
    vocab: number;
    /** table and out are f16 (a gather copies halves as they are). */
    dtype?: FloatDType;
  }): void;
  embeddingBackward(args: {
    dOut: B;
    dTable: B;
    uniqueIds: B;
    offsets: B;
    positions: B;
    numUnique: number;
    dim: number;
    /** dOut and dTable are f16: the sums are taken in f32 and each row rounded once. */
    dtype?: FloatDType;
  }): void;
  /**
   * The log-prob, entropy and cross-entropy kernels: logits and dLogits are stored as `dtype` (default
   * f32); out, lse and dOut are f32, and the kernels compute in f32.
   */
  tokenLogProbs(args: {
    logits: B;
    ids: B;
    out: B;
    lse?: B;
    rows: number;
    vocab: number;
    temperature?: number;
    dtype?: FloatDType;
  }): void;
  tokenLogProbsBackward(args: {
    logits: B;
    ids: B;
    lse: B;
    dOut: B;
    dLogits: B;
    rows: number;
    vocab: number;
    temperature?: number;
    accumulate?: boolean;
    dtype?: FloatDType;
  }): void;
  entropy(args: {
    logits: B;
    out: B;
    lse?: B;
    rows: number;
    vocab: number;
    temperature?: number;
    dtype?: FloatDType;
  }): void;
  entropyBackward(args: {
    logits: B;
    lse: B;
    dOut: B;
    dLogits: B;
    rows: number;
    vocab: number;
    temperature?: number;
    accumulate?: boolean;
    dtype?: FloatDType;
  }): void;
  crossEntropy(args: {
    logits: B;
    targets: B;
    out: B;
    lse?: B;
    rows: number;
    vocab: number;
    dtype?: FloatDType;
  }): void;
  crossEntropyBackward(args: {
    logits: B;
    targets: B;
    lse: B;
    dOut: B;
    dLogits: B;
    rows: number;
    vocab: number;
    accumulate?: boolean;
    dtype?: FloatDType;
  }): void;
  /**
   * For each row r of logits [rows, vocab]: the token sampled with the uniform draw uniforms[r] in [0, 1)
   * (i32 into tokens[r]) and its log-probability under softmax(logits / temperature) (into logProbs[r]);
   * temperature 0 is greedy. See reference/sampling.ts.
   */
  sampleRows(args: {
    logits: B;
    uniforms: B;
    tokens: B;
    logProbs: B;
    rows: number;
    vocab: number;
    temperature: number;
    /** The logits' storage (default f32); the softmax and the log-probs are f32. */
    dtype?: FloatDType;
  }): void;

  attentionForward(args: AttentionDims & { q: B; k: B; v: B; out: B; lse?: B; kvStart?: B }): void;
  attentionBackward(
    args: AttentionDims & { q: B; k: B; v: B; out: B; dOut: B; lse: B; dQ: B; dK: B; dV: B; kvStart?: B },
  ): void;
  decodeAttention(args: DecodeAttentionBackendArgs<B>): void;
  /**
   * decodeAttention of a decoding step straight from its fused q/k/v projection: q is [batch, numHeads +
   * 2·numKvHeads, headDim] (each sequence's q heads, then k's, then v's), rotated at `positions` (i32
   * [batch]) as it is read, and the new token's rotated key and its value are written to the caches at
   * slot kvLen - 1 first: ropeAppend and decodeAttention in one kernel. False when this backend cannot,
   * having recorded nothing. Optional.
   */
  decodeAttentionRoped?(args: DecodeAttentionBackendArgs<B> & { positions: B; theta: number }): boolean;
}

/** Backend.decodeAttention's arguments: q [batch, numHeads, headDim], caches [batch, capacity, numKvHeads, headDim]. */
export interface DecodeAttentionBackendArgs<B> {
  q: B;
  kCache: B;
  vCache: B;
  out: B;
  kvLen: number;
  capacity: number;
  kvStart?: B;
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  scale?: number;
  /** q, the caches and out are stored as `dtype` (default f32); scores and sums are f32. */
  dtype?: FloatDType;
}
