/**
 * Reductions over the middle axis of a contiguous [outer, size, inner] tensor (any single axis of a
 * contiguous tensor has this form), and argmax along the last axis.
 *
 * Scheme, chosen from the shape (never from the data, so the summation order is fixed and results are
 * bit-identical run to run):
 * - rows (inner == 1, size >= 64): one workgroup per row. Lanes stride through the row (vec4 loads when
 *   size % 4 == 0), each keeping its own accumulator, then a tree in workgroup memory combines the lanes.
 *   Few long rows (e.g. 1 x 1,000,000) would leave most of the machine idle, so a row is cut into fixed
 *   chunks of 4096 items: a first pass writes one partial per (row, chunk), a second reduces the partials.
 * - columns (inner > 1, or short rows): one invocation per output (per 4 adjacent outputs with vec4 loads
 *   when inner % 4 == 0) walking down `size` in order; neighbouring invocations read neighbouring columns.
 *   When there are too few outputs to fill the machine, `size` is cut into chunks the same way.
 * argmax: rows as above with a (value, index) pair per lane, ties going to the lower index.
 * x and out may hold halves: the first pass widens what it reads, every pass combines in f32, partials
 * are f32, and only the last pass rounds what it stores.
 */
import type { ReduceOp } from "../core/ops.js";
import type { Binding, GpuContext } from "../gpu/context.js";
import {
  enableFor,
  FLOAT_BITS_WGSL,
  type FloatStorage,
  f32Bits,
  flatMain,
  loadF32,
  perComponent,
  storeAs,
  uniforms,
  vectorOf,
  workgroupsFor,
} from "./elementwise.js";
import { fill } from "./layout.js";
import { cachedBuilder } from "./wgsl/code-cache.js";
import {
  lanesWgsl,
  type RowTuning,
  rowLanes,
  rowLayout,
  rowMain,
  workgroupReduce,
} from "./wgsl/row-reduce.js";

/** How partial results combine: mean sums and divides once at the end. */
type Combine = "sum" | "max" | "min";

/** What the last pass does with a result: store it, divide it (mean), or add it to what out holds. */
type Finish = "store" | "divide" | "accumulate";

interface ReducePass {
  combine: Combine;
  /** Square each element as it is read (sum of squares). */
  square: boolean;
  finish: Finish;
  /** The divisor of "divide" (the original size). */
  divisor: number;
  /** How x and out store their elements (partials between passes are f32). */
  input: FloatStorage;
  output: FloatStorage;
}

/** Tuning that tests may override, to run the GPU setting on a software adapter and vice versa. */
export const reduceTuning: RowTuning = {};

/**
 * Lanes per row workgroup (see rowLanes), with 16 on a software adapter: measured on 4096 x 4096, 16 lanes
 * ran 5-8x faster than 256 on lavapipe.
 */
const lanesFor = (ctx: GpuContext, items: number): number => rowLanes(ctx, items, reduceTuning, 16);

/** Rows at least this long get a workgroup each; shorter ones an invocation each. */
const ROW_KERNEL_MIN_SIZE = 64;
/** Items (vec4s or scalars) of a row per workgroup when long rows are split. */
const ROW_CHUNK = 4096;
/** Fewer rows than this, each longer than two chunks, are split. */
const ROW_SPLIT_BELOW = 64;
/** Column reductions aim for at least this many invocations, splitting `size` if needed... */
const COLUMN_TARGET_INVOCATIONS = 8192;
/** ...into chunks of no fewer than this many rows. */
const COLUMN_MIN_CHUNK = 128;

const COMBINE_WGSL: Record<Combine, { identity: string; combine: string }> = {
  sum: { identity: "0.0", combine: "a + b" },
  // NaN propagates, as in PyTorch (WGSL's max/min may drop it).
  max: { identity: "-infinity()", combine: "select(max(a, b), a + b, isNan(a) || isNan(b))" },
  min: { identity: "infinity()", combine: "select(min(a, b), a + b, isNan(a) || isNan(b))" },
};

/**
 * WGSL: element type V, `combine` on f32, `combineV` on V, `horizontal` V -> f32, `load` (maybe squared);
 * `enable f16;` first when x or out holds halves.
 */
function reduceHelpers(pass: ReducePass, width: 1 | 4): string {
  const { identity, combine } = COMBINE_WGSL[pass.combine];
  const horizontal = width === 4 ? "combine(combine(v.x, v.y), combine(v.z, v.w))" : "v";
  return /* wgsl */ `${enableFor(pass.input, pass.output)}
${FLOAT_BITS_WGSL}
alias V = ${vectorOf("f32", width)};
fn combine(a: f32, b: f32) -> f32 { return ${combine}; }
fn combineV(a: V, b: V) -> V { return ${perComponent("f32", width, (c) => `combine(a${c}, b${c})`)}; }
fn horizontal(v: V) -> f32 { return ${horizontal}; }
fn identity() -> V { return V(${identity}); }
fn load(v: V) -> V { return ${pass.square ? "v * v" : "v"}; }
`;
}

/** WGSL storing the f32 `value` (of `width`) into out[index], in out's storage. */
function finishWgsl(pass: ReducePass, width: 1 | 4, value: string, index: string): string {
  const slot = `out[${index}]`;
  const result =
    pass.finish === "divide"
      ? `${value} / params.divisor`
      : pass.finish === "accumulate"
        ? `${loadF32(pass.output, width, slot)} + ${value}`
        : value;
  return `${slot} = ${storeAs(pass.output, width, result)};`;
}

function buildRowsCode(pass: ReducePass, width: 1 | 4, lanes: number): string {
  return /* wgsl */ `
${reduceHelpers(pass, width)}
${lanesWgsl(lanes)}
@group(0) @binding(0) var<storage, read> x: array<${vectorOf(pass.input, width)}>;
@group(0) @binding(1) var<storage, read_write> out: array<${pass.output}>;
// size and chunkSize in items (vec4s or scalars); out holds rows * chunks results.
struct Params { rows: u32, size: u32, chunkSize: u32, chunks: u32, divisor: f32 }
@group(0) @binding(2) var<uniform> params: Params;

${workgroupReduce({
  name: "workgroupCombine",
  type: "f32",
  combine: (a, b) => `combine(${a}, ${b})`,
  scratch: "partial",
})}
${rowMain("w")}
  if (w >= params.rows * params.chunks) { return; }
  let row = w / params.chunks;
  let begin = (w % params.chunks) * params.chunkSize;
  let end = min(params.size, begin + params.chunkSize);
  let base = row * params.size;
  var acc = identity();
  for (var k = begin + lane; k < end; k += LANES) {
    acc = combineV(acc, load(${loadF32(pass.input, width, "x[base + k]")}));
  }
  let total = workgroupCombine(horizontal(acc), lane);
  if (lane == 0u) { ${finishWgsl(pass, 1, "total", "w")} }
}`;
}

function buildColumnsCode(pass: ReducePass, width: 1 | 4): string {
  return /* wgsl */ `
${reduceHelpers(pass, width)}
@group(0) @binding(0) var<storage, read> x: array<${vectorOf(pass.input, width)}>;
@group(0) @binding(1) var<storage, read_write> out: array<${vectorOf(pass.output, width)}>;
// inner in items (vec4s or scalars); out is [outer, chunks, inner].
struct Params { outer: u32, size: u32, inner: u32, chunkSize: u32, chunks: u32, divisor: f32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.outer * params.chunks * params.inner) { return; }
  let column = i % params.inner;
  let chunk = (i / params.inner) % params.chunks;
  let o = i / (params.inner * params.chunks);
  let begin = chunk * params.chunkSize;
  let end = min(params.size, begin + params.chunkSize);
  var acc = identity();
  for (var r = begin; r < end; r++) {
    acc = combineV(acc, load(${loadF32(pass.input, width, "x[(o * params.size + r) * params.inner + column]")}));
  }
  ${finishWgsl(pass, width, "acc", "i")}
}`;
}

function passLabel(pass: ReducePass): string {
  const storage = pass.input === "f32" && pass.output === "f32" ? "" : ` ${pass.input}->${pass.output}`;
  return `reduce ${pass.combine}${pass.square ? " of squares" : ""} (${pass.finish})${storage}`;
}

/** Record the reduction of [outer, size, inner] into out [outer, inner], in one or more passes. */
function recordReduce(
  ctx: GpuContext,
  x: Binding,
  out: Binding,
  shape: { outer: number; size: number; inner: number },
  pass: ReducePass,
): void {
  const { outer, size, inner } = shape;
  const divisor = f32Bits(pass.divisor);
  // An intermediate pass stores f32 partials; squaring and widening happen once, on the first read.
  const partialPass: ReducePass = { ...pass, finish: "store", output: "f32" };
  const nextPass: ReducePass = { ...pass, square: false, input: "f32" };

  if (inner === 1 && size >= ROW_KERNEL_MIN_SIZE) {
    const { width, vectors: items } = rowLayout(size);
    const chunks = outer < ROW_SPLIT_BELOW && items > 2 * ROW_CHUNK ? Math.ceil(items / ROW_CHUNK) : 1;
    const lanes = lanesFor(ctx, items);
    const run = (target: Binding, p: ReducePass) => {
      const params = uniforms(outer, items, chunks === 1 ? items : ROW_CHUNK, chunks, divisor);
      const pipeline = ctx.pipeline(passLabel(p), rowsCode(p, width, lanes));
      ctx.dispatch(pipeline, [x, target], params, workgroupsFor(outer * chunks, 1));
    };
    if (chunks === 1) {
      run(out, pass);
      return;
    }
    const partials = ctx.pool.acquire(outer * chunks * 4, "reduce partials");
    run(partials, partialPass);
    recordReduce(ctx, partials, out, { outer, size: chunks, inner: 1 }, nextPass);
    ctx.pool.release(partials);
    return;
  }

  const width = inner % 4 === 0 ? 4 : 1;
  const columns = (outer * inner) / width;
  let chunks = 1;
  if (columns < COLUMN_TARGET_INVOCATIONS && size >= 2 * COLUMN_MIN_CHUNK) {
    chunks = Math.min(Math.ceil(size / COLUMN_MIN_CHUNK), Math.ceil(COLUMN_TARGET_INVOCATIONS / columns));
  }
  const chunkSize = Math.ceil(size / chunks);
  chunks = Math.ceil(size / chunkSize);
  const run = (target: Binding, p: ReducePass) => {
    const params = uniforms(outer, size, inner / width, chunkSize, chunks, divisor);
    const pipeline = ctx.pipeline(`${passLabel(p)} columns`, columnsCode(p, width));
    ctx.dispatch(pipeline, [x, target], params, workgroupsFor(columns * chunks));
  };
  if (chunks === 1) {
    run(out, pass);
    return;
  }
  const partials = ctx.pool.acquire(outer * chunks * inner * 4, "reduce partials");
  run(partials, partialPass);
  recordReduce(ctx, partials, out, { outer, size: chunks, inner }, nextPass);
  ctx.pool.release(partials);
}

function checkDims(what: string, dims: Record<string, number>): void {
  for (const [name, v] of Object.entries(dims)) {
    if (!Number.isInteger(v) || v < 0)
      throw new RangeError(`${what}: ${name} = ${v} must be a non-negative integer`);
  }
}

/**
 * out[o, j] = op over k of x[o, k, j], for x contiguous [outer, size, inner] and out [outer, inner].
 * Deterministic. max and min propagate NaN; mean of size 0 is NaN, sum of size 0 is 0; max and min of
 * size 0 throw. x is stored as `dtype` and out as `outDtype` (both f32 when not given).
 */
export function reduce(
  ctx: GpuContext,
  args: {
    op: ReduceOp;
    x: Binding;
    out: Binding;
    outer: number;
    size: number;
    inner: number;
    dtype?: FloatStorage;
    outDtype?: FloatStorage;
  },
): void {
  const { op, outer, size, inner } = args;
  if (!(op in { sum: 1, mean: 1, max: 1, min: 1 })) throw new RangeError(`reduce: unknown op "${op}"`);
  checkDims("reduce", { outer, size, inner });
  if (outer * inner === 0) return;
  if (size === 0) {
    if (op === "max" || op === "min") throw new RangeError(`reduce: ${op} over an empty axis`);
    fill(ctx, {
      out: args.out,
      n: outer * inner,
      value: op === "mean" ? Number.NaN : 0,
      dtype: args.outDtype ?? "f32",
    });
    return;
  }
  recordReduce(ctx, args.x, args.out, args, {
    combine: op === "mean" ? "sum" : op,
    square: false,
    finish: op === "mean" ? "divide" : "store",
    divisor: size,
    input: args.dtype ?? "f32",
    output: args.outDtype ?? "f32",
  });
}

/**
 * out[0] (+)= Σ x[i]² over i < n: the deterministic sum of squares behind gradient clipping (see
 * optimizer.ts). With `accumulate`, the total is added to what out[0] holds.
 */
export function sumOfSquaresInto(
  ctx: GpuContext,
  args: { x: Binding; n: number; out: Binding; accumulate: boolean },
): void {
  checkDims("sumOfSquares", { n: args.n });
  if (args.n === 0) {
    if (!args.accumulate) fill(ctx, { out: args.out, n: 1, value: 0 });
    return;
  }
  recordReduce(
    ctx,
    args.x,
    args.out,
    { outer: 1, size: args.n, inner: 1 },
    {
      combine: "sum",
      square: true,
      finish: args.accumulate ? "accumulate" : "store",
      divisor: 1,
      input: "f32",
      output: "f32",
    },
  );
}

// ---------------------------------------------------------------------------------------------------
// argmax

/** WGSL: `better(v, i, bv, bi)` — does (v, i) beat the best so far? NaN beats numbers (as in PyTorch). */
const ARGMAX_HELPERS = /* wgsl */ `
${FLOAT_BITS_WGSL}
const NONE = 0xffffffffu;
fn better(v: f32, i: u32, bestValue: f32, bestIndex: u32) -> bool {
  if (bestIndex == NONE) { return true; }
  let vNan = isNan(v);
  let bestNan = isNan(bestValue);
  if (vNan != bestNan) { return vNan; }
  if (vNan || v == bestValue) { return i < bestIndex; }
  return v > bestValue;
}
`;

function buildArgmaxRowsCode(width: 1 | 4, lanes: number): string {
  const scan =
    width === 4
      ? `let q = x[base + k];
    for (var c = 0u; c < 4u; c++) {
      if (better(q[c], 4u * k + c, bestValue, bestIndex)) { bestValue = q[c]; bestIndex = 4u * k + c; }
    }`
      : `let v = x[base + k];
    if (better(v, k, bestValue, bestIndex)) { bestValue = v; bestIndex = k; }`;
  return /* wgsl */ `
${ARGMAX_HELPERS}
${lanesWgsl(lanes)}
@group(0) @binding(0) var<storage, read> x: array<${vectorOf("f32", width)}>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
struct Params { rows: u32, items: u32 }
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> values: array<f32, LANES>;
var<workgroup> indices: array<u32, LANES>;

${rowMain("row")}
  if (row >= params.rows) { return; }
  let base = row * params.items;
  var bestValue = 0.0;
  var bestIndex = NONE;
  for (var k = lane; k < params.items; k += LANES) {
    ${scan}
  }
  values[lane] = bestValue;
  indices[lane] = bestIndex;
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride && indices[lane + stride] != NONE &&
        better(values[lane + stride], indices[lane + stride], values[lane], indices[lane])) {
      values[lane] = values[lane + stride];
      indices[lane] = indices[lane + stride];
    }
    workgroupBarrier();
  }
  if (lane == 0u) { out[row] = i32(indices[0]); }
}`;
}

const ARGMAX_SHORT_ROWS_CODE = /* wgsl */ `
${ARGMAX_HELPERS}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<i32>;
struct Params { rows: u32, size: u32 }
@group(0) @binding(2) var<uniform> params: Params;

${flatMain()}
  if (i >= params.rows) { return; }
  var bestValue = 0.0;
  var bestIndex = NONE;
  for (var k = 0u; k < params.size; k++) {
    let v = x[i * params.size + k];
    if (better(v, k, bestValue, bestIndex)) { bestValue = v; bestIndex = k; }
  }
  out[i] = i32(bestIndex);
}`;

/**
 * out[o] = the index of the largest x[o, k] over k < size (x contiguous [outer, size], out i32 [outer]).
 * The first maximum wins ties; a NaN counts as larger than any number, as in PyTorch.
 */
export function argmax(
  ctx: GpuContext,
  args: { x: Binding; out: Binding; outer: number; size: number },
): void {
  const { outer, size } = args;
  checkDims("argmax", { outer, size });
  if (outer === 0) return;
  if (size === 0) throw new RangeError("argmax: over an empty axis");
  if (size < ROW_KERNEL_MIN_SIZE) {
    const pipeline = ctx.pipeline("argmax short rows", ARGMAX_SHORT_ROWS_CODE);
    ctx.dispatch(pipeline, [args.x, args.out], uniforms(outer, size), workgroupsFor(outer));
    return;
  }
  const { width, vectors: items } = rowLayout(size);
  const pipeline = ctx.pipeline("argmax rows", argmaxRowsCode(width, lanesFor(ctx, items)));
  ctx.dispatch(pipeline, [args.x, args.out], uniforms(outer, items), workgroupsFor(outer, 1));
}

// The kernels' WGSL, built once per distinct parameters.
const rowsCode = cachedBuilder(buildRowsCode);
const columnsCode = cachedBuilder(buildColumnsCode);
const argmaxRowsCode = cachedBuilder(buildArgmaxRowsCode);
