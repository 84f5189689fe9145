/**
 * Embedding lookup (gather rows of a [vocab, dim] table) and its backward pass, deterministic without
 * atomics.
 *
 * Forward: one workgroup per token; lanes copy the row in vec4s (when dim % 4 == 0). Ids outside
 * [0, vocab) give zero rows and never read the table.
 * Backward: the CPU groups token positions by id (groupTokenPositions, ../core/token-groups.ts: the ids
 * are known on the CPU anyway, they came from the tokenizer or the sampler); one workgroup per distinct id
 * then sums its positions' dOut rows in position order and adds the sum to its table row. No two workgroups touch the
 * same row, so there are no races and the result is bit-reproducible.
 * Tables larger than one storage binding (151936 x 896 f32 is 544 MB; lavapipe binds at most 128 MiB) are
 * split into slices of rows, one dispatch each; a dispatch handles the tokens whose id falls in its slice.
 */
import { type GpuContext, grid } from "../gpu/context.js";
import { batches, bindingWindow, wholeBinding } from "./binding-windows.js";
import { storageBytes, vectorOf } from "./elementwise.js";
import { cachedBuilder } from "./wgsl/code-cache.js";

const LANES = 64;

function vectorType(dim: number, scalar: "f32" | "f16" = "f32"): { width: 1 | 4; alias: string } {
  const enable = scalar === "f16" ? "enable f16;\n" : "";
  return dim % 4 === 0
    ? { width: 4, alias: `${enable}alias V = vec4<${scalar}>;` }
    : { width: 1, alias: `${enable}alias V = ${scalar};` };
}

const buildForward = (alias: string) => /* wgsl */ `
${alias}
struct Params {
  count: u32, vectors: u32, vocab: u32, firstToken: u32, outShift: u32,
  sliceFirst: u32, sliceIds: u32, tableShift: u32, zeroInvalid: u32,
}
@group(0) @binding(0) var<storage, read> table: array<V>;
@group(0) @binding(1) var<storage, read> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<V>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(${LANES})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let token = group.x + group.y * groups.x;
  if (token >= params.count) { return; }
  let id = ids[params.firstToken + token];
  let base = params.outShift + token * params.vectors;
  if (id < 0 || u32(id) >= params.vocab) {
    if (params.zeroInvalid != 0u) {
      for (var i = lane; i < params.vectors; i += ${LANES}u) { out[base + i] = V(0.0); }
    }
    return;
  }
  // This dispatch sees only the table rows [sliceFirst, sliceFirst + sliceIds); others come in another.
  let local = u32(id) - params.sliceFirst;
  if (u32(id) < params.sliceFirst || local >= params.sliceIds) { return; }
  let row = params.tableShift + local * params.vectors;
  for (var i = lane; i < params.vectors; i += ${LANES}u) { out[base + i] = table[row + i]; }
}`;

/**
 * `alias` declares V, the storage vector; `wide` is its f32 form (the sums' type), and halves are widened as
 * they are read and rounded once as the row is stored.
 */
const buildBackward = (alias: string, wide: string) => /* wgsl */ `
${alias}
alias W = ${wide};
struct Params { numUnique: u32, vectors: u32, vocab: u32, sliceFirst: u32, sliceIds: u32, tableShift: u32 }
@group(0) @binding(0) var<storage, read> dOut: array<V>;
@group(0) @binding(1) var<storage, read_write> dTable: array<V>;
@group(0) @binding(2) var<storage, read> uniqueIds: array<i32>;
@group(0) @binding(3) var<storage, read> offsets: array<i32>;
@group(0) @binding(4) var<storage, read> positions: array<i32>;
@group(0) @binding(5) var<uniform> params: Params;

@compute @workgroup_size(${LANES})
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let u = group.x + group.y * groups.x;
  if (u >= params.numUnique) { return; }
  let id = uniqueIds[u];
  if (id < 0 || u32(id) >= params.vocab) { return; }
  let local = u32(id) - params.sliceFirst;
  if (u32(id) < params.sliceFirst || local >= params.sliceIds) { return; }
  let first = offsets[u];
  let last = offsets[u + 1u];
  let row = params.tableShift + local * params.vectors;
  for (var i = lane; i < params.vectors; i += ${LANES}u) {
    var sum = W(0.0);
    for (var k = first; k < last; k++) { sum += W(dOut[u32(positions[k]) * params.vectors + i]); }
    dTable[row + i] = V(W(dTable[row + i]) + sum);
  }
}`;

/**
 * out [count, dim] = rows of table [vocab, dim] at ids (i32 [count]); zero rows for ids outside [0, vocab).
 * With dtype "f16" table and out hold halves (a copy: no conversion).
 */
export function embedding(
  ctx: GpuContext,
  a: {
    table: GPUBuffer;
    ids: GPUBuffer;
    out: GPUBuffer;
    count: number;
    dim: number;
    vocab: number;
    dtype?: "f32" | "f16";
  },
): void {
  const { count, dim, vocab } = a;
  if (count === 0 || dim === 0) return;
  const scalar = a.dtype ?? "f32";
  const bytes = storageBytes(scalar);
  const { width, alias } = vectorType(dim, scalar);
  const pipeline = ctx.pipeline(`embedding ${scalar}`, FORWARD(alias));
  const slices = batches(ctx, vocab, dim * bytes);
  for (const tokens of batches(ctx, count, dim * bytes)) {
    const out = bindingWindow(
      ctx,
      a.out,
      tokens.first * dim * bytes,
      tokens.count * dim * bytes,
      width * bytes,
    );
    slices.forEach((slice, index) => {
      const table = bindingWindow(
        ctx,
        a.table,
        slice.first * dim * bytes,
        Math.max(1, slice.count) * dim * bytes,
        width * bytes,
      );
      ctx.dispatch(
        pipeline,
        [table.binding, a.ids, out.binding],
        new Uint32Array([
          tokens.count,
          dim / width,
          vocab,
          tokens.first,
          out.shift,
          slice.first,
          slice.count,
          table.shift,
          index === 0 ? 1 : 0,
        ]),
        grid(tokens.count),
      );
    });
  }
}

/**
 * dTable [vocab, dim] += scatter of dOut [count, dim]: each of the first `numUnique` ids of `uniqueIds`
 * gets the sum of the dOut rows at its positions (summed in position order, then added). The grouping is
 * groupTokenPositions' output, uploaded. `vocab` (optional) guards the table's bounds against ids that
 * were grouped without it. dOut is read at random rows, so it must fit one storage binding (on lavapipe,
 * 128 MiB: 37k tokens of 896); dTable may be larger. With dtype "f16" both hold halves: the sums are
 * taken in f32 and each row is rounded once as it is stored.
 */
export function embeddingBackward(
  ctx: GpuContext,
  a: {
    dOut: GPUBuffer;
    dTable: GPUBuffer;
    uniqueIds: GPUBuffer;
    offsets: GPUBuffer;
    positions: GPUBuffer;
    numUnique: number;
    dim: number;
    vocab?: number;
    dtype?: "f32" | "f16";
  },
): void {
  const { numUnique, dim } = a;
  if (numUnique === 0 || dim === 0) return;
  const scalar = a.dtype ?? "f32";
  const bytes = storageBytes(scalar);
  const { width, alias } = vectorType(dim, scalar);
  const wide = vectorOf("f32", width);
  const pipeline = ctx.pipeline(
    scalar === "f16" ? "embeddingBackward f16" : "embeddingBackward",
    BACKWARD(alias, wide),
  );
  const vocab = a.vocab ?? Math.floor(a.dTable.size / (dim * bytes));
  for (const slice of batches(ctx, vocab, dim * bytes)) {
    const table = bindingWindow(
      ctx,
      a.dTable,
      slice.first * dim * bytes,
      Math.max(1, slice.count) * dim * bytes,
      width * bytes,
    );
    ctx.dispatch(
      pipeline,
      [wholeBinding(ctx, a.dOut), table.binding, a.uniqueIds, a.offsets, a.positions],
      new Uint32Array([numUnique, dim / width, vocab, slice.first, slice.count, table.shift]),
      grid(numUnique),
    );
  }
}

// The kernels' WGSL, built once per distinct parameters.
const FORWARD = cachedBuilder(buildForward);
const BACKWARD = cachedBuilder(buildBackward);
