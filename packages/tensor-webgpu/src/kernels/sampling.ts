/**
 * Sampling the next token of each row of logits [rows, vocab] on the GPU, so that decoding reads back two
 * numbers per row instead of the whole row (151,936 floats for Qwen2.5). Same semantics as the CPU's
 * sampleToken without truncation (see reference/sampling.ts): with scale = 1/T (1 when greedy),
 * p_i ∝ exp((l_i - max) * scale); the token is the argmax (first of ties) when greedy, otherwise the first
 * i at which target = u * sum drops below 0 when the weights are subtracted in order; logProb is the
 * token's log p.
 *
 * Scheme, one workgroup of 256 invocations per row:
 *  1. max/argmax: lanes stride through the row (coalesced loads), then a tree in workgroup memory combines
 *     them, ties going to the lower index.
 *  2. each lane sums the weights of its contiguous chunk of ceil(vocab / 256) entries, in order.
 *  3. lane 0 adds the 256 chunk sums in order (the normaliser), subtracts whole chunks from the target
 *     while it stays >= 0, then walks the crossing chunk entry by entry with the same weights (on into the
 *     following chunks should rounding leave it unspent); if nothing crosses, the argmax, as on the CPU.
 * Logits larger than one storage binding are processed in batches of rows, each binding its window of
 * the logits (`shift`: where the window starts); uniforms, tokens and logProbs are per-row and bound whole.
 * A row holding NaN or +Infinity gets a NaN logProb, as in the reference (its token is noise; callers such
 * as generate() stop on it), found from the bits: compilers may assume floats are never NaN. -Infinity
 * entries are masked ones and weigh 0.
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, batchWindows } from "./binding-windows.js";
import { enableFor, type FloatStorage, f32Bits, loadF32, storageBytes, uniforms } from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

const LANES = 256;

/** The kernel for logits stored as `storage`: halves are widened as they are read, the rest is f32. */
function buildSampleRowsShader(storage: FloatStorage): string {
  const logit = (index: string) => loadF32(storage, 1, `logits[${index}]`);
  return /* wgsl */ `${enableFor(storage)}
const LANES = ${LANES}u;
const NONE = 0xffffffffu;
const LOWEST = -0x1.fffffep+127f; // lowest finite f32: -Infinity logits weigh exp(LOWEST) = 0, never NaN

// rows, firstRow: of this batch; shift: where the row of firstRow starts in the logits window.
struct Params { rows: u32, vocab: u32, chunk: u32, firstRow: u32, shift: u32, greedy: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> logits: array<${storage}>;
@group(0) @binding(1) var<storage, read> draws: array<f32>;
@group(0) @binding(2) var<storage, read_write> tokens: array<i32>;
@group(0) @binding(3) var<storage, read_write> logProbs: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

var<workgroup> bestValues: array<f32, LANES>;
var<workgroup> bestIndices: array<u32, LANES>;
var<workgroup> chunkSums: array<f32, LANES>;
var<workgroup> broken: atomic<u32>; // set when the row holds NaN or +Infinity (zero at the start)

fn isBroken(value: f32) -> bool {
  let bits = bitcast<u32>(value);
  return (bits & 0x7fffffffu) >= 0x7f800000u && bits != 0xff800000u;
}

fn better(value: f32, index: u32, bestValue: f32, bestIndex: u32) -> bool {
  return bestIndex == NONE || value > bestValue || (value == bestValue && index < bestIndex);
}

fn weight(logit: f32, maxLogit: f32) -> f32 {
  return exp(max((logit - maxLogit) * params.scale, LOWEST));
}

@compute @workgroup_size(LANES)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let local = group.x + group.y * groups.x;
  if (local >= params.rows) { return; }
  let base = params.shift + local * params.vocab;

  var bestValue = 0.0;
  var bestIndex = NONE;
  var sawBroken = false;
  for (var i = lane; i < params.vocab; i += LANES) {
    let value = ${logit("base + i")};
    sawBroken = sawBroken || isBroken(value);
    if (better(value, i, bestValue, bestIndex)) { bestValue = value; bestIndex = i; }
  }
  if (sawBroken) { atomicOr(&broken, 1u); }
  bestValues[lane] = bestValue;
  bestIndices[lane] = bestIndex;
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride && bestIndices[lane + stride] != NONE &&
        better(bestValues[lane + stride], bestIndices[lane + stride], bestValues[lane], bestIndices[lane])) {
      bestValues[lane] = bestValues[lane + stride];
      bestIndices[lane] = bestIndices[lane + stride];
    }
    workgroupBarrier();
  }
  let maxLogit = bestValues[0];

  let begin = min(lane * params.chunk, params.vocab);
  let end = min(begin + params.chunk, params.vocab);
  var chunkSum = 0.0;
  for (var i = begin; i < end; i++) { chunkSum += weight(${logit("base + i")}, maxLogit); }
  chunkSums[lane] = chunkSum;
  workgroupBarrier();
  if (lane != 0u) { return; }

  var total = 0.0;
  for (var k = 0u; k < LANES; k++) { total += chunkSums[k]; }
  let row = params.firstRow + local;
  var token = bestIndices[0];
  if (params.greedy == 0u) {
    // A draw rounded up to 1 (as an f32) would spend the whole sum: take the largest f32 below 1.
    var remaining = min(draws[row], 0x1.fffffep-1f) * total;
    var k = 0u;
    while (k < LANES && remaining - chunkSums[k] >= 0.0) {
      remaining -= chunkSums[k];
      k++;
    }
    for (var i = min(k * params.chunk, params.vocab); i < params.vocab; i++) {
      remaining -= weight(${logit("base + i")}, maxLogit);
      if (remaining < 0.0) {
        token = i;
        break;
      }
    }
  }
  tokens[row] = i32(token);
  // A quiet NaN's bits (with the flag as payload: a NaN written as a constant does not compile).
  let flag = atomicLoad(&broken);
  logProbs[row] = select(
    (${logit("base + token")} - maxLogit) * params.scale - log(total),
    bitcast<f32>(0x7fc00000u | flag),
    flag != 0u,
  );
}`;
}

/**
 * For each row r of `logits` [rows, vocab] (stored as `dtype`, default f32), with the uniform draw
 * `uniforms[r]` in [0, 1): the sampled token (i32) into `tokens[r]` and its log-probability under
 * softmax(logits / temperature) into `logProbs[r]` (f32). Temperature 0 is greedy (argmax, first of ties; logProb under softmax(logits)).
 */
export function sampleRows(
  ctx: GpuContext,
  args: {
    logits: GPUBuffer;
    uniforms: GPUBuffer;
    tokens: GPUBuffer;
    logProbs: GPUBuffer;
    rows: number;
    vocab: number;
    temperature: number;
    /** The logits' storage (default f32); the softmax and the log-probabilities are f32. */
    dtype?: FloatStorage;
  },
): void {
  const { rows, vocab, temperature } = args;
  const storage = args.dtype ?? "f32";
  const elementBytes = storageBytes(storage);
  if (!(temperature >= 0) || !Number.isFinite(temperature))
    throw new RangeError(`sampleRows: temperature must be >= 0, got ${temperature}`);
  if (rows === 0) return;
  if (!(vocab > 0)) throw new RangeError("sampleRows: vocab must be positive");
  const greedy = temperature === 0;
  const scale = greedy ? 1 : 1 / temperature;
  const chunk = Math.ceil(vocab / LANES);
  const pipeline = ctx.pipeline(
    storage === "f16" ? "sample rows f16" : "sample rows",
    sampleRowsShader(storage),
  );
  for (const batch of batches(ctx, rows, vocab * elementBytes)) {
    const { bindings, shift } = batchWindows(ctx, [args.logits], batch, vocab * elementBytes, elementBytes);
    ctx.dispatch(
      pipeline,
      [bindings[0]!, args.uniforms, args.tokens, args.logProbs],
      uniforms(batch.count, vocab, chunk, batch.first, shift, greedy ? 1 : 0, f32Bits(scale)),
      grid(batch.count),
    );
  }
}

// The kernel's WGSL, built once per storage.
const sampleRowsShader = cachedBuilder(buildSampleRowsShader);
