/**
 * What PPO needs from logits [rows, vocab] (vocab up to ~152k: rows are long): log-probabilities of given
 * tokens, entropy, cross-entropy, and their backward passes. With temperature T every quantity is of
 * z = logits / T, and `lse[r]` = logsumexp(z[r]). Token ids outside [0, vocab) (e.g. -100 padding) are
 * ignored: their output is 0 and their gradient is 0.
 *
 * Forward scheme, two dispatches:
 *  1. statistics: one workgroup per (row, chunk). A row is split into chunks only when there are too few
 *     rows to fill the device (e.g. 2 rows x 152k). Each lane strides over its chunk with vec4 loads
 *     (when vocab % 4 == 0) keeping an online state (m = max z, s = sum e^(z-m), t = sum e^(z-m)(z-m));
 *     t, kept relative to the max, gives the entropy without cancellation: H = log s - t / s. The lanes'
 *     states are merged by a tree in workgroup memory; each (row, chunk) writes its state.
 *  2. finish: one invocation per row merges its chunks' states in order (deterministic) and writes lse
 *     and the output (reading the one logit z[id] it needs).
 * Backward scheme: element-wise, one workgroup per (row, block of 512 vectors) so any row count fills the
 * device; per-row scalars (lse, dOut, id or entropy) are loaded once per invocation.
 * Logits larger than one storage binding ([512, 151936] f32 is 311 MB; lavapipe binds at most 128 MiB) are
 * processed in batches of rows, each binding its window of the logits (`shift`: where the window starts).
 * Logits may be f16 (an f16 model's head): every kernel widens them as it reads them and computes in f32,
 * and dLogits is stored in the logits' dtype, so an f16 head needs no f32 copy of its logits.
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, batchWindows } from "./binding-windows.js";
import {
  enableFor,
  type FloatStorage,
  f32Bits,
  loadF32,
  storageBytes,
  storeAs,
  uniforms,
  vectorOf,
} from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";
import {
  LOWEST_WGSL,
  lanesWgsl,
  type RowTuning,
  rowLanes,
  rowLayout,
  rowMain,
  rowVector,
  workgroupReduce,
} from "./wgsl/row-reduce.js";

/** Enough workgroups to fill a large GPU; below this many rows, long rows are split into chunks. */
const TARGET_WORKGROUPS = 256;
/** Smallest chunk of a split row, in vectors: keeps per-workgroup overhead small against its work. */
const MIN_CHUNK_VECTORS = 1024;
const BACKWARD_LANES = 64;
const BACKWARD_VECTORS_PER_LANE = 8;

type Mode = "logprob" | "entropy";

/** Overrides for tests and tuning (see RowTuning). */
export const logProbsTuning: RowTuning = {};

/** WGSL: rowVector, and the indices in the row of the elements of vector i. */
function vectorType(width: 1 | 4): string {
  return `${rowVector(width)}
${
  width === 4
    ? "fn lanesIndex(i: u32) -> vec4<u32> { return vec4<u32>(i * 4u) + vec4<u32>(0u, 1u, 2u, 3u); }"
    : "fn lanesIndex(i: u32) -> u32 { return i; }"
}`;
}

/** State (m, s, t) of the online logsumexp/entropy, and how two states combine. */
const STATE = /* wgsl */ `
${LOWEST_WGSL}

fn merge(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
  let m = max(a.x, b.x);
  let ea = exp(a.x - m);
  let eb = exp(b.x - m);
  return vec3<f32>(m, a.y * ea + b.y * eb, (a.z + a.y * (a.x - m)) * ea + (b.z + b.y * (b.x - m)) * eb);
}
`;

function buildStatsShader(width: 1 | 4, lanes: number, mode: Mode, storage: FloatStorage): string {
  const entropy = mode === "entropy";
  return /* wgsl */ `${enableFor(storage)}
${vectorType(width)}
${STATE}
${lanesWgsl(lanes)}
struct Params { rows: u32, vectors: u32, chunks: u32, chunkVectors: u32, firstRow: u32, shift: u32, invT: f32 }
@group(0) @binding(0) var<storage, read> logits: array<${vectorOf(storage, width)}>;
@group(0) @binding(1) var<storage, read_write> states: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> params: Params;
${workgroupReduce({
  name: "workgroupMerge",
  type: "vec3<f32>",
  combine: (a, b) => `merge(${a}, ${b})`,
  scratch: "partials",
})}
${rowMain("index")}
  if (index >= params.rows * params.chunks) { return; }
  let row = index / params.chunks;
  let start = (index % params.chunks) * params.chunkVectors;
  let end = min(start + params.chunkVectors, params.vectors);
  let base = params.shift + row * params.vectors;
  var m = LOWEST;
  var s = 0.0;
  var t = 0.0;
  for (var i = start + lane; i < end; i += LANES) {
    let z = ${loadF32(storage, width, "logits[base + i]")} * params.invT;
    let next = max(m, hmax(z));
    let drop = m - next; // <= 0: re-centre the sums on the new max
    let rescale = exp(drop);
    let e = exp(z - next);
    ${entropy ? "t = (t + s * drop) * rescale + hsum(e * max(z - next, V(LOWEST)));" : ""}
    s = s * rescale + hsum(e);
    m = next;
  }
  let state = workgroupMerge(vec3<f32>(m, s, t), lane);
  if (lane == 0u) { states[params.firstRow * params.chunks + index] = vec4<f32>(state, 0.0); }
}`;
}

function buildFinishShader(mode: Mode, storage: FloatStorage): string {
  const logprob = mode === "logprob";
  return /* wgsl */ `${logprob ? enableFor(storage) : ""}
${STATE}
struct Params { rows: u32, chunks: u32, vocab: u32, firstRow: u32, shift: u32, invT: f32, sign: f32 }
@group(0) @binding(0) var<storage, read> states: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> lse: array<f32>;
${
  logprob
    ? `@group(0) @binding(3) var<storage, read> logits: array<${storage}>;
@group(0) @binding(4) var<storage, read> ids: array<i32>;
@group(0) @binding(5) var<uniform> params: Params;`
    : "@group(0) @binding(3) var<uniform> params: Params;"
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let local = id.x + id.y * groups.x * 64u;
  if (local >= params.rows) { return; }
  let row = params.firstRow + local;
  var state = states[row * params.chunks].xyz;
  for (var c = 1u; c < params.chunks; c++) { state = merge(state, states[row * params.chunks + c].xyz); }
  let logSum = log(state.y);
  let rowLse = state.x + logSum;
  lse[row] = rowLse;
  ${
    logprob
      ? `let token = ids[row];
  var value = 0.0;
  if (token >= 0 && u32(token) < params.vocab) {
    let logit = ${loadF32(storage, 1, "logits[params.shift + local * params.vocab + u32(token)]")};
    value = params.sign * (logit * params.invT - rowLse);
  }
  out[row] = value;`
      : "out[row] = logSum - state.z / state.y;"
  }
}`;
}

function buildGradientShader(width: 1 | 4, mode: Mode, accumulate: boolean, storage: FloatStorage): string {
  const logprob = mode === "logprob";
  const slot = "dLogits[base + i]";
  const store = (value: string) =>
    `${slot} = ${storeAs(storage, width, accumulate ? `${loadF32(storage, width, slot)} + ${value}` : value)};`;
  const logit = loadF32(storage, width, "logits[base + i]");
  return /* wgsl */ `${enableFor(storage)}
${vectorType(width)}
${LOWEST_WGSL}
${lanesWgsl(BACKWARD_LANES)}
struct Params {
  rows: u32, vectors: u32, chunks: u32, chunkVectors: u32, vocab: u32, firstRow: u32, shift: u32, invT: f32, sign: f32,
}
@group(0) @binding(0) var<storage, read> logits: array<${vectorOf(storage, width)}>;
@group(0) @binding(1) var<storage, read> lse: array<f32>;
@group(0) @binding(2) var<storage, read> dOut: array<f32>;
@group(0) @binding(3) var<storage, read_write> dLogits: array<${vectorOf(storage, width)}>;
${logprob ? "@group(0) @binding(4) var<storage, read> ids: array<i32>;" : "@group(0) @binding(4) var<storage, read> entropy: array<f32>;"}
@group(0) @binding(5) var<uniform> params: Params;

${rowMain("index")}
  if (index >= params.rows * params.chunks) { return; }
  let local = index / params.chunks;
  let row = params.firstRow + local;
  let start = (index % params.chunks) * params.chunkVectors;
  let end = min(start + params.chunkVectors, params.vectors);
  let base = params.shift + local * params.vectors;
  let rowLse = lse[row];
  ${
    logprob
      ? `let token = ids[row];
  if (token < 0 || u32(token) >= params.vocab) {
    ${accumulate ? "" : `for (var i = start + lane; i < end; i += LANES) { ${slot} = ${storeAs(storage, width, "V(0.0)")}; }`}
    return;
  }
  // d(sign * (z[token] - lse)) / dlogits = sign * (onehot - p) / T
  let scale = params.sign * dOut[row] * params.invT;
  for (var i = start + lane; i < end; i += LANES) {
    let p = exp(${logit} * params.invT - rowLse);
    let onehot = select(V(0.0), V(1.0), lanesIndex(i) == ${width === 4 ? "vec4<u32>(u32(token))" : "u32(token)"});
    ${store("scale * (onehot - p)")}
  }`
      : `// dH/dlogits = -p * (log p + H) / T; log p clamped so that p = 0 gives 0, not 0 * -inf
  let rowEntropy = entropy[row];
  let scale = -dOut[row] * params.invT;
  for (var i = start + lane; i < end; i += LANES) {
    let logP = max(${logit} * params.invT - rowLse, V(LOWEST));
    ${store("scale * exp(logP) * (logP + rowEntropy)")}
  }`
  }
}`;
}

interface LogitShape {
  rows: number;
  vocab: number;
  /** How logits (and dLogits) are stored; f32 when not given. */
  dtype?: FloatStorage;
}

function checkTemperature(temperature: number): void {
  if (!(temperature > 0)) throw new RangeError(`temperature must be positive, got ${temperature}`);
}

/** Records the two forward dispatches; writes `out` and `lse` (both [rows]). */
function forward(
  ctx: GpuContext,
  mode: Mode,
  args: {
    logits: GPUBuffer;
    ids?: GPUBuffer;
    out: GPUBuffer;
    lse: GPUBuffer;
    rows: number;
    vocab: number;
    temperature: number;
    sign: number;
    dtype?: FloatStorage;
  },
): void {
  const { rows, vocab } = args;
  const storage = args.dtype ?? "f32";
  checkTemperature(args.temperature);
  if (rows === 0) return;
  if (vocab === 0) throw new RangeError(`${mode}: vocab must be positive`);
  const { width, vectors } = rowLayout(vocab);
  let chunks = 1;
  if (rows < TARGET_WORKGROUPS) {
    chunks = Math.max(
      1,
      Math.min(Math.ceil(TARGET_WORKGROUPS / rows), Math.floor(vectors / MIN_CHUNK_VECTORS)),
    );
  }
  const chunkVectors = Math.ceil(vectors / chunks);
  chunks = Math.ceil(vectors / chunkVectors);
  const lanes = rowLanes(ctx, chunkVectors, logProbsTuning);
  const invT = 1 / args.temperature;
  const states = ctx.pool.acquire(rows * chunks * 16, "logprobs states");
  const label = storage === "f32" ? mode : `${mode} ${storage}`;
  const stats = ctx.pipeline(`${label} stats`, statsShader(width, lanes, mode, storage));
  const finish = ctx.pipeline(`${label} finish`, finishShader(mode, storage));
  const elementBytes = storageBytes(storage);
  for (const batch of batches(ctx, rows, vocab * elementBytes)) {
    const { bindings, shift } = batchWindows(
      ctx,
      [args.logits],
      batch,
      vocab * elementBytes,
      width * elementBytes,
    );
    ctx.dispatch(
      stats,
      [bindings[0]!, states],
      uniforms(batch.count, vectors, chunks, chunkVectors, batch.first, shift, f32Bits(invT)),
      grid(batch.count * chunks),
    );
    const perRow = [states, args.out, args.lse];
    ctx.dispatch(
      finish,
      mode === "logprob" ? [...perRow, bindings[0]!, args.ids!] : perRow,
      uniforms(batch.count, chunks, vocab, batch.first, shift * width, f32Bits(invT), f32Bits(args.sign)),
      grid(Math.ceil(batch.count / 64)),
    );
  }
  ctx.pool.release(states);
}

function withLse(
  ctx: GpuContext,
  lse: GPUBuffer | undefined,
  rows: number,
  record: (lse: GPUBuffer) => void,
): void {
  const buffer = lse ?? ctx.pool.acquire(rows * 4, "lse scratch");
  record(buffer);
  if (!lse) ctx.pool.release(buffer);
}

function backward(
  ctx: GpuContext,
  mode: Mode,
  args: {
    logits: GPUBuffer;
    lse: GPUBuffer;
    dOut: GPUBuffer;
    dLogits: GPUBuffer;
    perRow: GPUBuffer; // ids (logprob) or entropy (entropy)
    rows: number;
    vocab: number;
    temperature: number;
    sign: number;
    accumulate: boolean;
    dtype?: FloatStorage;
  },
): void {
  const { rows, vocab } = args;
  const storage = args.dtype ?? "f32";
  checkTemperature(args.temperature);
  if (rows === 0 || vocab === 0) return;
  const { width, vectors } = rowLayout(vocab);
  const chunkVectors = BACKWARD_LANES * BACKWARD_VECTORS_PER_LANE;
  const chunks = Math.ceil(vectors / chunkVectors);
  const label = storage === "f32" ? `${mode} backward` : `${mode} backward ${storage}`;
  const pipeline = ctx.pipeline(label, gradientShader(width, mode, args.accumulate, storage));
  const invT = 1 / args.temperature;
  const elementBytes = storageBytes(storage);
  for (const batch of batches(ctx, rows, vocab * elementBytes)) {
    const { bindings, shift } = batchWindows(
      ctx,
      [args.logits, args.dLogits],
      batch,
      vocab * elementBytes,
      width * elementBytes,
    );
    ctx.dispatch(
      pipeline,
      [bindings[0]!, args.lse, args.dOut, bindings[1]!, args.perRow],
      uniforms(
        batch.count,
        vectors,
        chunks,
        chunkVectors,
        vocab,
        batch.first,
        shift,
        f32Bits(invT),
        f32Bits(args.sign),
      ),
      grid(batch.count * chunks),
    );
  }
}

/**
 * out[r] = z[r, ids[r]] - logsumexp(z[r]), z = logits / temperature; 0 where ids[r] is outside [0, vocab).
 * `lse`, when given, receives logsumexp(z[r]) (what the backward pass needs).
 */
export function tokenLogProbs(
  ctx: GpuContext,
  a: {
    logits: GPUBuffer;
    ids: GPUBuffer;
    out: GPUBuffer;
    lse?: GPUBuffer;
    temperature?: number;
  } & LogitShape,
): void {
  withLse(ctx, a.lse, a.rows, (lse) =>
    forward(ctx, "logprob", { ...a, lse, temperature: a.temperature ?? 1, sign: 1 }),
  );
}

/**
 * dLogits = dOut[r] * (onehot(ids[r]) - softmax(z[r])) / temperature (zero rows where the id is ignored),
 * written, or added when `accumulate`.
 */
export function tokenLogProbsBackward(
  ctx: GpuContext,
  a: {
    logits: GPUBuffer;
    ids: GPUBuffer;
    lse: GPUBuffer;
    dOut: GPUBuffer;
    dLogits: GPUBuffer;
    temperature?: number;
    accumulate?: boolean;
  } & LogitShape,
): void {
  backward(ctx, "logprob", {
    ...a,
    perRow: a.ids,
    temperature: a.temperature ?? 1,
    sign: 1,
    accumulate: a.accumulate ?? false,
  });
}

/** out[r] = -sum p log p of p = softmax(logits[r] / temperature); `lse` as in tokenLogProbs. */
export function entropy(
  ctx: GpuContext,
  a: { logits: GPUBuffer; out: GPUBuffer; lse?: GPUBuffer; temperature?: number } & LogitShape,
): void {
  withLse(ctx, a.lse, a.rows, (lse) =>
    forward(ctx, "entropy", { ...a, lse, temperature: a.temperature ?? 1, sign: 1 }),
  );
}

/**
 * dLogits = -dOut[r] * p * (log p + H[r]) / temperature, written, or added when `accumulate`.
 * `entropy` (optional, [rows]) is the forward's output; without it, H is recomputed (one more read of
 * the logits).
 */
export function entropyBackward(
  ctx: GpuContext,
  a: {
    logits: GPUBuffer;
    lse: GPUBuffer;
    dOut: GPUBuffer;
    dLogits: GPUBuffer;
    entropy?: GPUBuffer;
    temperature?: number;
    accumulate?: boolean;
  } & LogitShape,
): void {
  const temperature = a.temperature ?? 1;
  let values = a.entropy;
  if (!values) {
    values = ctx.pool.acquire(a.rows * 4, "entropy scratch");
    entropy(ctx, {
      logits: a.logits,
      out: values,
      rows: a.rows,
      vocab: a.vocab,
      temperature,
      dtype: a.dtype,
    });
  }
  backward(ctx, "entropy", {
    ...a,
    perRow: values,
    temperature,
    sign: 1,
    accumulate: a.accumulate ?? false,
  });
  if (!a.entropy) ctx.pool.release(values);
}

/**
 * out[r] = logsumexp(logits[r]) - logits[r, targets[r]]: the per-row loss, 0 where targets[r] is -100
 * (or any id outside [0, vocab)). `lse` as in tokenLogProbs.
 */
export function crossEntropy(
  ctx: GpuContext,
  a: { logits: GPUBuffer; targets: GPUBuffer; out: GPUBuffer; lse?: GPUBuffer } & LogitShape,
): void {
  withLse(ctx, a.lse, a.rows, (lse) =>
    forward(ctx, "logprob", { ...a, ids: a.targets, lse, temperature: 1, sign: -1 }),
  );
}

/** dLogits = dOut[r] * (softmax(logits[r]) - onehot(targets[r])), zero rows where ignored; written or added. */
export function crossEntropyBackward(
  ctx: GpuContext,
  a: {
    logits: GPUBuffer;
    targets: GPUBuffer;
    lse: GPUBuffer;
    dOut: GPUBuffer;
    dLogits: GPUBuffer;
    accumulate?: boolean;
  } & LogitShape,
): void {
  backward(ctx, "logprob", {
    ...a,
    perRow: a.targets,
    temperature: 1,
    sign: -1,
    accumulate: a.accumulate ?? false,
  });
}

// The kernels' WGSL, built once per distinct parameters.
const statsShader = cachedBuilder(buildStatsShader);
const finishShader = cachedBuilder(buildFinishShader);
const gradientShader = cachedBuilder(buildGradientShader);
