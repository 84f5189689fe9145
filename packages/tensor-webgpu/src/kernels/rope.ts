/**
 * Rotary position embedding, Qwen2/Llama "rotate_half" convention: for p < half = headDim/2,
 * angle = pos * theta^(-2p/headDim), (x[p], x[p+half]) -> (x[p] cos - x[p+half] sin, x[p+half] cos + x[p] sin).
 * `inverse` rotates by -angle, which is also the backward pass (a rotation's transpose is its inverse).
 *
 * Scheme: one invocation per (token, head, group of 4 pairs) (1 pair when half % 4 != 0), reading
 * x[p..p+4] and x[p+half..] as vec4s. The angle is computed in turns, as 0.32 fixed point: the frequency
 * table theta^(-2p/headDim) / 2π (< 1 turn per position) is rounded to u32 multiples of 2^-32 on the CPU
 * and baked into the shader, and u32(pos) * table wraps modulo 2^32, dropping whole turns exactly (for
 * negative positions too). So cos/sin only ever see [0, 2π) — GPU sin/cos lose accuracy on large
 * arguments — and the angle's error is |pos| * 2^-33 turns (2e-5 rad at position 32k, where an f32
 * product pos * freq is already off by ~1e-3 rad).
 * Each invocation reads exactly the elements it writes, so `out` may be `x` (a variant with one
 * read_write binding, since WebGPU forbids binding a buffer as read and read_write at once).
 * Tensors larger than one storage binding are processed in batches of tokens. f16 x and out are read and
 * written as halves by the kernel itself, rotated in f32 and rounded once on store (the bits of an f32
 * copy rotated and cast back).
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, batchWindows, maxBindingBytes } from "./binding-windows.js";
import { enableFor, type FloatStorage, loadF32, storageBytes, storeAs, vectorOf } from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

const LANES = 64;

/** theta^(-2p/headDim) / 2π per pair p, in turns per position as 0.32 fixed point, grouped by `width`. */
function frequencyTable(headDim: number, theta: number, width: 1 | 4): string {
  const half = headDim / 2;
  const turns = Array.from({ length: half }, (_, p) =>
    Math.round(((theta ** ((-2 * p) / headDim) / (2 * Math.PI)) * 2 ** 32) % 2 ** 32),
  );
  const entries: string[] = [];
  for (let p = 0; p < half; p += width) {
    const group = turns.slice(p, p + width).map((t) => `${t}u`);
    entries.push(width === 4 ? `vec4<u32>(${group.join(", ")})` : group[0]!);
  }
  return `const TURNS = array<${width === 4 ? "vec4<u32>" : "u32"}, ${entries.length}>(${entries.join(", ")});`;
}

function buildRopeShader(
  headDim: number,
  theta: number,
  width: 1 | 4,
  inPlace: boolean,
  storage: FloatStorage,
): string {
  const source = inPlace ? "data" : "x";
  const target = inPlace ? "data" : "out";
  const half = storage === "f16";
  // Halves are widened as they are read and rounded as they are stored; f32 runs the same text as ever.
  const load = (index: string) => (half ? `V(${source}[${index}])` : `${source}[${index}]`);
  const store = (value: string) => (half ? `S(${value})` : value);
  return /* wgsl */ `${enableFor(storage)}
alias V = ${width === 4 ? "vec4<f32>" : "f32"};${half ? `\nalias S = ${width === 4 ? "vec4<f16>" : "f16"};` : ""}
${frequencyTable(headDim, theta, width)}
const TAU = 6.283185307179586;
struct Params { count: u32, pairVectors: u32, numHeads: u32, sign: f32, firstToken: u32, shift: u32 }
${
  inPlace
    ? `@group(0) @binding(0) var<storage, read_write> data: array<${half ? "S" : "V"}>;
@group(0) @binding(1) var<storage, read> positions: array<i32>;
@group(0) @binding(2) var<uniform> params: Params;`
    : `@group(0) @binding(0) var<storage, read> x: array<${half ? "S" : "V"}>;
@group(0) @binding(1) var<storage, read_write> out: array<${half ? "S" : "V"}>;
@group(0) @binding(2) var<storage, read> positions: array<i32>;
@group(0) @binding(3) var<uniform> params: Params;`
}

@compute @workgroup_size(${LANES})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let index = id.x + id.y * groups.x * ${LANES}u;
  if (index >= params.count) { return; }
  let pair = index % params.pairVectors;
  let tokenHead = index / params.pairVectors;
  let position = u32(positions[params.firstToken + tokenHead / params.numHeads]);
  let angle = V(position * TURNS[pair]) * (TAU / 4294967296.0); // the wrapped product is the turn's fraction
  let cosine = cos(angle);
  let sine = params.sign * sin(angle);
  let first = params.shift + tokenHead * 2u * params.pairVectors + pair;
  let second = first + params.pairVectors;
  let a = ${load("first")};
  let b = ${load("second")};
  ${target}[first] = ${store("a * cosine - b * sine")};
  ${target}[second] = ${store("b * cosine + a * sine")};
}`;
}

/**
 * Rotates x [batch, seqLen, numHeads, headDim] into `out` (which may be `x`: in place is supported) by each
 * token's absolute position, positions: i32 [batch * seqLen] (with left padding, the first real token of a
 * row has position 0 wherever it sits). `inverse` rotates by -angle: the backward pass, applied to dOut.
 */
export function rope(
  ctx: GpuContext,
  a: {
    x: GPUBuffer;
    out: GPUBuffer;
    positions: GPUBuffer;
    batch: number;
    seqLen: number;
    numHeads: number;
    headDim: number;
    theta: number;
    inverse?: boolean;
    /** Elements of x and out (default f32). */
    dtype?: FloatStorage;
  },
): void {
  const { batch: batchSize, seqLen, numHeads, headDim, theta } = a;
  const storage = a.dtype ?? "f32";
  const elementBytes = storageBytes(storage);
  if (headDim % 2 !== 0) throw new RangeError(`rope: headDim must be even, got ${headDim}`);
  const half = headDim / 2;
  const count = batchSize * seqLen * numHeads * half;
  if (count === 0) return;
  const width: 1 | 4 = half % 4 === 0 ? 4 : 1;
  const pairVectors = half / width;
  const inPlace = a.x === a.out;
  const pipeline = ctx.pipeline("rope", ropeShader(headDim, theta, width, inPlace, storage));
  const tokenBytes = numHeads * headDim * elementBytes;
  for (const batch of batches(ctx, batchSize * seqLen, tokenBytes)) {
    const { bindings, shift } = batchWindows(
      ctx,
      inPlace ? [a.x] : [a.x, a.out],
      batch,
      tokenBytes,
      width * elementBytes,
    );
    const vectors = (batch.count * numHeads * half) / width;
    const params = new Uint32Array([vectors, pairVectors, numHeads, 0, batch.first, shift]);
    new Float32Array(params.buffer)[3] = a.inverse ? -1 : 1;
    ctx.dispatch(pipeline, [...bindings, a.positions], params, grid(Math.ceil(vectors / LANES)));
  }
}

/**
 * WGSL: the element type V (vec4f, or f32 when `width` is 1), the frequency table and
 * `rotate(a, b, position, pair)`: the pair vectors (a, b) of one head rotated by position's angle, with
 * the arithmetic of `rope`, so kernels that rotate as they go compute the same bits.
 */
export function rotationWgsl(headDim: number, theta: number, width: 1 | 4): string {
  return /* wgsl */ `alias V = ${width === 4 ? "vec4<f32>" : "f32"};
${frequencyTable(headDim, theta, width)}
const TAU = 6.283185307179586;
struct Rotated { first: V, second: V }
fn rotate(a: V, b: V, position: u32, pair: u32) -> Rotated {
  let angle = V(position * TURNS[pair]) * (TAU / 4294967296.0);
  let cosine = cos(angle);
  let sine = sin(angle);
  return Rotated(a * cosine - b * sine, b * cosine + a * sine);
}`;
}

/**
 * A decoding step's rotary embedding and KV-cache append in one dispatch, where they were four: q rotated
 * into qOut; k rotated and v copied into the caches [batch, capacity, numKvHeads, headDim] at slots
 * at..at+seqLen. The invocations are laid out as three ranges — q's pair vectors, k's, then v's — and each
 * does what `rope` (or a copy) does for its element, with the same arithmetic, so the results are the
 * same bits as the separate kernels'. Each token's q, k and v heads are read from rows of `qRowHeads` (q)
 * and `kvRowHeads` (k, v) heads starting at heads qHead, kHead and vHead, so q, k and v may be one packed
 * buffer (a fused q/k/v projection's output). With f16 storage every buffer but the positions holds
 * halves: q and k are widened as they are read, rotated in f32 and rounded once on store; v's halves are
 * copied as they are.
 */
function buildRopeAppendShader(headDim: number, theta: number, width: 1 | 4, storage: FloatStorage): string {
  const element = storage === "f16" ? "S" : "V";
  const load = (array: string, index: string) => loadF32(storage, width, `${array}[${index}]`);
  const store = (value: string) => storeAs(storage, width, value);
  return /* wgsl */ `${enableFor(storage)}
${rotationWgsl(headDim, theta, width)}${storage === "f16" ? `\nalias S = ${vectorOf("f16", width)};` : ""}
struct Params {
  qCount: u32, kCount: u32, pairVectors: u32, numHeads: u32, numKvHeads: u32, seqLen: u32, capacity: u32, at: u32,
  qRowHeads: u32, kvRowHeads: u32, qHead: u32, kHead: u32, vHead: u32,
}
@group(0) @binding(0) var<storage, read> q: array<${element}>;
@group(0) @binding(1) var<storage, read_write> qOut: array<${element}>;
@group(0) @binding(2) var<storage, read> k: array<${element}>;
@group(0) @binding(3) var<storage, read> v: array<${element}>;
@group(0) @binding(4) var<storage, read_write> keys: array<${element}>;
@group(0) @binding(5) var<storage, read_write> values: array<${element}>;
@group(0) @binding(6) var<storage, read> positions: array<i32>;
@group(0) @binding(7) var<uniform> params: Params;

@compute @workgroup_size(${LANES})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  var index = id.x + id.y * groups.x * ${LANES}u;
  if (index < params.qCount) {
    let pair = index % params.pairVectors;
    let tokenHead = index / params.pairVectors;
    let token = tokenHead / params.numHeads;
    let source = (token * params.qRowHeads + params.qHead + tokenHead % params.numHeads) * 2u * params.pairVectors + pair;
    let r = rotate(${load("q", "source")}, ${load("q", "source + params.pairVectors")}, u32(positions[token]), pair);
    let first = tokenHead * 2u * params.pairVectors + pair;
    qOut[first] = ${store("r.first")};
    qOut[first + params.pairVectors] = ${store("r.second")};
    return;
  }
  index -= params.qCount;
  let isValue = index >= params.kCount;
  if (isValue) { index -= params.kCount; }
  if (index >= params.kCount) { return; }
  let pair = index % params.pairVectors;
  let tokenHead = index / params.pairVectors;
  let token = tokenHead / params.numKvHeads;
  let head = tokenHead % params.numKvHeads;
  let row = token / params.seqLen;
  let slot = params.at + token % params.seqLen;
  let first = (token * params.kvRowHeads + select(params.kHead, params.vHead, isValue) + head) * 2u * params.pairVectors + pair;
  let slotIndex = ((row * params.capacity + slot) * params.numKvHeads + head) * 2u * params.pairVectors + pair;
  if (isValue) {
    values[slotIndex] = v[first];
    values[slotIndex + params.pairVectors] = v[first + params.pairVectors];
    return;
  }
  let r = rotate(${load("k", "first")}, ${load("k", "first + params.pairVectors")}, u32(positions[token]), pair);
  keys[slotIndex] = ${store("r.first")};
  keys[slotIndex + params.pairVectors] = ${store("r.second")};
}`;
}

/**
 * q [batch, seqLen, numHeads, headDim] rotated into qOut; k [batch, seqLen, numKvHeads, headDim] rotated
 * into `keys` and v copied into `values` (both [batch, capacity, numKvHeads, headDim]) at slots
 * at..at+seqLen; positions i32 [batch * seqLen]. `packed`: q, k and v are one buffer [batch, seqLen,
 * numHeads + 2·numKvHeads, headDim], each token's q heads, then its k heads, then its v heads. Returns
 * false, recording nothing, when a buffer does not fit one storage binding (the caller then runs rope and
 * the copies separately).
 */
export function ropeAppend(
  ctx: GpuContext,
  a: {
    q: GPUBuffer;
    qOut: GPUBuffer;
    k: GPUBuffer;
    v: GPUBuffer;
    keys: GPUBuffer;
    values: GPUBuffer;
    positions: GPUBuffer;
    batch: number;
    seqLen: number;
    numHeads: number;
    numKvHeads: number;
    headDim: number;
    theta: number;
    capacity: number;
    at: number;
    packed?: boolean;
    /** Elements of q, k, v, qOut and the caches (default f32). */
    dtype?: FloatStorage;
  },
): boolean {
  const { batch, seqLen, numHeads, numKvHeads, headDim, theta, capacity, at } = a;
  const storage = a.dtype ?? "f32";
  const elementBytes = storageBytes(storage);
  if (headDim % 2 !== 0) throw new RangeError(`ropeAppend: headDim must be even, got ${headDim}`);
  if (at < 0 || at + seqLen > capacity)
    throw new RangeError(`ropeAppend: slots ${at}..${at + seqLen} do not fit a cache of ${capacity}`);
  const half = headDim / 2;
  const width: 1 | 4 = half % 4 === 0 ? 4 : 1;
  const pairVectors = half / width;
  const tokens = batch * seqLen;
  const packedHeads = numHeads + 2 * numKvHeads;
  const qBytes = tokens * numHeads * headDim * elementBytes;
  const qInBytes = a.packed ? tokens * packedHeads * headDim * elementBytes : qBytes;
  const kBytes = a.packed ? qInBytes : tokens * numKvHeads * headDim * elementBytes;
  const cacheBytes = batch * capacity * numKvHeads * headDim * elementBytes;
  if (Math.max(qInBytes, cacheBytes) > maxBindingBytes(ctx)) return false;
  const qCount = (tokens * numHeads * half) / width;
  const kCount = (tokens * numKvHeads * half) / width;
  const total = qCount + 2 * kCount;
  if (total === 0) return true;
  const range = (buffer: GPUBuffer, size: number) => ({ buffer, offset: 0, size });
  // Rows of heads and where q's, k's and v's start in them.
  const layout = a.packed
    ? [packedHeads, packedHeads, 0, numHeads, numHeads + numKvHeads]
    : [numHeads, numKvHeads, 0, 0, 0];
  const sizes = [qCount, kCount, pairVectors, numHeads, numKvHeads, seqLen, capacity, at];
  const params = new Uint32Array([...sizes, ...layout]);
  ctx.dispatch(
    ctx.pipeline(
      storage === "f16" ? "rope + cache append f16" : "rope + cache append",
      ropeAppendShader(headDim, theta, width, storage),
    ),
    [
      range(a.q, qInBytes),
      range(a.qOut, qBytes),
      range(a.k, kBytes),
      range(a.v, kBytes),
      range(a.keys, cacheBytes),
      range(a.values, cacheBytes),
      range(a.positions, tokens * 4),
    ],
    params,
    grid(Math.ceil(total / LANES)),
  );
  return true;
}

// The kernels' WGSL, built once per distinct parameters.
const ropeShader = cachedBuilder(buildRopeShader);
const ropeAppendShader = cachedBuilder(buildRopeAppendShader);
