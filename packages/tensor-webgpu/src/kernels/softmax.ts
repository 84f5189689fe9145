/**
 * Softmax and log-softmax over the last dimension of a row-major [rows, cols] matrix, and their backward
 * passes.
 *
 * Scheme: one workgroup per row (rows beyond 65535 spill into the y dimension of the grid). Each lane walks
 * the row with a stride of LANES elements (vec4 loads when cols % 4 == 0), keeping an online pair
 * (max m, sum s of exp(x - m)), so the statistics need one read of the row; the per-lane pairs are merged
 * by a tree in workgroup memory (fixed order: deterministic) and a second sweep writes the outputs.
 * Backward: one workgroup per row, a sum reduction (sum(y·dY), or sum(dY) for log-softmax), then an
 * element-wise sweep. Matrices larger than one storage binding are processed in batches of rows.
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, batchWindows } from "./binding-windows.js";
import { cachedBuilder } from "./wgsl/code-cache.js";
import {
  LOWEST_WGSL,
  lanesWgsl,
  ROW_WINDOW_MAIN,
  type RowTuning,
  rowLanes,
  rowLayout,
  rowVector,
  WORKGROUP_SUM,
  workgroupReduce,
} from "./wgsl/row-reduce.js";

/** Overrides for tests and tuning (see RowTuning). */
export const softmaxTuning: RowTuning = {};

const HEADER = (width: 1 | 4, lanes: number) => /* wgsl */ `
${rowVector(width)}
${lanesWgsl(lanes)}
${LOWEST_WGSL}
struct Params { rows: u32, vectors: u32, shift: u32 }
`;

/**
 * Online (max, sum of exp) per lane, merged across the workgroup: every lane gets the row's pair. Merging
 * rescales both sums to the larger max.
 */
const ROW_STATS = /* wgsl */ `
fn mergeStats(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let next = max(a.x, b.x);
  return vec2<f32>(next, a.y * exp(a.x - next) + b.y * exp(b.x - next));
}
${workgroupReduce({
  name: "workgroupStats",
  type: "vec2<f32>",
  combine: (a, b) => `mergeStats(${a}, ${b})`,
  scratch: "statsScratch",
})}
fn rowStats(base: u32, lane: u32) -> vec2<f32> {
  var m = LOWEST;
  var s = 0.0;
  for (var i = lane; i < params.vectors; i += LANES) {
    let v = x[base + i];
    let next = max(m, hmax(v));
    s = s * exp(m - next) + hsum(exp(v - next));
    m = next;
  }
  return workgroupStats(vec2<f32>(m, s), lane);
}
`;

function buildForwardShader(width: 1 | 4, lanes: number, log: boolean): string {
  return /* wgsl */ `${HEADER(width, lanes)}
@group(0) @binding(0) var<storage, read> x: array<V>;
@group(0) @binding(1) var<storage, read_write> out: array<V>;
@group(0) @binding(2) var<uniform> params: Params;
${ROW_STATS}
${ROW_WINDOW_MAIN}
  let stats = rowStats(base, lane);
  ${log ? "let logSum = stats.x + log(stats.y);" : "let scale = 1.0 / stats.y;"}
  for (var i = lane; i < params.vectors; i += LANES) {
    ${log ? "out[base + i] = x[base + i] - logSum;" : "out[base + i] = exp(x[base + i] - stats.x) * scale;"}
  }
}`;
}

function buildBackwardShader(width: 1 | 4, lanes: number, log: boolean): string {
  return /* wgsl */ `${HEADER(width, lanes)}
@group(0) @binding(0) var<storage, read> y: array<V>;
@group(0) @binding(1) var<storage, read> dY: array<V>;
@group(0) @binding(2) var<storage, read_write> dX: array<V>;
@group(0) @binding(3) var<uniform> params: Params;
${WORKGROUP_SUM}
${ROW_WINDOW_MAIN}
  var local = 0.0;
  for (var i = lane; i < params.vectors; i += LANES) {
    ${log ? "local += hsum(dY[base + i]);" : "local += hsum(y[base + i] * dY[base + i]);"}
  }
  let total = workgroupSum(local, lane);
  for (var i = lane; i < params.vectors; i += LANES) {
    ${
      log
        ? "dX[base + i] = dY[base + i] - exp(y[base + i]) * total;"
        : "dX[base + i] = y[base + i] * (dY[base + i] - total);"
    }
  }
}`;
}

interface RowShape {
  rows: number;
  cols: number;
}

function runRows(
  ctx: GpuContext,
  label: string,
  shader: (width: 1 | 4, lanes: number) => string,
  bindings: GPUBuffer[],
  { rows, cols }: RowShape,
): void {
  if (rows === 0 || cols === 0) return;
  const { width, vectors } = rowLayout(cols);
  const pipeline = ctx.pipeline(label, shader(width, rowLanes(ctx, vectors, softmaxTuning)));
  for (const batch of batches(ctx, rows, cols * 4)) {
    const { bindings: windows, shift } = batchWindows(ctx, bindings, batch, cols * 4, width * 4);
    ctx.dispatch(pipeline, windows, new Uint32Array([batch.count, vectors, shift]), grid(batch.count));
  }
}

/** out = softmax(x) over each row of [rows, cols]. `out` must not alias `x`. */
export function softmax(ctx: GpuContext, a: { x: GPUBuffer; out: GPUBuffer } & RowShape): void {
  runRows(ctx, "softmax", (w, l) => forwardShader(w, l, false), [a.x, a.out], a);
}

/** out = log(softmax(x)) over each row of [rows, cols]. `out` must not alias `x`. */
export function logSoftmax(ctx: GpuContext, a: { x: GPUBuffer; out: GPUBuffer } & RowShape): void {
  runRows(ctx, "logSoftmax", (w, l) => forwardShader(w, l, true), [a.x, a.out], a);
}

/** Given y = softmax(x): dX = y * (dY - sum_row(y * dY)). */
export function softmaxBackward(
  ctx: GpuContext,
  a: { y: GPUBuffer; dY: GPUBuffer; dX: GPUBuffer } & RowShape,
): void {
  runRows(ctx, "softmaxBackward", (w, l) => backwardShader(w, l, false), [a.y, a.dY, a.dX], a);
}

/** Given y = logSoftmax(x) (log-probabilities): dX = dY - exp(y) * sum_row(dY). */
export function logSoftmaxBackward(
  ctx: GpuContext,
  a: { y: GPUBuffer; dY: GPUBuffer; dX: GPUBuffer } & RowShape,
): void {
  runRows(ctx, "logSoftmaxBackward", (w, l) => backwardShader(w, l, true), [a.y, a.dY, a.dX], a);
}

// The kernels' WGSL, built once per distinct parameters.
const forwardShader = cachedBuilder(buildForwardShader);
const backwardShader = cachedBuilder(buildBackwardShader);
