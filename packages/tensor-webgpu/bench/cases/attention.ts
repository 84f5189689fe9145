/**
 * Attention kernels: forward and forward+backward (prefill/training shapes) and decode over a KV cache.
 * FLOPs count the two matmuls (4·batch·heads·seqLen·kvLen·headDim, halved for causal); backward is counted
 * as 2.5x the forward, the usual convention (it recomputes the scores, so it does more).
 */
import { float32ArrayToFloat16 } from "../../src/core/half-float.js";
import type { GpuContext } from "../../src/gpu/context.js";
import type { AttentionForm } from "../../src/kernels/attention/forms.js";
import {
  attentionBackward,
  attentionForward,
  attentionTuning,
  decodeAttention,
} from "../../src/kernels/attention/index.js";
import { storageBytes } from "../../src/kernels/elementwise.js";
import type { BenchCase } from "../case.js";

interface Heads {
  label: string;
  batch: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
}

/** Qwen2.5-0.5B's attention, one sequence. */
const QWEN_05B: Heads = { label: "qwen0.5b", batch: 1, numHeads: 14, numKvHeads: 2, headDim: 64 };
/** A tiny Qwen2-architecture model (the CPU-trainable size), a batch of rollouts. */
const SMALL: Heads = { label: "small", batch: 8, numHeads: 4, numKvHeads: 2, headDim: 32 };

function randomData(length: number, seed: number): Float32Array<ArrayBuffer> {
  const data = new Float32Array(length);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    data[i] = state / 2 ** 31 - 1;
  }
  return data;
}

/**
 * `form`: the form of both passes, forced (the matmul form computes the masked half of the scores too, but
 * its figure counts the same FLOPs, so that the two forms compare as times). `dtype` f16: q, k, v, dOut,
 * the output and the gradients in halves (named "[f16]"; PyTorch's peer is SDPA in bf16).
 */
function prefillCase(
  heads: Heads,
  seqLen: number,
  backward: boolean,
  form?: AttentionForm,
  dtype: "f32" | "f16" = "f32",
): BenchCase {
  const { batch, numHeads, numKvHeads, headDim } = heads;
  const forwardFlops = (4 * batch * numHeads * seqLen * seqLen * headDim) / 2;
  const half = dtype === "f16";
  return {
    family: "attention",
    name: `attention ${backward ? "fwd+bwd" : "fwd"} ${heads.label} T=${seqLen} ${numHeads}/${numKvHeads}x${headDim} b=${batch}${form ? ` [${form} form]` : ""}${half ? " [f16]" : ""}`,
    flops: backward ? forwardFlops * 3.5 : forwardFlops,
    skip: (ctx) => (half && !ctx.info.features.shaderF16 ? "no shader-f16 on this adapter" : undefined),
    setup(ctx: GpuContext) {
      const dims = { batch, seqLen, kvLen: seqLen, numHeads, numKvHeads, headDim, dtype };
      const qSize = batch * seqLen * numHeads * headDim;
      const kvSize = batch * seqLen * numKvHeads * headDim;
      const upload = (values: Float32Array<ArrayBuffer>) =>
        ctx.upload(half ? float32ArrayToFloat16(values) : values);
      const bytes = (elements: number) => elements * storageBytes(dtype);
      const q = upload(randomData(qSize, 1));
      const k = upload(randomData(kvSize, 2));
      const v = upload(randomData(kvSize, 3));
      const dOut = upload(randomData(qSize, 4));
      const out = ctx.pool.acquire(bytes(qSize));
      const lse = ctx.pool.acquire(batch * numHeads * seqLen * 4);
      const dQ = ctx.pool.acquire(bytes(qSize));
      const dK = ctx.pool.acquire(bytes(kvSize));
      const dV = ctx.pool.acquire(bytes(kvSize));
      if (form) {
        attentionTuning.forward = form;
        attentionTuning.backward = form;
      }
      return {
        run() {
          attentionForward(ctx, { ...dims, q, k, v, out, lse });
          if (backward) attentionBackward(ctx, { ...dims, q, k, v, out, dOut, lse, dQ, dK, dV });
        },
        dispose() {
          attentionTuning.forward = "auto";
          attentionTuning.backward = "auto";
          for (const buffer of [q, k, v, dOut, out, lse, dQ, dK, dV]) ctx.pool.release(buffer);
        },
      };
    },
  };
}

function decodeCase(heads: Heads, batch: number, kvLen: number): BenchCase {
  const { numHeads, numKvHeads, headDim } = heads;
  return {
    family: "attention",
    name: `attention decode ${heads.label} kvLen=${kvLen} ${numHeads}/${numKvHeads}x${headDim} b=${batch}`,
    flops: 4 * batch * numHeads * kvLen * headDim,
    bytes: 2 * batch * kvLen * numKvHeads * headDim * 4,
    setup(ctx: GpuContext) {
      const capacity = kvLen;
      const q = ctx.upload(randomData(batch * numHeads * headDim, 5));
      const kCache = ctx.upload(randomData(batch * capacity * numKvHeads * headDim, 6));
      const vCache = ctx.upload(randomData(batch * capacity * numKvHeads * headDim, 7));
      const out = ctx.pool.acquire(batch * numHeads * headDim * 4);
      return {
        run() {
          decodeAttention(ctx, {
            q,
            kCache,
            vCache,
            out,
            kvLen,
            capacity,
            batch,
            numHeads,
            numKvHeads,
            headDim,
          });
        },
        dispose() {
          for (const buffer of [q, kCache, vCache, out]) ctx.pool.release(buffer);
        },
      };
    },
  };
}

const SEQ_LENS = [128, 256, 512, 1024];

export const cases: BenchCase[] = [
  ...[QWEN_05B, SMALL].flatMap((heads) =>
    SEQ_LENS.flatMap((seqLen) => [prefillCase(heads, seqLen, false), prefillCase(heads, seqLen, true)]),
  ),
  // The matmul forms beside the tiled kernels (which "auto" runs until tuning measures both).
  ...[512, 1024].flatMap((seqLen) =>
    [false, true].map((backward) => prefillCase(QWEN_05B, seqLen, backward, "matmul")),
  ),
  prefillCase(SMALL, 512, true, "matmul"),
  // On halves (mixed-precision training), beside PyTorch's SDPA in bf16.
  ...[512, 1024].flatMap((seqLen) =>
    [false, true].map((backward) => prefillCase(QWEN_05B, seqLen, backward, undefined, "f16")),
  ),
  decodeCase(QWEN_05B, 8, 256),
  decodeCase(QWEN_05B, 8, 2048),
  // The Quest job's rollouts in an episode's last turns (32 sequences of the embedded model).
  decodeCase(SMALL, 32, 1024),
];
