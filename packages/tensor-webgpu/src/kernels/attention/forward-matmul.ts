/**
 * The matmul form of the attention forward (prefill and training shapes), for GPUs: per block of query
 * rows (matmul-form.ts), per KV head with its query heads' rows stacked,
 *
 *   S   = scale · Q·Kᵀ                                   (one matmul)
 *   lse = log Σ exp(S) over the visible keys, P = exp(S - lse), masked   (one kernel, a row per workgroup)
 *   O   = P·V                                            (one matmul)
 *
 * then O is copied back to the output's layout. Where the tiled kernels run an online softmax over key
 * blocks in workgroup memory, this runs the products on the matmul kernels and the softmax over whole rows.
 * A row that sees no key gets EMPTY_ROW_LSE and a zero output, as the tiled kernels give it. Tuning
 * measures both forms (forms.ts); the results agree with the tiled kernels' within rounding.
 */
import type { AttentionDims } from "../../core/attention.js";
import { type GpuContext, grid } from "../../gpu/context.js";
import { enableFor, type FloatStorage, loadF32, storageBytes, storeAs, uniforms } from "../elementwise.js";
import { matmul } from "../matmul.js";
import {
  BLOCK_WGSL,
  blockParams,
  gatherHeads,
  headMajorBlocks,
  matmulFormPlan,
  matmulFormSizes,
  scatterHeads,
} from "./matmul-form.js";
import { cachedCode, EMPTY_LSE, MASKED, resolveScale } from "./shared.js";

const ROW_THREADS = 64;

/**
 * The softmax of each row of a block's scores [sequences, numHeads, rows, keys] (query rows q0.. of
 * sequences batch0..; of `dtype`, computed in f32), in place, and its lse (when writeLse): one workgroup
 * per row, its threads striding over the row's visible keys [kStart, end) for the max, then the sum of
 * exponentials, each reduced in workgroup memory.
 */
const rowSoftmaxCode = (dtype: FloatStorage) => {
  const score = (j: string) => loadF32(dtype, 1, `scores[base + ${j}]`);
  const stored = (value: string) => storeAs(dtype, 1, value);
  return /* wgsl */ `${enableFor(dtype)}
struct Params { count: u32, ${BLOCK_WGSL.params}, writeLse: u32 }
@group(0) @binding(0) var<storage, read_write> scores: array<${dtype}>;
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;
@group(0) @binding(2) var<storage, read> kvStart: array<i32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> partial: array<f32, ${ROW_THREADS}>;

${BLOCK_WGSL.row}

// The workgroup's total of each thread's value (max or sum), after a barrier every thread may read.
fn reduce(t: u32, value: f32, isMax: bool) -> f32 {
  partial[t] = value;
  workgroupBarrier();
  for (var stride = ${ROW_THREADS / 2}u; stride > 0u; stride >>= 1u) {
    if (t < stride) {
      let other = partial[t + stride];
      partial[t] = select(partial[t] + other, max(partial[t], other), isMax);
    }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();
  return total;
}

@compute @workgroup_size(${ROW_THREADS})
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let row = wg.x + wg.y * groups.x; // (sequence, head, row) of the block
  if (row >= params.count) { return; }
  let at = blockRow(row);
  let kStart = at.kStart;
  var end = params.keys; // one past the row's last visible key
  if (params.causal != 0u) { end = min(end, at.position + params.kvLen - params.seqLen + 1u); }
  let base = row * params.keys;
  var top = ${MASKED};
  for (var j = kStart + t; j < end; j += ${ROW_THREADS}u) { top = max(top, ${score("j")}); }
  top = reduce(t, top, true);
  var sum = 0.0;
  for (var j = kStart + t; j < end; j += ${ROW_THREADS}u) { sum += exp(${score("j")} - top); }
  sum = reduce(t, sum, false);
  let rowLse = select(${EMPTY_LSE}, top + log(sum), end > kStart);
  for (var j = t; j < params.keys; j += ${ROW_THREADS}u) {
    scores[base + j] = ${stored(`select(0.0, exp(${score("j")} - rowLse), j >= kStart && j < end)`)};
  }
  if (t == 0u && params.writeLse != 0u) {
    lse[(at.b * params.numHeads + at.head) * params.seqLen + at.position] = rowLse; // lse's layout
  }
}`;
};

/** What the matmul form reads and writes: attentionForward's arguments. */
export type ForwardMatmulArgs = AttentionDims &
  Record<"q" | "k" | "v" | "out", GPUBuffer> & { lse?: GPUBuffer; kvStart?: GPUBuffer };

/**
 * Records the forward of `args` in the matmul form; `scratch` stands in for lse when there is none. The
 * caller checks matmulFormPlan first.
 */
export function attentionForwardByMatmul(ctx: GpuContext, args: ForwardMatmulArgs, scratch: GPUBuffer): void {
  const { kvLen, numHeads, numKvHeads, headDim } = args;
  const dtype = args.dtype ?? "f32";
  const plan = matmulFormPlan(ctx, args);
  if (!plan) throw new RangeError("attention forward: the matmul form does not take this problem");
  const group = numHeads / numKvHeads;
  const sizes = matmulFormSizes(plan, args);
  const acquire = (values: number, label: string) =>
    ctx.pool.acquire(values * storageBytes(dtype), `attention ${label}`);
  const qh = acquire(sizes.queries, "q by head");
  const outh = acquire(sizes.queries, "out by head");
  const kh = acquire(sizes.keys, "k by head");
  const vh = acquire(sizes.keys, "v by head");
  const scores = acquire(sizes.scores, "scores");
  const softmax = ctx.pipeline(
    `attention forward row softmax${dtype === "f16" ? " (f16)" : ""}`,
    cachedCode(`row-softmax:${dtype}`, () => rowSoftmaxCode(dtype)),
  );

  for (const block of headMajorBlocks(ctx, plan, args, kh, vh)) {
    const { sequences, rows, seen, queries } = block;
    gatherHeads(ctx, args.q, qh, queries);

    // Per (sequence, KV head): its group's query rows stacked, group·rows of them.
    const stacked = { batch: sequences * numKvHeads, m: group * rows, bBatchStride: kvLen * headDim, dtype };
    matmul(ctx, {
      ...stacked,
      n: seen,
      k: headDim,
      transB: true,
      a: qh,
      b: kh,
      out: scores,
      alpha: resolveScale(args),
      aBatchStride: group * rows * headDim,
    });
    const rowCount = sequences * numHeads * rows;
    ctx.dispatch(
      softmax,
      [scores, args.lse ?? scratch, args.kvStart ?? args.q],
      uniforms(rowCount, ...blockParams(block, args), args.lse ? 1 : 0),
      grid(rowCount, ctx.device.limits.maxComputeWorkgroupsPerDimension),
    );
    matmul(ctx, {
      ...stacked,
      n: headDim,
      k: seen,
      a: scores,
      b: vh,
      out: outh,
      aBatchStride: group * rows * seen,
    });
    scatterHeads(ctx, outh, args.out, queries);
  }
  // Recorded: later users of these buffers are ordered after the dispatches that read them.
  for (const buffer of [qh, outh, kh, vh, scores]) ctx.pool.release(buffer);
}
