/**
 * What the matmul forms of attention (forward-matmul.ts, backward-matmul.ts) share: how a problem is cut
 * so that its score matrices fit, and the copies between the tensors' layout and the head-major one the
 * products read.
 *
 * On halves (AttentionDims.dtype f16) the head-major copies, the score matrices and the products' results
 * are halves too: the products take f16 operands and sum in f32 (tensor cores where the GPU offers them),
 * rounding each result once, as PyTorch's attention in bf16 materialises bf16 scores; the softmax and the
 * score gradients compute in f32 between the products.
 *
 * A problem's score matrix takes numHeads · seqLen · kvLen values a sequence. Whole sequences are taken
 * in chunks whose matrix fits MATMUL_FORM_BYTES; a longer sequence is taken in blocks of query rows that
 * fit, and under the causal mask a block multiplies only the keys its rows see. Blocks run last first: the
 * last sees every key, so what its products sum over keys is written whole and the other blocks add to it.
 * A problem whose blocks would be under MIN_BLOCK_ROWS rows is left to the tiled kernels.
 */
import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import { contiguousStrides, type FloatStorage, storageBytes } from "../elementwise.js";
import { stridedCopy } from "../layout.js";

/**
 * The most bytes one score matrix of a chunk may take (the backward holds two, the forward one, alive only
 * during one layer's attention): 4 × 512 tokens of Qwen2.5-0.5B's 14 heads take 59 MB, one sequence of
 * 1,500 tokens 126 MB.
 */
export const MATMUL_FORM_BYTES = 128 * 2 ** 20;

/** Fewer query rows a block than this and the products are too small to beat the tiled kernels. */
export const MIN_BLOCK_ROWS = 16;

let testBytes: number | undefined;

/** Tests: a smaller MATMUL_FORM_BYTES (undefined restores it), to chunk small problems or leave them out. */
export function limitMatmulFormBytesForTesting(bytes?: number): void {
  testBytes = bytes;
}

/** How a matmul form takes a problem: sequences per chunk, and query rows per block of a chunk. */
export interface MatmulFormPlan {
  sequences: number;
  rows: number;
}

/** The matmul forms' chunks and blocks for a problem, or undefined when they do not take it. */
export function matmulFormPlan(ctx: GpuContext, dims: AttentionDims): MatmulFormPlan | undefined {
  const { limits } = ctx.device;
  const budget = Math.min(
    testBytes ?? MATMUL_FORM_BYTES,
    limits.maxStorageBufferBindingSize,
    limits.maxBufferSize,
  );
  const perRow = dims.numHeads * dims.kvLen * storageBytes(dims.dtype ?? "f32");
  const sequences = Math.floor(budget / (perRow * dims.seqLen));
  if (sequences >= 1) return { sequences: Math.min(dims.batch, sequences), rows: dims.seqLen };
  const rows = Math.floor(budget / perRow);
  return rows >= MIN_BLOCK_ROWS ? { sequences: 1, rows } : undefined;
}

/**
 * Where a tensor's rows lie, seen head-major: [sequences, heads, rows, headDim] as strides of its layout,
 * and its elements.
 */
export interface HeadMajor {
  shape: number[];
  strides: number[];
  offset: number;
  dtype: FloatStorage;
}

/** One block of a plan: query rows q0.. of sequences b0.., and the keys 0..seen-1 they see. */
export interface MatmulFormBlock {
  b0: number;
  sequences: number;
  q0: number;
  rows: number;
  seen: number;
  /** The chunk's first block (its last rows): it sees every key, so its sums over keys write, not add. */
  first: boolean;
  /** Where the block's query rows lie in q-like tensors [batch, seqLen, numHeads, headDim]. */
  queries: HeadMajor;
}

/**
 * WGSL: the Params fields both forms' row kernels share (after their leading count; blockParams fills
 * them), and where a row of a block's scores [sequences, numHeads, rows, keys] lies: its position in the
 * sequence, its head, its sequence and that sequence's first unmasked key.
 */
export const BLOCK_WGSL = {
  params:
    "keys: u32, rows: u32, q0: u32, numHeads: u32, seqLen: u32, kvLen: u32, batch0: u32, causal: u32, hasKvStart: u32",
  row: /* wgsl */ `struct BlockRow { position: u32, head: u32, b: u32, kStart: u32 }

fn blockRow(row: u32) -> BlockRow {
  let b = params.batch0 + row / (params.rows * params.numHeads);
  var kStart = 0u;
  if (params.hasKvStart != 0u) { kStart = u32(clamp(kvStart[b], 0, i32(params.kvLen))); }
  return BlockRow(params.q0 + row % params.rows, (row / params.rows) % params.numHeads, b, kStart);
}`,
};

/** The words of BLOCK_WGSL.params for `block` of a problem. */
export function blockParams(block: MatmulFormBlock, dims: AttentionDims & { kvStart?: GPUBuffer }): number[] {
  const { seen, rows, q0, b0 } = block;
  const causal = (dims.causal ?? true) ? 1 : 0;
  return [seen, rows, q0, dims.numHeads, dims.seqLen, dims.kvLen, b0, causal, dims.kvStart ? 1 : 0];
}

/**
 * The blocks of `plan` in the order they run: chunk by chunk, each chunk's last rows first. At each
 * chunk's first block its sequences' K and V are copied head-major into kh and vh ([sequences,
 * numKvHeads, kvLen, headDim]) first.
 */
export function* headMajorBlocks(
  ctx: GpuContext,
  plan: MatmulFormPlan,
  args: AttentionDims & { k: GPUBuffer; v: GPUBuffer },
  kh: GPUBuffer,
  vh: GPUBuffer,
): Generator<MatmulFormBlock> {
  const { batch, seqLen, kvLen, numHeads, numKvHeads, headDim } = args;
  const causal = args.causal ?? true;
  const blocks = Math.ceil(seqLen / plan.rows);
  for (let b0 = 0; b0 < batch; b0 += plan.sequences) {
    const sequences = Math.min(plan.sequences, batch - b0);
    // Rows r0.. of `rows` rows of the chunk's sequences in a tensor [batch, stored rows, heads, headDim].
    const byHead = (heads: number, r0: number, rows: number, stored: number): HeadMajor => ({
      shape: [sequences, heads, rows, headDim],
      strides: [stored * heads * headDim, headDim, heads * headDim, 1],
      offset: (b0 * stored + r0) * heads * headDim,
      dtype: args.dtype ?? "f32",
    });
    const keys = byHead(numKvHeads, 0, kvLen, args.kvCapacity ?? kvLen);
    gatherHeads(ctx, args.k, kh, keys);
    gatherHeads(ctx, args.v, vh, keys);
    for (let block = blocks - 1; block >= 0; block--) {
      const q0 = block * plan.rows;
      const rows = Math.min(plan.rows, seqLen - q0);
      // Under the causal mask, the keys up to the block's last row's.
      const seen = causal ? Math.min(kvLen, q0 + rows + kvLen - seqLen) : kvLen;
      const queries = byHead(numHeads, q0, rows, seqLen);
      yield { b0, sequences, q0, rows, seen, first: block === blocks - 1, queries };
    }
  }
}

/** Copy `at` of x (a tensor in its own layout) into out, head-major and contiguous. */
export function gatherHeads(ctx: GpuContext, x: GPUBuffer, out: GPUBuffer, at: HeadMajor): void {
  stridedCopy(ctx, { x, out, shape: at.shape, xStrides: at.strides, xOffset: at.offset, dtype: at.dtype });
}

/** Copy x (head-major and contiguous) back to `at` of out (a tensor in its own layout). */
export function scatterHeads(ctx: GpuContext, x: GPUBuffer, out: GPUBuffer, at: HeadMajor): void {
  stridedCopy(ctx, {
    dtype: at.dtype,
    x,
    out,
    shape: at.shape,
    xStrides: contiguousStrides(at.shape),
    outStrides: at.strides,
    outOffset: at.offset,
  });
}

/** What both forms' scratch buffers hold at most: values of the head-major tensors and score matrices. */
export function matmulFormSizes(plan: MatmulFormPlan, dims: AttentionDims) {
  const { numHeads, numKvHeads, kvLen, headDim } = dims;
  return {
    queries: plan.sequences * numHeads * plan.rows * headDim,
    keys: plan.sequences * numKvHeads * kvLen * headDim,
    scores: plan.sequences * numHeads * plan.rows * kvLen,
  };
}
