import type { Backend, DType } from "../backend.js";
import { roundToHalf, roundToHalves } from "../core/half-float.js";
import { swigluBackwardRef, swigluRef } from "../reference/activation.js";
import { attentionBackwardRef, attentionForwardRef, decodeAttentionRef } from "../reference/attention.js";
import { affineRef, binaryRef, clampRef, unaryRef, whereRef } from "../reference/elementwise.js";
import { embeddingBackwardRef, embeddingRef } from "../reference/embedding.js";
import { castRef, fillRef, stridedCopyRef } from "../reference/layout.js";
import {
  crossEntropyBackwardRef,
  crossEntropyRef,
  entropyBackwardRef,
  entropyRef,
  tokenLogProbsBackwardRef,
  tokenLogProbsRef,
} from "../reference/logprobs.js";
import { matmulRef } from "../reference/matmul.js";
import { adamwRef, clipScaleRef, scaleInPlaceRef, sumOfSquaresRef } from "../reference/optimizer.js";
import { argmaxRef, reduceRef } from "../reference/reduce.js";
import { rmsNormBackwardRef, rmsNormRef } from "../reference/rmsnorm.js";
import { ropeRef } from "../reference/rope.js";
import { sampleRowsRef } from "../reference/sampling.js";
import {
  logSoftmaxBackwardRef,
  logSoftmaxRef,
  softmaxBackwardRef,
  softmaxRef,
} from "../reference/softmax.js";

/**
 * The CPU backend: every op is the pure-TS reference on ArrayBuffers. It is the ground truth the tests
 * check the WGSL kernels against, and a slow fallback that needs no GPU at all. f16 is emulated: an f16
 * tensor holds f32 words, every op that writes one rounds its results to the nearest half (as the f16
 * WGSL kernels do on store), so values match f16 storage while the memory is f32's.
 */
export interface CpuBackend extends Backend<ArrayBuffer> {
  readonly name: "cpu";
}

const f32 = (buffer: ArrayBuffer, n?: number) => new Float32Array(buffer, 0, n ?? buffer.byteLength / 4);
const i32 = (buffer: ArrayBuffer, n?: number) => new Int32Array(buffer, 0, n ?? buffer.byteLength / 4);
const words = (buffer: ArrayBuffer, dtype: DType = "f32") => (dtype === "i32" ? i32(buffer) : f32(buffer));
/** Emulated f16 storage: round the first n results to halves. */
const roundIfHalf = (buffer: ArrayBuffer, n: number, dtype: DType | undefined) => {
  if (dtype === "f16") roundToHalves(f32(buffer, n));
};
/** Copy `values` into the start of `buffer`, as += when `accumulate`. */
function store(buffer: ArrayBuffer, values: ArrayLike<number>, accumulate = false): void {
  const out = f32(buffer, values.length);
  if (accumulate) for (let i = 0; i < values.length; i++) out[i]! += values[i]!;
  else out.set(values);
}
/** `store` into a tensor of `dtype`: an f16 one's values rounded to halves, as the kernels store them. */
function storeAs(buffer: ArrayBuffer, values: ArrayLike<number>, dtype: DType | undefined): void {
  store(buffer, values);
  roundIfHalf(buffer, values.length, dtype);
}

export function createCpuBackend(): CpuBackend {
  return {
    name: "cpu",
    elementBytes: () => 4,
    alloc: (bytes) => new ArrayBuffer(Math.ceil(bytes / 4) * 4),
    free: () => {},
    write: (buffer, data) =>
      new Uint8Array(buffer).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)),
    read: async (buffer, bytes) => buffer.slice(0, bytes),
    sync: async () => {},

    matmul: (a) => {
      const n = a.batch * a.m * a.n;
      const result = matmulRef({ ...a, a: f32(a.a), b: f32(a.b), alpha: a.alpha });
      if (a.bias) {
        const bias = f32(a.bias);
        for (let i = 0; i < n; i++) result[i]! += bias[i % a.n]!;
      }
      if (a.addend) {
        const addend = f32(a.addend);
        for (let i = 0; i < n; i++) result[i]! += addend[i]!;
      }
      store(a.out, result.subarray(0, n), a.accumulate);
      roundIfHalf(a.out, n, a.dtype);
    },
    binary: (a) => {
      binaryRef({ ...a, a: f32(a.a), b: f32(a.b), out: f32(a.out) });
      roundIfHalf(
        a.out,
        a.shape.reduce((p, d) => p * d, 1),
        a.dtype,
      );
    },
    unary: (a) => {
      unaryRef({ ...a, x: f32(a.x), out: f32(a.out) });
      roundIfHalf(a.out, a.n, a.dtype);
    },
    affine: (a) => {
      affineRef({ ...a, x: f32(a.x), out: f32(a.out) });
      roundIfHalf(a.out, a.n, a.dtype);
    },
    clamp: (a) => {
      clampRef({ ...a, x: f32(a.x), out: f32(a.out) });
    },
    where: (a) => {
      whereRef({ ...a, cond: f32(a.cond), a: f32(a.a), b: f32(a.b), out: f32(a.out) });
    },
    reduce: (a) => {
      reduceRef({ ...a, x: f32(a.x), out: f32(a.out) });
      roundIfHalf(a.out, a.outer * a.inner, a.outDtype);
    },
    argmax: (a) => {
      argmaxRef({ ...a, x: f32(a.x), out: i32(a.out) });
    },
    fill: (a) => {
      fillRef({
        ...a,
        value: a.dtype === "f16" ? roundToHalf(a.value) : a.value,
        out: words(a.out, a.dtype),
      });
    },
    stridedCopy: (a) => {
      stridedCopyRef({ ...a, x: words(a.x, a.dtype), out: words(a.out, a.dtype) });
    },
    cast: (a) => {
      castRef({ ...a, x: words(a.x, a.from), out: words(a.out, a.to) });
    },
    adamw: (a) => {
      adamwRef({
        ...a,
        param: f32(a.param),
        grad: f32(a.grad),
        m: f32(a.m),
        v: f32(a.v),
        gradScale: a.gradScale ? f32(a.gradScale) : undefined,
      });
    },
    sumOfSquares: (a) => sumOfSquaresRef({ ...a, x: f32(a.x), out: f32(a.out) }),
    clipScale: (a) =>
      clipScaleRef({
        ...a,
        sumSquares: f32(a.sumSquares),
        out: f32(a.out),
        norm: a.norm ? f32(a.norm) : undefined,
        lossScale: a.lossScale ? { ...a.lossScale, state: f32(a.lossScale.state) } : undefined,
      }),
    scaleInPlace: (a) => scaleInPlaceRef({ ...a, x: f32(a.x), scale: f32(a.scale) }),
    rmsNorm: (a) => {
      const { y, rstd } = rmsNormRef({ ...a, x: f32(a.x, a.rows * a.dim), weight: f32(a.weight) });
      storeAs(a.out, y, a.dtype);
      if (a.rstd) store(a.rstd, rstd);
    },
    rmsNormBackward: (a) => {
      const { dX, dWeight } = rmsNormBackwardRef({
        ...a,
        x: f32(a.x, a.rows * a.dim),
        weight: f32(a.weight),
        rstd: f32(a.rstd),
        dOut: f32(a.dOut),
        dWeight: a.accumulateWeightGrad ? f32(a.dWeight, a.dim) : undefined,
      });
      storeAs(a.dX, dX, a.dtype);
      storeAs(a.dWeight, dWeight, a.weightDtype);
    },
    rope: (a) => {
      const n = a.batch * a.seqLen * a.numHeads * a.headDim;
      store(a.out, ropeRef({ ...a, x: f32(a.x, n), positions: i32(a.positions, a.batch * a.seqLen) }));
      roundIfHalf(a.out, n, a.dtype);
    },
    softmax: (a) => store(a.out, softmaxRef({ ...a, x: f32(a.x, a.rows * a.cols) })),
    softmaxBackward: (a) =>
      store(a.dX, softmaxBackwardRef({ ...a, y: f32(a.y, a.rows * a.cols), dY: f32(a.dY) })),
    logSoftmax: (a) => store(a.out, logSoftmaxRef({ ...a, x: f32(a.x, a.rows * a.cols) })),
    logSoftmaxBackward: (a) =>
      store(a.dX, logSoftmaxBackwardRef({ ...a, y: f32(a.y, a.rows * a.cols), dY: f32(a.dY) })),
    swiglu: (a) => {
      store(a.out, swigluRef({ ...a, gate: f32(a.gate, a.n), up: f32(a.up) }));
      roundIfHalf(a.out, a.n, a.dtype);
    },
    swigluBackward: (a) => {
      const { dGate, dUp } = swigluBackwardRef({
        ...a,
        gate: f32(a.gate, a.n),
        up: f32(a.up),
        dOut: f32(a.dOut),
      });
      store(a.dGate, dGate);
      store(a.dUp, dUp);
      roundIfHalf(a.dGate, a.n, a.dtype);
      roundIfHalf(a.dUp, a.n, a.dtype);
    },
    // A gather: emulated f16 rows are already rounded.
    embedding: (a) => store(a.out, embeddingRef({ ...a, table: f32(a.table), ids: i32(a.ids, a.count) })),
    embeddingBackward: (a) => {
      const dTable = f32(a.dTable);
      const result = embeddingBackwardRef({
        ...a,
        dOut: f32(a.dOut),
        dTable,
        uniqueIds: i32(a.uniqueIds),
        offsets: i32(a.offsets),
        positions: i32(a.positions),
      });
      dTable.set(result.subarray(0, dTable.length));
      roundIfHalf(a.dTable, dTable.length, a.dtype);
    },
    tokenLogProbs: (a) => {
      const { out, lse } = tokenLogProbsRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        ids: i32(a.ids, a.rows),
      });
      store(a.out, out);
      if (a.lse) store(a.lse, lse);
    },
    tokenLogProbsBackward: (a) => {
      const grad = tokenLogProbsBackwardRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        ids: i32(a.ids, a.rows),
        lse: f32(a.lse),
        dOut: f32(a.dOut),
        dLogits: a.accumulate ? f32(a.dLogits, a.rows * a.vocab) : undefined,
      });
      storeAs(a.dLogits, grad, a.dtype);
    },
    entropy: (a) => {
      const { out, lse } = entropyRef({ ...a, logits: f32(a.logits, a.rows * a.vocab) });
      store(a.out, out);
      if (a.lse) store(a.lse, lse);
    },
    entropyBackward: (a) => {
      const grad = entropyBackwardRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        lse: f32(a.lse),
        dOut: f32(a.dOut),
        dLogits: a.accumulate ? f32(a.dLogits, a.rows * a.vocab) : undefined,
      });
      storeAs(a.dLogits, grad, a.dtype);
    },
    crossEntropy: (a) => {
      const { out, lse } = crossEntropyRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        targets: i32(a.targets, a.rows),
      });
      store(a.out, out);
      if (a.lse) store(a.lse, lse);
    },
    crossEntropyBackward: (a) => {
      const grad = crossEntropyBackwardRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        targets: i32(a.targets, a.rows),
        lse: f32(a.lse),
        dOut: f32(a.dOut),
        dLogits: a.accumulate ? f32(a.dLogits, a.rows * a.vocab) : undefined,
      });
      storeAs(a.dLogits, grad, a.dtype);
    },
    sampleRows: (a) => {
      const { tokens, logProbs } = sampleRowsRef({
        ...a,
        logits: f32(a.logits, a.rows * a.vocab),
        uniforms: f32(a.uniforms, a.rows),
      });
      i32(a.tokens, a.rows).set(tokens);
      store(a.logProbs, logProbs);
    },
    attentionForward: (a) => {
      const { out, lse } = attentionForwardRef({
        ...a,
        q: f32(a.q),
        k: f32(a.k),
        v: f32(a.v),
        kvStart: a.kvStart ? i32(a.kvStart, a.batch) : undefined,
      });
      storeAs(a.out, out, a.dtype);
      if (a.lse) store(a.lse, lse);
    },
    attentionBackward: (a) => {
      const { dQ, dK, dV } = attentionBackwardRef({
        ...a,
        q: f32(a.q),
        k: f32(a.k),
        v: f32(a.v),
        dOut: f32(a.dOut),
        kvStart: a.kvStart ? i32(a.kvStart, a.batch) : undefined,
      });
      storeAs(a.dQ, dQ, a.dtype);
      storeAs(a.dK, dK, a.dtype);
      storeAs(a.dV, dV, a.dtype);
    },
    decodeAttention: (a) => {
      const out = decodeAttentionRef({
        ...a,
        q: f32(a.q),
        kCache: f32(a.kCache),
        vCache: f32(a.vCache),
        kvStart: a.kvStart ? i32(a.kvStart, a.batch) : undefined,
      });
      storeAs(a.out, out, a.dtype);
    },
  };
}
