/**
 * Prefill/training attention forward (flash-attention style, tiles as in tiles.ts): one workgroup per
 * (query block, head, sequence). Its Q tile stays in workgroup memory while K and V blocks stream through
 * one shared tile: S = Q·Kᵀ (scaled), an online softmax per row (running max m and sum l, rescaling the
 * output accumulators by exp(m_old - m_new); a serial form for lavapipe and a parallel one for GPUs, see
 * forwardCode), then O += P·V with thread (ty, tx) owning rows ty + TY*a and vec4 columns tx + TX*c.
 * Only KV blocks that the causal mask and kvStart leave (partly) visible are visited. Query blocks run
 * last-first so the longest start first.
 */

import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { type FloatStorage, storageBytes } from "../elementwise.js";
import { type AttentionForm, attentionForm } from "./form-choice.js";
import { attentionForwardByMatmul } from "./forward-matmul.js";
import { checkHeadDim, conflictFreeStride, EMPTY_LSE, each, MASKED, roundUp, storageWgsl } from "./shared.js";
import { TEXTURE_ROWS, textureForwardCode, textureForwardTile } from "./texture-forward.js";
import { dispatchTextureAttention, textureAttentionLanes } from "./texture-staging.js";
import {
  commonWgsl,
  HAS_KV_START,
  KV_START_BINDING,
  loadKeyRows,
  loadQueryRows,
  qIndex,
  recordTiled,
  storeColumns,
  type Tile,
  type TiledKernel,
  type TileProfile,
  tileChoices,
  tileThreads,
  WRITE_LSE,
} from "./tiles.js";

export interface AttentionForwardArgs extends AttentionDims {
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  out: GPUBuffer;
  /** Optional output: log-sum-exp of each query row's scaled scores, [batch, numHeads, seqLen]. */
  lse?: GPUBuffer;
  /** Optional i32 [batch]: keys before kvStart[b] are masked for sequence b. */
  kvStart?: GPUBuffer;
}

/** Vec4 columns of the output per row: padded so the P·V loop's columns tx + TX*c need no bounds check. */
const kvColumns = (t: Tile, d4: number) => roundUp(d4, t.bk / t.rn);

/** Row strides of the tiles (conflictFreeStride): Q and K/V in vec4s, P in floats. */
function forwardStrides(t: Tile, d4: number) {
  return { q: conflictFreeStride(d4), kv: conflictFreeStride(kvColumns(t, d4)), p: conflictFreeStride(t.bk) };
}

/**
 * Floats of the online softmax's per-row state in workgroup memory. Software: each row's running max and
 * sum and its rescale factor (3 per row). Hardware: each thread's partial max and partial sum of its keys
 * in each of its rows (2 x TX per row); the running state stays in registers.
 */
const softmaxFloats = (t: Tile, profile: TileProfile) =>
  (profile === "hardware" ? 2 * tileThreads(t).tx : 3) * t.bq;

/** WGSL: the largest of `terms` (WGSL's max takes two). */
const maxOf = (terms: string[]): string => terms.reduce((acc, term) => `max(${acc}, ${term})`);

/**
 * The online softmax of a block's scores, two ways. Software (lavapipe): after the scores are stored in
 * pTile, one thread per row walks it twice (max, then exp and sum), as the texture kernels do, so that
 * both compute the same bits. Hardware: every thread takes the max and then the sum over its own RN keys
 * of each of its RM rows from registers, and the TX threads of a row combine their partials through
 * workgroup memory; no thread idles through a serial pass, and each thread keeps its rows' running max,
 * sum and rescale factor in registers.
 */
function forwardCode(tile: Tile, d4: number, profile: TileProfile, dtype: FloatStorage): string {
  const { bq, bk, rm, rn } = tile;
  const { ty, tx, threads, row, key } = tileThreads(tile);
  const strides = forwardStrides(tile, d4);
  const stride = strides.kv;
  const pStride = strides.p;
  const columns = kvColumns(tile, d4) / tx; // vec4 columns of the output per thread
  const col = (c: number) => `tx + ${tx * c}u`;
  const kvLayout = { d4, stride, threads, dtype };
  const storage = storageWgsl(dtype);
  const parallel = profile === "hardware";
  const pairs = (f: (a: number, b: number) => string) => each(rm, (a) => each(rn, (b) => f(a, b)));
  const score = (a: number, b: number) => `s${a * rn + b}`;
  const partial = (a: number, i: string) => `(${row(a)}) * ${tx}u + ${i}`;

  const state = parallel
    ? `var<workgroup> maxParts: array<f32, ${bq * tx}>;  // per row: each thread's max of its keys
var<workgroup> sumParts: array<f32, ${bq * tx}>;  // per row: each thread's sum of its probabilities`
    : `var<workgroup> alphaTile: array<f32, ${bq}>;         // per row: rescale factor of this block, then 1/l
var<workgroup> rowState: array<vec2f, ${bq}>;        // per row: running max and sum of the online softmax`;

  const initState = parallel
    ? each(rm, (a) => `var rowMax${a} = ${MASKED};\n  var rowSum${a} = 0.0;`)
    : `for (var r = t; r < params.tileRows; r += ${threads}u) { rowState[r] = vec2f(${MASKED}, 0.0); }`;

  // After the score loop: P of the block in pTile, the rows' state updated, V staged in kvTile, and
  // alpha0, alpha1, ... holding the rescale factor of each of the thread's rows for this block.
  const softmax = parallel
    ? `${pairs((a, b) => `let visible${a}_${b} = visible(q0 + ${row(a)}, k0 + ${key(b)}, kStart);`)}
    ${each(rm, (a) => `maxParts[${partial(a, "tx")}] = ${maxOf(Array.from({ length: rn }, (_, b) => `select(${MASKED}, ${score(a, b)}, visible${a}_${b})`))};`)}
    workgroupBarrier();
    ${each(
      rm,
      (a) => `var blockMax${a} = rowMax${a};
    for (var i = 0u; i < ${tx}u; i++) { blockMax${a} = max(blockMax${a}, maxParts[${partial(a, "i")}]); }
    let alpha${a} = exp(rowMax${a} - blockMax${a});
    rowMax${a} = blockMax${a};`,
    )}
    ${pairs(
      (a, b) => `let p${a}_${b} = select(0.0, exp(${score(a, b)} - blockMax${a}), visible${a}_${b});
    pTile[(${row(a)}) * ${pStride}u + ${key(b)}] = p${a}_${b};`,
    )}
    ${each(rm, (a) => `sumParts[${partial(a, "tx")}] = ${each(rn, (b) => `p${a}_${b}`, " + ")};`)}
    // V replaces K in the shared tile (every thread is past the score loop).
    ${loadKeyRows(kvLayout, "kvTile", "v")}
    workgroupBarrier();
    ${each(
      rm,
      (a) => `var blockSum${a} = 0.0;
    for (var i = 0u; i < ${tx}u; i++) { blockSum${a} += sumParts[${partial(a, "i")}]; }
    rowSum${a} = rowSum${a} * alpha${a} + blockSum${a};`,
    )}`
    : `${pairs((a, b) => `pTile[(${row(a)}) * ${pStride}u + ${key(b)}] = ${score(a, b)};`)}
    workgroupBarrier();

    // Online softmax of each row over this block; masked keys get probability 0.
    for (var r = t; r < params.tileRows; r += ${threads}u) {
      let state = rowState[r];
      var blockMax = state.x;
      for (var j = 0u; j < params.tileKeys; j++) {
        if (visible(q0 + r, k0 + j, kStart)) { blockMax = max(blockMax, pTile[r * ${pStride}u + j]); }
      }
      let alpha = exp(state.x - blockMax);
      var sum = state.y * alpha;
      for (var j = 0u; j < params.tileKeys; j++) {
        let p = select(0.0, exp(pTile[r * ${pStride}u + j] - blockMax), visible(q0 + r, k0 + j, kStart));
        sum += p;
        pTile[r * ${pStride}u + j] = p;
      }
      rowState[r] = vec2f(blockMax, sum);
      alphaTile[r] = alpha;
    }
    // V replaces K in the shared tile (the score loop above is done with K).
    ${loadKeyRows(kvLayout, "kvTile", "v")}
    workgroupBarrier();
    ${each(rm, (a) => `let alpha${a} = alphaTile[${row(a)}];`)}`;

  // Each row's 1/l (0 for a row that saw no key), and its log-sum-exp when asked for.
  const lseIndex = (r: string) => `(b * params.numHeads + head) * params.seqLen + q0 + ${r}`;
  const finish = parallel
    ? each(
        rm,
        (a) => `let inverse${a} = select(0.0, 1.0 / rowSum${a}, rowSum${a} > 0.0);
  if (tx == 0u && (params.flags & ${WRITE_LSE}u) != 0u && q0 + ${row(a)} < params.seqLen) {
    lse[${lseIndex(row(a))}] = select(${EMPTY_LSE}, rowMax${a} + log(rowSum${a}), rowSum${a} > 0.0);
  }`,
      )
    : `workgroupBarrier();
  for (var r = t; r < params.tileRows; r += ${threads}u) {
    let state = rowState[r];
    let hasKeys = state.y > 0.0;
    alphaTile[r] = select(0.0, 1.0 / state.y, hasKeys);
    if ((params.flags & ${WRITE_LSE}u) != 0u && q0 + r < params.seqLen) {
      lse[${lseIndex("r")}] = select(${EMPTY_LSE}, state.x + log(state.y), hasKeys);
    }
  }
  workgroupBarrier();
  ${each(rm, (a) => `let inverse${a} = alphaTile[${row(a)}];`)}`;

  return /* wgsl */ `${storage.enable}
@group(0) @binding(0) var<storage, read> q: array<${storage.vec4}>;
@group(0) @binding(1) var<storage, read> k: array<${storage.vec4}>;
@group(0) @binding(2) var<storage, read> v: array<${storage.vec4}>;
@group(0) @binding(3) var<storage, read_write> out: array<${storage.vec4}>;
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;
${commonWgsl(KV_START_BINDING)}

var<workgroup> qTile: array<vec4f, ${bq * strides.q}>; // scaled queries, row stride ${strides.q}
var<workgroup> kvTile: array<vec4f, ${bk * stride}>; // K, then V, of the current key block
var<workgroup> pTile: array<f32, ${bq * pStride}>;   // scores, then probabilities, row stride ${pStride}
${state}

@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u) {
  let qBlocks = (params.seqLen + ${bq - 1}u) / ${bq}u;
  let q0 = (qBlocks - 1u - wg.x) * ${bq}u; // the last blocks (most keys under the causal mask) first
  let head = wg.y;
  let b = wg.z;
  let kvHead = head / params.group;
  let ty = t / ${tx}u;
  let tx = t % ${tx}u;
  let kStart = firstKey(b);
  let kEnd = keyEnd(q0 + ${bq}u);

  ${loadQueryRows({ d4, stride: strides.q, threads, dtype }, "qTile", "q", "params.scale")}

  ${initState}
  ${each(rm, (a) => each(columns, (c) => `var acc${a}_${c} = vec4f(0.0);`))}

  // Key blocks wholly before kStart or after the causal limit are skipped.
  for (var k0 = kStart / ${bk}u * ${bk}u; k0 < kEnd; k0 += ${bk}u) {
    workgroupBarrier();
    ${loadKeyRows(kvLayout, "kvTile", "k")}
    workgroupBarrier();

    // S = (scale·Q)·Kᵀ: this thread's ${rm}x${rn} scores.
    ${each(rm * rn, (i) => `var s${i} = 0.0;`)}
    for (var c = 0u; c < params.d4; c++) {
      ${each(rm, (a) => `let qa${a} = qTile[(${row(a)}) * ${strides.q}u + c];`)}
      ${each(rn, (b) => `let kb${b} = kvTile[(${key(b)}) * ${stride}u + c];`)}
      ${pairs((a, b) => `${score(a, b)} += dot(qa${a}, kb${b});`)}
    }
    ${softmax}

    // O = alpha·O + P·V for rows ty + ${ty}a and vec4 columns tx + ${tx}c.
    ${each(rm, (a) => each(columns, (c) => `acc${a}_${c} *= alpha${a};`))}
    for (var j = 0u; j < params.tileKeys; j++) {
      ${each(rm, (a) => `let p${a} = pTile[(${row(a)}) * ${pStride}u + j];`)}
      ${each(columns, (c) => `let v${c} = kvTile[j * ${stride}u + ${col(c)}];`)}
      ${each(rm, (a) => each(columns, (c) => `acc${a}_${c} += p${a} * v${c};`))}
    }
  }

  ${finish}
  ${each(
    rm,
    (a) => `if (q0 + ${row(a)} < params.seqLen) {
    let base = ${qIndex(d4, `q0 + ${row(a)}`)};
    ${storeColumns({ columns, spread: tx, d4, col, store: (c) => `out[base + ${col(c)}] = ${storage.narrow(`acc${a}_${c} * inverse${a}`)};` })}
  }`,
  )}
}
`;
}

// Hardware: 64 threads per workgroup (parallelism), 16 scores per thread. Software (lavapipe): where the
// tiles fit, larger per-thread tiles in fewer threads, since a load from workgroup memory costs lavapipe
// far more than an FMA (8x8 would be faster still, but takes seconds longer to JIT); for large headDim the
// hardware tiles, whose smaller per-thread accumulators JIT faster.
export const FORWARD_KERNEL: TiledKernel = {
  name: "forward",
  key: "forward",
  outputs: (flags, { batch, seqLen, numHeads, headDim, dtype = "f32" }) => {
    const rows = batch * seqLen * numHeads;
    const out = { binding: 3, bytes: rows * headDim * storageBytes(dtype), dtype };
    return flags & WRITE_LSE ? [out, { binding: 4, bytes: rows * 4, dtype: "f32" as const }] : [out];
  },
  storageInputs: [0, 1, 2],
  tiles: tileChoices(
    { bq: 32, bk: 32, rm: 8, rn: 4 },
    [
      { bq: 32, bk: 32, rm: 4, rn: 4 },
      { bq: 32, bk: 16, rm: 4, rn: 2 },
      { bq: 16, bk: 16, rm: 2, rn: 2 },
      { bq: 16, bk: 8, rm: 2, rn: 1 },
      { bq: 8, bk: 8, rm: 1, rn: 1 },
    ],
    [
      // Larger query blocks: fewer reloads of each key block, more threads or more scores per thread.
      { bq: 64, bk: 32, rm: 4, rn: 4 },
      { bq: 64, bk: 32, rm: 8, rn: 4 },
      { bq: 32, bk: 64, rm: 4, rn: 4 },
    ],
  ),
  bytes: (t, d4, profile) => {
    const strides = forwardStrides(t, d4);
    return 4 * (t.bq * strides.q * 4 + t.bk * strides.kv * 4 + t.bq * strides.p + softmaxFloats(t, profile));
  },
  code: forwardCode,
};

const scratchBuffers = new WeakMap<GpuContext, GPUBuffer>();

/** A small writable buffer per context that stands in for an absent optional output (never written). */
function scratchBuffer(ctx: GpuContext): GPUBuffer {
  let buffer = scratchBuffers.get(ctx);
  if (!buffer) {
    buffer = ctx.pool.acquire(16, "attention scratch");
    scratchBuffers.set(ctx, buffer);
  }
  return buffer;
}

/**
 * out = softmax(scale·Q·Kᵀ + mask)·V per head, and (when `lse` is given) each query row's log-sum-exp of
 * its scaled scores. Records work only.
 */
export function attentionForward(ctx: GpuContext, args: AttentionForwardArgs): void {
  recordAttentionForward(ctx, args, attentionForm(ctx, "forward", args));
}

/**
 * attentionForward in `form` (the matmul form only where matmulFormPlan takes the problem), on dimensions
 * already checked (attentionForm checks them).
 */
export function recordAttentionForward(
  ctx: GpuContext,
  args: AttentionForwardArgs,
  form: AttentionForm,
): void {
  checkHeadDim(args.headDim);
  if (form === "matmul") {
    attentionForwardByMatmul(ctx, args, scratchBuffer(ctx));
    return;
  }
  const flags = (args.kvStart ? HAS_KV_START : 0) | (args.lse ? WRITE_LSE : 0);
  const lanes = textureAttentionLanes(ctx, args);
  if (lanes !== undefined) {
    const kvRows = args.kvCapacity ?? args.kvLen;
    dispatchTextureAttention(
      ctx,
      args,
      flags,
      lanes,
      [
        { buffer: args.q, rows: args.seqLen, heads: args.numHeads },
        { buffer: args.k, rows: kvRows, heads: args.numKvHeads },
        { buffer: args.v, rows: kvRows, heads: args.numKvHeads },
      ],
      [
        {
          name: "forward",
          key: "forward-texture",
          code: textureForwardCode,
          tile: textureForwardTile(lanes),
          buffers: [args.out, args.lse ?? scratchBuffer(ctx), args.kvStart ?? args.q],
          workgroups: [Math.ceil(args.seqLen / TEXTURE_ROWS), args.numHeads],
        },
      ],
    );
    return;
  }
  recordTiled(
    ctx,
    FORWARD_KERNEL,
    args,
    flags,
    [args.q, args.k, args.v, args.out, args.lse ?? scratchBuffer(ctx), args.kvStart ?? args.q],
    (tile) => [Math.ceil(args.seqLen / tile.bq), args.numHeads, args.batch],
  );
}
