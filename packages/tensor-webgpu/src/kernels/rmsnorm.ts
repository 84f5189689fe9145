/**
 * Qwen2 RMSNorm over the last dimension of a row-major [rows, dim] matrix:
 * y = x * rstd * weight, rstd = 1 / sqrt(mean(x²) + eps); and its backward pass.
 *
 * Forward and dX: one workgroup per row; lanes stride over the row (vec4 when dim % 4 == 0), a tree in
 * workgroup memory sums the per-lane partials (mean(x²) forward, sum(x·w·dy) backward), then a second
 * sweep writes the row.
 * dWeight = sum over rows of dy·x·rstd, deterministically (no float atomics), in two stages:
 *  1. each invocation owns one column vector and one chunk of ROWS_PER_CHUNK rows, and sums down it;
 *  2. each invocation sums one column over the chunks' partials, in chunk order.
 * With a single chunk and an f32 dWeight, stage 1 writes dWeight directly. Matrices larger than one
 * storage binding are processed in batches of rows (windows of x, y, dOut, dX; `shift` is where a window
 * starts).
 *
 * Storage: x, y, dOut and dX may be f16 (one dtype for the four) and the weight and dWeight f16 (another);
 * every kernel widens at its loads and sums in f32, and rstd and the partial sums are f32, so an f16
 * activation goes through the norm without a cast on either side.
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
  lanesWgsl,
  ROW_WINDOW_MAIN,
  type RowTuning,
  rowLanes,
  rowLayout,
  rowVector,
  WORKGROUP_SUM,
} from "./wgsl/row-reduce.js";

const ROWS_PER_CHUNK = 32;
const COLUMN_LANES = 64;

/** Overrides for tests and tuning (see RowTuning). */
export const rmsNormTuning: RowTuning = {};

/** The element types of a norm's buffers: activations (x, y, dOut, dX) and weight (weight, dWeight). */
interface NormStorage {
  act: FloatStorage;
  weight: FloatStorage;
}

/** WGSL: `enable f16;` when any buffer holds halves, and `A` / `W`, the activation and weight arrays' elements. */
function storageWgsl(width: 1 | 4, storage: NormStorage): string {
  return `${enableFor(storage.act, storage.weight)}
alias A = ${vectorOf(storage.act, width)};
alias W = ${vectorOf(storage.weight, width)};`;
}

function buildForwardShader(width: 1 | 4, lanes: number, saveRstd: boolean, storage: NormStorage): string {
  const xAt = (index: string) => loadF32(storage.act, width, `x[${index}]`);
  return /* wgsl */ `${storageWgsl(width, storage)}
${rowVector(width)}
${lanesWgsl(lanes)}
struct Params { rows: u32, vectors: u32, firstRow: u32, shift: u32, dim: f32, eps: f32 }
@group(0) @binding(0) var<storage, read> x: array<A>;
@group(0) @binding(1) var<storage, read> weight: array<W>;
@group(0) @binding(2) var<storage, read_write> y: array<A>;
${
  saveRstd
    ? `@group(0) @binding(3) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;`
    : "@group(0) @binding(3) var<uniform> params: Params;"
}
${WORKGROUP_SUM}
${ROW_WINDOW_MAIN}
  var local = 0.0;
  for (var i = lane; i < params.vectors; i += LANES) {
    let v = ${xAt("base + i")};
    local += hsum(v * v);
  }
  let scale = inverseSqrt(workgroupSum(local, lane) / params.dim + params.eps);
  ${saveRstd ? "if (lane == 0u) { rstd[params.firstRow + row] = scale; }" : ""}
  for (var i = lane; i < params.vectors; i += LANES) {
    y[base + i] = ${storeAs(storage.act, width, `${xAt("base + i")} * scale * ${loadF32(storage.weight, width, "weight[i]")}`)};
  }
}`;
}

function buildInputGradientShader(width: 1 | 4, lanes: number, storage: NormStorage): string {
  const act = (name: string) => loadF32(storage.act, width, `${name}[base + i]`);
  const weight = loadF32(storage.weight, width, "weight[i]");
  return /* wgsl */ `${storageWgsl(width, storage)}
${rowVector(width)}
${lanesWgsl(lanes)}
struct Params { rows: u32, vectors: u32, firstRow: u32, shift: u32, dim: f32 }
@group(0) @binding(0) var<storage, read> x: array<A>;
@group(0) @binding(1) var<storage, read> weight: array<W>;
@group(0) @binding(2) var<storage, read> rstd: array<f32>;
@group(0) @binding(3) var<storage, read> dOut: array<A>;
@group(0) @binding(4) var<storage, read_write> dX: array<A>;
@group(0) @binding(5) var<uniform> params: Params;
${WORKGROUP_SUM}
${ROW_WINDOW_MAIN}
  var local = 0.0;
  for (var i = lane; i < params.vectors; i += LANES) {
    local += hsum(${act("x")} * ${weight} * ${act("dOut")});
  }
  let dot = workgroupSum(local, lane);
  let scale = rstd[params.firstRow + row];
  let correction = scale * scale * scale * dot / params.dim;
  for (var i = lane; i < params.vectors; i += LANES) {
    dX[base + i] = ${storeAs(storage.act, width, `scale * ${weight} * ${act("dOut")} - ${act("x")} * correction`)};
  }
}`;
}

/** Stage 1: column sums of dy·x·rstd over one chunk of rows, into f32 sums. */
function buildChunkSumShader(width: 1 | 4, accumulate: boolean, act: FloatStorage): string {
  return /* wgsl */ `${enableFor(act)}
${rowVector(width)}
alias A = ${vectorOf(act, width)};
struct Params { rows: u32, vectors: u32, firstRow: u32, shift: u32, chunks: u32, firstChunk: u32 }
@group(0) @binding(0) var<storage, read> x: array<A>;
@group(0) @binding(1) var<storage, read> rstd: array<f32>;
@group(0) @binding(2) var<storage, read> dOut: array<A>;
@group(0) @binding(3) var<storage, read_write> sums: array<V>;
@group(0) @binding(4) var<uniform> params: Params;

@compute @workgroup_size(${COLUMN_LANES})
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let index = id.x + id.y * groups.x * ${COLUMN_LANES}u;
  if (index >= params.chunks * params.vectors) { return; }
  let chunk = index / params.vectors;
  let column = index % params.vectors;
  let first = chunk * ${ROWS_PER_CHUNK}u;
  let last = min(first + ${ROWS_PER_CHUNK}u, params.rows);
  var sum = V(0.0);
  for (var row = first; row < last; row++) {
    let k = params.shift + row * params.vectors + column;
    sum += ${loadF32(act, width, "dOut[k]")} * ${loadF32(act, width, "x[k]")} * rstd[params.firstRow + row];
  }
  let slot = params.firstChunk * params.vectors + index;
  sums[slot] = ${accumulate ? "sums[slot] + sum" : "sum"};
}`;
}

/** Stage 2: column sums over the chunks' f32 partials, in chunk order, stored as `weight`. */
function buildColumnSumShader(width: 1 | 4, accumulate: boolean, weight: FloatStorage): string {
  return /* wgsl */ `${enableFor(weight)}
${rowVector(width)}
struct Params { chunks: u32, vectors: u32 }
@group(0) @binding(0) var<storage, read> partials: array<V>;
@group(0) @binding(1) var<storage, read_write> dWeight: array<${vectorOf(weight, width)}>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(${COLUMN_LANES})
fn main(@builtin(global_invocation_id) id: vec3u) {
  let column = id.x;
  if (column >= params.vectors) { return; }
  var sum = V(0.0);
  for (var chunk = 0u; chunk < params.chunks; chunk++) { sum += partials[chunk * params.vectors + column]; }
  dWeight[column] = ${storeAs(weight, width, accumulate ? `${loadF32(weight, width, "dWeight[column]")} + sum` : "sum")};
}`;
}

/**
 * y = x * rstd * weight per row of x [rows, dim], weight [dim]. `rstd` ([rows]), when given, receives
 * 1 / sqrt(mean(x²) + eps) for the backward pass. `out` must not alias `x`. x and out are stored as
 * `dtype`, the weight as `weightDtype` (f32 when not given).
 */
export function rmsNorm(
  ctx: GpuContext,
  a: {
    x: GPUBuffer;
    weight: GPUBuffer;
    out: GPUBuffer;
    rstd?: GPUBuffer;
    rows: number;
    dim: number;
    eps: number;
    dtype?: FloatStorage;
    weightDtype?: FloatStorage;
  },
): void {
  if (a.rows === 0 || a.dim === 0) return;
  const { width, vectors } = rowLayout(a.dim);
  const storage = normStorage(a);
  const pipeline = ctx.pipeline(
    `rmsNorm${labelOf(storage)}`,
    forwardShader(width, rowLanes(ctx, vectors, rmsNormTuning), a.rstd !== undefined, storage),
  );
  const rowBytes = a.dim * storageBytes(storage.act);
  for (const batch of batches(ctx, a.rows, rowBytes)) {
    const { bindings, shift } = batchWindows(
      ctx,
      [a.x, a.out],
      batch,
      rowBytes,
      width * storageBytes(storage.act),
    );
    const [x, out] = bindings;
    ctx.dispatch(
      pipeline,
      a.rstd ? [x!, a.weight, out!, a.rstd] : [x!, a.weight, out!],
      uniforms(batch.count, vectors, batch.first, shift, f32Bits(a.dim), f32Bits(a.eps)),
      grid(batch.count),
    );
  }
}

/**
 * dX = rstd * weight * dOut - x * rstd³ * mean(x * weight * dOut) (per row), written;
 * dWeight [dim] = sum over rows of dOut * x * rstd, written, or added when `accumulateWeightGrad`.
 * x, dOut and dX are stored as `dtype`, weight and dWeight as `weightDtype`; an f16 dWeight is summed in
 * f32 and rounded once. Deterministic: the same inputs give bit-identical results.
 */
export function rmsNormBackward(
  ctx: GpuContext,
  a: {
    x: GPUBuffer;
    weight: GPUBuffer;
    rstd: GPUBuffer;
    dOut: GPUBuffer;
    dX: GPUBuffer;
    dWeight: GPUBuffer;
    rows: number;
    dim: number;
    accumulateWeightGrad?: boolean;
    dtype?: FloatStorage;
    weightDtype?: FloatStorage;
  },
): void {
  const { rows, dim } = a;
  const accumulate = a.accumulateWeightGrad ?? false;
  if (dim === 0) return;
  const { width, vectors } = rowLayout(dim);
  const storage = normStorage(a);
  const label = labelOf(storage);
  const columnSum = (add: boolean) =>
    ctx.pipeline(`rmsNorm dWeight${label}`, columnSumShader(width, add, storage.weight));
  if (rows === 0) {
    if (!accumulate) {
      // dWeight of no rows is zero: a stage-2 sum over zero chunks writes it.
      const none = ctx.pool.acquire(16, "rmsNorm no partials");
      ctx.dispatch(columnSum(false), [none, a.dWeight], new Uint32Array([0, vectors]), [
        Math.ceil(vectors / COLUMN_LANES),
      ]);
      ctx.pool.release(none);
    }
    return;
  }
  const rowBytes = dim * storageBytes(storage.act);
  const vectorBytes = width * storageBytes(storage.act);
  const rowBatches = batches(ctx, rows, rowBytes, ROWS_PER_CHUNK);
  const inputGradient = ctx.pipeline(
    `rmsNorm dX${label}`,
    inputGradientShader(width, rowLanes(ctx, vectors, rmsNormTuning), storage),
  );
  for (const batch of rowBatches) {
    const { bindings, shift } = batchWindows(ctx, [a.x, a.dOut, a.dX], batch, rowBytes, vectorBytes);
    const [x, dOut, dX] = bindings;
    ctx.dispatch(
      inputGradient,
      [x!, a.weight, a.rstd, dOut!, dX!],
      uniforms(batch.count, vectors, batch.first, shift, f32Bits(dim)),
      grid(batch.count),
    );
  }
  const chunks = Math.ceil(rows / ROWS_PER_CHUNK);
  const stage1 = (target: GPUBuffer, add: boolean) => {
    const pipeline = ctx.pipeline(`rmsNorm dWeight chunks${label}`, chunkSumShader(width, add, storage.act));
    for (const batch of rowBatches) {
      const { bindings, shift } = batchWindows(ctx, [a.x, a.dOut], batch, rowBytes, vectorBytes);
      const [x, dOut] = bindings;
      const batchChunks = Math.ceil(batch.count / ROWS_PER_CHUNK);
      ctx.dispatch(
        pipeline,
        [x!, a.rstd, dOut!, target],
        new Uint32Array([
          batch.count,
          vectors,
          batch.first,
          shift,
          batchChunks,
          batch.first / ROWS_PER_CHUNK,
        ]),
        grid(Math.ceil((batchChunks * vectors) / COLUMN_LANES)),
      );
    }
  };
  // Stage 1 sums in f32 words: straight into an f32 dWeight when one chunk holds every row.
  if (chunks === 1 && storage.weight === "f32") {
    stage1(a.dWeight, accumulate);
    return;
  }
  const partials = ctx.pool.acquire(chunks * dim * 4, "rmsNorm dWeight partials");
  stage1(partials, false);
  ctx.dispatch(columnSum(accumulate), [partials, a.dWeight], new Uint32Array([chunks, vectors]), [
    Math.ceil(vectors / COLUMN_LANES),
  ]);
  ctx.pool.release(partials);
}

function normStorage(a: { dtype?: FloatStorage; weightDtype?: FloatStorage }): NormStorage {
  return { act: a.dtype ?? "f32", weight: a.weightDtype ?? "f32" };
}

/** Pipeline labels name the f16 forms ("rmsNorm f16/f32": activations, then weight). */
const labelOf = (s: NormStorage) => (s.act === "f32" && s.weight === "f32" ? "" : ` ${s.act}/${s.weight}`);

// The kernels' WGSL, built once per distinct parameters.
const forwardShader = cachedBuilder(buildForwardShader);
const inputGradientShader = cachedBuilder(buildInputGradientShader);
const chunkSumShader = cachedBuilder(buildChunkSumShader);
const columnSumShader = cachedBuilder(buildColumnSumShader);
