import { isGradEnabled, record } from "../autograd.js";
import type { Backend } from "../backend.js";
import { groupTokenPositions } from "../core/token-groups.js";
import { emptyTensor, tensor } from "../runtime.js";
import { shapeSize, type Tensor } from "../tensor.js";
import { inF32 } from "./precision.js";
import { narrow, writeSlice } from "./shape.js";
import {
  appendFits,
  backendOf,
  equalShapes,
  expectDType,
  floatDtypeOf,
  ShapeError,
  sameShape,
  sharedFloatDtype,
} from "./util.js";

const rowsOf = (x: Tensor) => x.size / Math.max(1, x.shape[x.rank - 1]!);
const lastDim = (x: Tensor) => x.shape[x.rank - 1]!;

/**
 * RMSNorm over the last dimension: x · rsqrt(mean(x²) + eps) · weight (Qwen2's norm). An f16 x is read and
 * written as halves by the kernels themselves (sums in f32), with an f16 or f32 weight; an f32 x with an
 * f16 weight runs on an f32 copy of the weight and gives f16, as other mixed ops do.
 */
export function rmsNorm(x: Tensor, weight: Tensor, eps = 1e-6): Tensor {
  if (x.dtype === "f16") return rmsNormStored(x, weight, eps);
  return inF32([x, weight], ([wx, ww]) => rmsNormStored(wx, ww, eps));
}

/** RMSNorm with x and its output in x's dtype and the weight (and its gradient) in the weight's. */
function rmsNormStored(x: Tensor, weight: Tensor, eps: number): Tensor {
  const backend = backendOf("rmsNorm", x, weight);
  const dtype = floatDtypeOf("rmsNorm", x);
  const weightDtype = floatDtypeOf("rmsNorm", weight);
  const dim = lastDim(x);
  if (weight.rank !== 1 || weight.shape[0] !== dim) {
    throw new ShapeError(
      `rmsNorm: weight ${weight.describe()} does not match the last dimension of ${x.describe()}`,
    );
  }
  const rows = rowsOf(x);
  const out = emptyTensor(backend, x.shape, dtype);
  const rstd = emptyTensor(backend, [rows], "f32");
  backend.rmsNorm({
    x: x.buffer,
    weight: weight.buffer,
    out: out.buffer,
    rstd: rstd.buffer,
    rows,
    dim,
    eps,
    dtype,
    weightDtype,
  });
  const result = record("rmsNorm", out, [x, weight], [x, weight, rstd], (g, [sx, sw, sr]) => {
    const dX = emptyTensor(backend, x.shape, dtype);
    const dW = emptyTensor(backend, [dim], weightDtype);
    backend.rmsNormBackward({
      x: sx!.buffer,
      weight: sw!.buffer,
      rstd: sr!.buffer,
      dOut: g.buffer,
      dX: dX.buffer,
      dWeight: dW.buffer,
      rows,
      dim,
      dtype,
      weightDtype,
    });
    return [dX, dW];
  });
  rstd.dispose();
  return result;
}

/**
 * Rotary position embedding (rotate-half convention, as Qwen2/Llama) on x [batch, seqLen, heads, headDim]
 * at the absolute `positions` (i32 [batch, seqLen]; left-padded rows start later). An f16 x is read and
 * written as halves by the kernel (rotated in f32, rounded once), and so is its gradient.
 */
export function rope(x: Tensor, positions: Tensor, theta: number): Tensor {
  const backend = backendOf("rope", x, positions);
  const dtype = floatDtypeOf("rope", x);
  expectDType("rope", positions, "i32");
  if (x.rank !== 4)
    throw new ShapeError(`rope: expected x as [batch, seqLen, heads, headDim], got ${x.describe()}`);
  const [batch, seqLen, numHeads, headDim] = x.shape as [number, number, number, number];
  if (positions.size !== batch * seqLen) {
    throw new ShapeError(`rope: positions ${positions.describe()} do not match ${batch}x${seqLen} tokens`);
  }
  const dims = { batch, seqLen, numHeads, headDim, theta };
  const out = emptyTensor(backend, x.shape, dtype);
  backend.rope({ x: x.buffer, out: out.buffer, positions: positions.buffer, ...dims, dtype });
  return record("rope", out, [x, positions], [positions], (g, [p]) => {
    const dX = emptyTensor(backend, x.shape, dtype);
    backend.rope({ x: g.buffer, out: dX.buffer, positions: p!.buffer, ...dims, dtype, inverse: true });
    return [dX, null];
  });
}

/** A KV cache to append a step's keys and values to, at slots at..at+seqLen. */
export interface CacheAppend {
  keys: Tensor;
  values: Tensor;
  at: number;
}

/**
 * A cached step's rotary embedding and cache append: returns rope(q), and writes rope(k) and v into the
 * KV caches `keys` / `values` [batch, capacity, numKvHeads, headDim] at slots at..at+seqLen. One kernel
 * where the backend has it (the same bits as the separate ops: four dispatches become one); otherwise, or
 * when a gradient would be recorded, or for a mix of dtypes, rope and writeSlice as usual. f16 q, k, v and
 * caches are rotated in f32 and rounded once, as rope does.
 */
export function ropeAppend(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  positions: Tensor,
  theta: number,
  cache: CacheAppend,
): Tensor {
  const backend = backendOf("ropeAppend", q, k, v, positions, cache.keys, cache.values);
  const { keys, values, at } = cache;
  if (q.rank !== 4 || k.rank !== 4 || !equalShapes(k.shape, v.shape) || keys.rank !== 4)
    throw new ShapeError(
      `ropeAppend: expected q, k, v as [batch, seqLen, heads, headDim] and caches [batch, capacity, kvHeads, headDim], got ${q.describe()}, ${k.describe()}, ${v.describe()}, ${keys.describe()}`,
    );
  const [batch, seqLen, numHeads, headDim] = q.shape as [number, number, number, number];
  const numKvHeads = keys.shape[2]!;
  const fused =
    equalShapes(k.shape, [batch, seqLen, numKvHeads, headDim]) &&
    fusedAppend(backend, [q, k, v], positions, theta, cache, { batch, seqLen, numHeads, headDim });
  if (fused) return fused;
  const rotatedKeys = rope(k, positions, theta);
  writeSlice(keys, rotatedKeys, 1, at);
  rotatedKeys.dispose();
  writeSlice(values, v, 1, at);
  return rope(q, positions, theta);
}

/**
 * `ropeAppend` for a fused q/k/v projection's output: qkv [batch, seqLen, numHeads + 2·numKvHeads, headDim]
 * holds each token's q heads, then its k heads, then its v heads. Returns rope(q) [batch, seqLen, numHeads,
 * headDim]. The kernel reads the three where they are; where it cannot run, the heads are split with
 * `narrow` and go through `ropeAppend` (the same results).
 */
export function ropeAppendPacked(
  qkv: Tensor,
  positions: Tensor,
  theta: number,
  cache: CacheAppend,
  heads: { numHeads: number; numKvHeads: number },
): Tensor {
  const backend = backendOf("ropeAppendPacked", qkv, positions, cache.keys, cache.values);
  const { numHeads, numKvHeads } = heads;
  if (qkv.rank !== 4 || qkv.shape[2] !== numHeads + 2 * numKvHeads || cache.keys.rank !== 4)
    throw new ShapeError(
      `ropeAppendPacked: expected qkv as [batch, seqLen, ${numHeads} + 2 x ${numKvHeads} heads, headDim] and caches [batch, capacity, kvHeads, headDim], got ${qkv.describe()}, ${cache.keys.describe()}`,
    );
  const [batch, seqLen, , headDim] = qkv.shape as [number, number, number, number];
  const fused =
    cache.keys.shape[2] === numKvHeads &&
    fusedAppend(backend, [qkv], positions, theta, cache, { batch, seqLen, numHeads, headDim });
  if (fused) return fused;
  const q = narrow(qkv, 2, 0, numHeads);
  const k = narrow(qkv, 2, numHeads, numKvHeads);
  const v = narrow(qkv, 2, numHeads + numKvHeads, numKvHeads);
  try {
    return ropeAppend(q, k, v, positions, theta, cache);
  } finally {
    for (const t of [q, k, v]) t.dispose();
  }
}

/**
 * The one-kernel form of ropeAppend, from separate q, k, v or one packed qkv (`sources` of length 1):
 * rope(q), or undefined, recording nothing, where it does not apply (shapes the kernel does not take,
 * gradients, tensors of more than one dtype, a backend without it, buffers over one binding).
 */
function fusedAppend(
  backend: Backend,
  sources: readonly Tensor[],
  positions: Tensor,
  theta: number,
  cache: CacheAppend,
  dims: { batch: number; seqLen: number; numHeads: number; headDim: number },
): Tensor | undefined {
  const { keys, values, at } = cache;
  const { batch, seqLen, numHeads, headDim } = dims;
  const [capacity, numKvHeads] = [keys.shape[1]!, keys.shape[2]!];
  const fits = appendFits(cache, positions, dims);
  const recorded = isGradEnabled() && sources.some((t) => t.requiresGrad);
  const dtype = sharedFloatDtype([...sources, keys, values]);
  if (!fits || recorded || !dtype || !backend.ropeAppend) return undefined;
  const qOut = emptyTensor(backend, [batch, seqLen, numHeads, headDim], dtype);
  const [q, k, v] = sources.length === 1 ? [sources[0]!, sources[0]!, sources[0]!] : sources;
  const ran = backend.ropeAppend({
    batch,
    seqLen,
    numHeads,
    numKvHeads,
    headDim,
    theta,
    capacity,
    at,
    q: q!.buffer,
    qOut: qOut.buffer,
    k: k!.buffer,
    v: v!.buffer,
    positions: positions.buffer,
    keys: keys.buffer,
    values: values.buffer,
    packed: sources.length === 1,
    dtype,
  });
  if (ran) return qOut;
  qOut.dispose();
  return undefined;
}

export interface AttentionOptions {
  numHeads: number;
  numKvHeads: number;
  causal?: boolean;
  scale?: number;
  /** i32 [batch]: keys before this position are masked (left padding). */
  kvStart?: Tensor;
  /**
   * Use only the first kvLen positions of k and v (default: all). With a KV cache as k and v, this runs a
   * chunk of queries after the cached tokens: the queries are the last seqLen of the kvLen keys.
   * Inference only: there is no gradient through a partly used cache.
   */
  kvLen?: number;
}

/**
 * Fused attention. q: [batch, seqLen, numHeads·headDim] (or [..., numHeads, headDim]); k, v: [batch, kvLen,
 * numKvHeads·headDim]. Causal masks align the queries with the last seqLen keys. Returns q's shape and
 * dtype. f16 q, k and v are read as halves by the kernels, which compute in f32 and round the output (and
 * the gradients) once; a mix of f16 and f32 runs on f32 copies and gives f16.
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions): Tensor {
  if (q.dtype === k.dtype && k.dtype === v.dtype) return attentionStored(q, k, v, options);
  return inF32([q, k, v], ([wq, wk, wv]) => attentionStored(wq, wk, wv, options));
}

/** attention of q, k and v of one float dtype, the output and gradients in it (lse in f32). */
function attentionStored(q: Tensor, k: Tensor, v: Tensor, options: AttentionOptions): Tensor {
  const backend = backendOf("attention", q, k, v, options.kvStart);
  const dtype = floatDtypeOf("attention", q);
  sameShape("attention", k, v);
  const { numHeads, numKvHeads } = options;
  if (numHeads % numKvHeads !== 0)
    throw new ShapeError(`attention: ${numHeads} heads do not group into ${numKvHeads} KV heads`);
  const batch = q.shape[0]!;
  const seqLen = q.shape[1]!;
  const kvCapacity = k.shape[1]!;
  const kvLen = options.kvLen ?? kvCapacity;
  if (!Number.isInteger(kvLen) || kvLen < 1 || kvLen > kvCapacity)
    throw new ShapeError(`attention: kvLen ${kvLen} outside k's ${kvCapacity} positions`);
  const headDim = q.size / (batch * seqLen) / numHeads;
  if (
    !Number.isInteger(headDim) ||
    k.size !== batch * kvCapacity * numKvHeads * headDim ||
    k.shape[0] !== batch
  ) {
    throw new ShapeError(
      `attention: q ${q.describe()}, k ${k.describe()} do not fit ${numHeads}/${numKvHeads} heads`,
    );
  }
  const dims = {
    batch,
    seqLen,
    kvLen,
    kvCapacity,
    numHeads,
    numKvHeads,
    headDim,
    causal: options.causal ?? true,
    scale: options.scale,
    dtype,
  };
  const out = emptyTensor(backend, q.shape, dtype);
  const lse = emptyTensor(backend, [batch, numHeads, seqLen], "f32");
  const kvStart = options.kvStart?.buffer;
  backend.attentionForward({
    ...dims,
    q: q.buffer,
    k: k.buffer,
    v: v.buffer,
    out: out.buffer,
    lse: lse.buffer,
    kvStart,
  });
  const saved = options.kvStart ? [q, k, v, out, lse, options.kvStart] : [q, k, v, out, lse];
  const result = record("attention", out, [q, k, v], saved, (g, [sq, sk, sv, so, sl, ss]) => {
    if (kvLen !== kvCapacity)
      throw new Error("attention: no gradient when only part of k and v is used (kvLen)");
    const dQ = emptyTensor(backend, q.shape, dtype);
    const dK = emptyTensor(backend, k.shape, dtype);
    const dV = emptyTensor(backend, v.shape, dtype);
    backend.attentionBackward({
      ...dims,
      q: sq!.buffer,
      k: sk!.buffer,
      v: sv!.buffer,
      out: so!.buffer,
      dOut: g.buffer,
      lse: sl!.buffer,
      dQ: dQ.buffer,
      dK: dK.buffer,
      dV: dV.buffer,
      kvStart: ss?.buffer,
    });
    return [dQ, dK, dV];
  });
  lse.dispose();
  return result;
}

/** silu(gate) · up — the SwiGLU of Qwen2's MLP (f16 gate and up stay f16, computed in f32). */
export function swiglu(gate: Tensor, up: Tensor): Tensor {
  if (gate.dtype === "f16" && up.dtype === "f16") return swigluStored(gate, up);
  return inF32([gate, up], ([wg, wu]) => swigluStored(wg, wu));
}

/**
 * swiglu of a fused gate/up projection's output: gateUp [..., 2·width] holds each row's gate, then its up;
 * returns silu(gate) · up [..., width]. One kernel reads both halves in place where the backend has it and
 * no gradient is recorded; otherwise the halves are split with `narrow` (the same results).
 */
export function swigluPacked(gateUp: Tensor): Tensor {
  const backend = backendOf("swigluPacked", gateUp);
  if (gateUp.rank < 1 || lastDim(gateUp) % 2 !== 0)
    throw new ShapeError(`swigluPacked: expected gateUp [..., 2 x width], got ${gateUp.describe()}`);
  const width = lastDim(gateUp) / 2;
  const shape = [...gateUp.shape.slice(0, -1), width];
  const recorded = isGradEnabled() && gateUp.requiresGrad;
  const dtype = gateUp.dtype;
  if (!recorded && dtype !== "i32" && backend.swigluPacked) {
    const out = emptyTensor(backend, shape, dtype);
    if (backend.swigluPacked({ gateUp: gateUp.buffer, out: out.buffer, rows: rowsOf(gateUp), width, dtype }))
      return out;
    out.dispose();
  }
  const gate = narrow(gateUp, gateUp.rank - 1, 0, width);
  const up = narrow(gateUp, gateUp.rank - 1, width, width);
  try {
    return swiglu(gate, up);
  } finally {
    gate.dispose();
    up.dispose();
  }
}

/** swiglu of gate and up of one float dtype, the result and gradients in it. */
function swigluStored(gate: Tensor, up: Tensor): Tensor {
  const backend = backendOf("swiglu", gate, up);
  sameShape("swiglu", gate, up);
  const dtype = floatDtypeOf("swiglu", gate);
  const out = emptyTensor(backend, gate.shape, dtype);
  backend.swiglu({ gate: gate.buffer, up: up.buffer, out: out.buffer, n: gate.size, dtype });
  return record("swiglu", out, [gate, up], [gate, up], (g, [sg, su]) => {
    const dGate = emptyTensor(backend, gate.shape, dtype);
    const dUp = emptyTensor(backend, up.shape, dtype);
    backend.swigluBackward({
      gate: sg!.buffer,
      up: su!.buffer,
      dOut: g.buffer,
      dGate: dGate.buffer,
      dUp: dUp.buffer,
      n: gate.size,
      dtype,
    });
    return [dGate, dUp];
  });
}

/**
 * Rows of `table` [vocab, dim] for token `ids`, shaped `shape` (default [ids' count]). Host ids
 * (Int32Array) are uploaded; device ids (an i32 tensor, e.g. tokens just sampled on the GPU) are read
 * where they are, but cannot be differentiated: the gradient groups the ids on the host. An f16 table
 * gives f16 rows (gathered as they are); its gradient is accumulated in f32 and rounded to f16 once.
 */
export function embedding(
  table: Tensor,
  ids: Int32Array | Tensor,
  shape: readonly number[] = [ids instanceof Int32Array ? ids.length : ids.size],
): Tensor {
  const hostIds = ids instanceof Int32Array ? ids : undefined;
  const backend = backendOf("embedding", table, ids instanceof Int32Array ? undefined : ids);
  if (table.rank !== 2)
    throw new ShapeError(`embedding: table must be [vocab, dim], got ${table.describe()}`);
  if (table.dtype === "i32")
    throw new TypeError(`embedding: the table must be f32 or f16, got ${table.describe()}`);
  const dtype = table.dtype;
  const [vocab, dim] = table.shape as [number, number];
  if (!(ids instanceof Int32Array)) {
    expectDType("embedding", ids, "i32");
    if (table.requiresGrad && isGradEnabled())
      throw new TypeError(
        "embedding: device ids cannot be differentiated (the gradient groups the ids on the host); pass an Int32Array, or run under noGrad",
      );
  }
  const count = ids instanceof Int32Array ? ids.length : ids.size;
  if (shapeSize(shape) !== count)
    throw new ShapeError(`embedding: ${count} ids do not fill the shape [${shape.join(", ")}]`);
  const idsTensor = ids instanceof Int32Array ? tensor(ids, [count], { backend, dtype: "i32" }) : ids;
  const out = emptyTensor(backend, [...shape, dim], dtype);
  backend.embedding({
    table: table.buffer,
    ids: idsTensor.buffer,
    out: out.buffer,
    count,
    dim,
    vocab,
    dtype,
  });
  if (!hostIds) return out;
  idsTensor.dispose();
  return record("embedding", out, [table], [], (g) => [embeddingGrad(backend, g, hostIds, vocab, dim)]);
}

/** The table's gradient in g's dtype (an f16 one summed in f32 and rounded once per row). */
function embeddingGrad(backend: Backend, g: Tensor, ids: Int32Array, vocab: number, dim: number): Tensor {
  const grouped = groupTokenPositions(ids, vocab);
  const dtype = floatDtypeOf("embedding", g);
  const dTable = emptyTensor(backend, [vocab, dim], dtype);
  backend.fill({ out: dTable.buffer, n: dTable.size, value: 0, dtype });
  const valid = grouped.uniqueIds.length;
  const uniqueIds = tensor(grouped.uniqueIds, [valid], { backend, dtype: "i32" });
  const offsets = tensor(grouped.offsets, [valid + 1], { backend, dtype: "i32" });
  const positions = tensor(grouped.positions, [grouped.positions.length], { backend, dtype: "i32" });
  backend.embeddingBackward({
    dOut: g.buffer,
    dTable: dTable.buffer,
    uniqueIds: uniqueIds.buffer,
    offsets: offsets.buffer,
    positions: positions.buffer,
    numUnique: valid,
    dim,
    dtype,
  });
  for (const t of [uniqueIds, offsets, positions]) t.dispose();
  return dTable;
}

/** Softmax over the last dimension. */
export function softmax(x: Tensor): Tensor {
  return inF32([x], ([wx]) => softmaxF32(wx));
}

function softmaxF32(x: Tensor): Tensor {
  const backend = backendOf("softmax", x);
  const rows = rowsOf(x);
  const cols = lastDim(x);
  const out = emptyTensor(backend, x.shape, "f32");
  backend.softmax({ x: x.buffer, out: out.buffer, rows, cols });
  return record("softmax", out, [x], [out], (g, [y]) => {
    const dX = emptyTensor(backend, x.shape, "f32");
    backend.softmaxBackward({ y: y!.buffer, dY: g.buffer, dX: dX.buffer, rows, cols });
    return [dX];
  });
}

/** Log-softmax over the last dimension. */
export function logSoftmax(x: Tensor): Tensor {
  return inF32([x], ([wx]) => logSoftmaxF32(wx));
}

function logSoftmaxF32(x: Tensor): Tensor {
  const backend = backendOf("logSoftmax", x);
  const rows = rowsOf(x);
  const cols = lastDim(x);
  const out = emptyTensor(backend, x.shape, "f32");
  backend.logSoftmax({ x: x.buffer, out: out.buffer, rows, cols });
  return record("logSoftmax", out, [x], [out], (g, [y]) => {
    const dX = emptyTensor(backend, x.shape, "f32");
    backend.logSoftmaxBackward({ y: y!.buffer, dY: g.buffer, dX: dX.buffer, rows, cols });
    return [dX];
  });
}

export interface DecodeAttentionOptions {
  numHeads: number;
  numKvHeads: number;
  /** Positions 0..kvLen-1 of the caches are valid (the new token's K/V already written at kvLen-1). */
  kvLen: number;
  scale?: number;
  /** i32 [batch]: keys before this position are masked (left padding). */
  kvStart?: Tensor;
}

/**
 * Attention of one new token per sequence over KV caches [batch, capacity, numKvHeads, headDim] (for
 * generation; not differentiable). q: [batch, numHeads·headDim] or [batch, 1, numHeads, headDim]. f16 q
 * and caches are read as halves (scores and sums in f32, the output rounded once); a mix of f16 and f32
 * runs on f32 copies.
 */
export function decodeAttention(
  q: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  options: DecodeAttentionOptions,
): Tensor {
  if ([q, kCache, vCache].every((t) => t.dtype === "f16"))
    return decodeAttentionStored(q, kCache, vCache, options);
  return inF32([q, kCache, vCache], ([wq, wk, wv]) => decodeAttentionStored(wq, wk, wv, options));
}

/** decodeAttention of q and caches of one float dtype, the output in it. */
function decodeAttentionStored(
  q: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  options: DecodeAttentionOptions,
): Tensor {
  const backend = backendOf("decodeAttention", q, kCache, vCache, options.kvStart);
  sameShape("decodeAttention", kCache, vCache);
  if (kCache.rank !== 4)
    throw new ShapeError(
      `decodeAttention: caches must be [batch, capacity, kvHeads, headDim], got ${kCache.describe()}`,
    );
  const [batch, capacity, numKvHeads, headDim] = kCache.shape as [number, number, number, number];
  if (numKvHeads !== options.numKvHeads || q.size !== batch * options.numHeads * headDim) {
    throw new ShapeError(
      `decodeAttention: q ${q.describe()} and cache ${kCache.describe()} do not fit ${options.numHeads}/${options.numKvHeads} heads`,
    );
  }
  if (options.kvLen < 1 || options.kvLen > capacity)
    throw new ShapeError(`decodeAttention: kvLen ${options.kvLen} outside the cache (capacity ${capacity})`);
  const dtype = floatDtypeOf("decodeAttention", q);
  const out = emptyTensor(backend, q.shape, dtype);
  backend.decodeAttention({
    q: q.buffer,
    kCache: kCache.buffer,
    vCache: vCache.buffer,
    out: out.buffer,
    kvLen: options.kvLen,
    capacity,
    kvStart: options.kvStart?.buffer,
    batch,
    numHeads: options.numHeads,
    numKvHeads,
    headDim,
    scale: options.scale,
    dtype,
  });
  return out;
}
