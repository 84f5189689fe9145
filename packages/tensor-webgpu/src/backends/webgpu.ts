import type { Backend } from "../backend.js";
import { type Binding, type ContextOptions, GpuContext } from "../gpu/context.js";
import * as activation from "../kernels/activation.js";
import * as attention from "../kernels/attention/index.js";
import { batches, bindingWindow, maxBindingBytes } from "../kernels/binding-windows.js";
import * as elementwise from "../kernels/elementwise.js";
import * as embedding from "../kernels/embedding.js";
import * as layout from "../kernels/layout.js";
import { dtypeBytes } from "../kernels/layout.js";
import * as logprobs from "../kernels/logprobs.js";
import * as matmul from "../kernels/matmul.js";
import { matvecWithInput } from "../kernels/matmul-fused-input.js";
import * as optimizer from "../kernels/optimizer.js";
import * as reduce from "../kernels/reduce.js";
import * as rmsnorm from "../kernels/rmsnorm.js";
import * as rope from "../kernels/rope.js";
import * as sampling from "../kernels/sampling.js";
import * as softmax from "../kernels/softmax.js";

/**
 * Run an element-wise kernel over `n` elements of `buffers` (element i of each at byte i·bytes[k]). When a
 * buffer is larger than one storage binding may be (128 MiB on lavapipe: less than a 0.5B model's embedding
 * gradient), the elements are split into windows with aligned offsets, each a separate dispatch on byte
 * ranges.
 */
function elementWindows(
  ctx: GpuContext,
  n: number,
  buffers: readonly GPUBuffer[],
  run: (bindings: Binding[], count: number, index: number) => void,
  bytes: number | readonly number[] = 4,
): void {
  const limit = maxBindingBytes(ctx);
  if (buffers.every((b) => b.size <= limit)) {
    run([...buffers], n, 0);
    return;
  }
  const sizes = buffers.map((_, k) => (typeof bytes === "number" ? bytes : bytes[k]!));
  // Window starts aligned for the smallest element are aligned for every larger one.
  const alignedElements = ctx.device.limits.minStorageBufferOffsetAlignment / Math.min(...sizes);
  batches(ctx, n, Math.max(...sizes), alignedElements).forEach((batch, index) => {
    const bindings = buffers.map(
      (buffer, k) =>
        bindingWindow(ctx, buffer, batch.first * sizes[k]!, batch.count * sizes[k]!, sizes[k]!).binding,
    );
    run(bindings, batch.count, index);
  });
}

export class MissingFeatureError extends Error {
  constructor(
    readonly feature: string,
    why: string,
  ) {
    super(`This WebGPU device lacks the feature "${feature}": ${why}`);
    this.name = "MissingFeatureError";
  }
}

function isContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let expected = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1 && strides[i] !== expected) return false;
    expected *= shape[i]!;
  }
  return true;
}

/** The WebGPU backend: every op is one of the hand-written WGSL kernels, recorded on `ctx`. */
export interface WebGpuBackend extends Backend<GPUBuffer> {
  readonly name: "webgpu";
  readonly ctx: GpuContext;
  /** Releases the device and everything on it; tensors on this backend are unusable afterwards. */
  destroy(): void;
}

export function createWebGpuBackend(ctx: GpuContext): WebGpuBackend {
  return {
    name: "webgpu",
    ctx,
    elementBytes: (dtype) => {
      if (dtype === "f16" && !ctx.info.features.shaderF16)
        throw new MissingFeatureError(
          "shader-f16",
          "f16 tensors need it (use f32 tensors here, or the CPU backend, which emulates f16 storage)",
        );
      return dtypeBytes(dtype);
    },
    alloc: (bytes) => ctx.pool.acquire(bytes),
    free: (buffer) => ctx.pool.release(buffer),
    write: (buffer, data) => ctx.write(buffer, data),
    read: (buffer, bytes) => ctx.read(buffer, bytes),
    sync: () => ctx.sync(),
    destroy: () => ctx.destroy(),

    matmul: (args) => matmul.matmul(ctx, args),
    binary: (args) => {
      const n = args.shape.reduce((p, d) => p * d, 1);
      const bytes = dtypeBytes(args.dtype ?? "f32");
      if (!isContiguous(args.shape, args.aStrides) || !isContiguous(args.shape, args.bStrides)) {
        elementwise.binary(ctx, args);
        return;
      }
      elementWindows(
        ctx,
        n,
        [args.a, args.b, args.out],
        ([a, b, out], count) =>
          elementwise.binary(ctx, {
            ...args,
            a: a!,
            b: b!,
            out: out!,
            shape: [count],
            aStrides: [1],
            bStrides: [1],
          }),
        bytes,
      );
    },
    unary: (args) =>
      elementWindows(
        ctx,
        args.n,
        [args.x, args.out],
        ([x, out], n) => elementwise.unary(ctx, { ...args, x: x!, out: out!, n }),
        dtypeBytes(args.dtype ?? "f32"),
      ),
    affine: (args) =>
      elementWindows(
        ctx,
        args.n,
        [args.x, args.out],
        ([x, out], n) => elementwise.affine(ctx, { ...args, x: x!, out: out!, n }),
        dtypeBytes(args.dtype ?? "f32"),
      ),
    clamp: (args) =>
      elementWindows(ctx, args.n, [args.x, args.out], ([x, out], n) =>
        elementwise.clamp(ctx, { ...args, x: x!, out: out!, n }),
      ),
    where: (args) =>
      elementWindows(ctx, args.n, [args.cond, args.a, args.b, args.out], ([cond, a, b, out], n) =>
        elementwise.where(ctx, { cond: cond!, a: a!, b: b!, out: out!, n }),
      ),
    reduce: (args) => reduce.reduce(ctx, args),
    argmax: (args) => reduce.argmax(ctx, args),
    fill: (args) =>
      elementWindows(
        ctx,
        args.n,
        [args.out],
        ([out], n) => layout.fill(ctx, { ...args, out: out!, n }),
        dtypeBytes(args.dtype ?? "f32"),
      ),
    stridedCopy: (args) => layout.stridedCopy(ctx, args),
    cast: (args) =>
      elementWindows(
        ctx,
        args.n,
        [args.x, args.out],
        ([x, out], n) => layout.cast(ctx, { ...args, x: x!, out: out!, n }),
        [dtypeBytes(args.from), dtypeBytes(args.to)],
      ),
    adamw: (args) =>
      elementWindows(ctx, args.n, [args.param, args.grad, args.m, args.v], ([param, grad, m, v], n) =>
        optimizer.adamw(ctx, { ...args, param: param!, grad: grad!, m: m!, v: v!, n }),
      ),
    sumOfSquares: (args) =>
      elementWindows(ctx, args.n, [args.x], ([x], n, index) =>
        optimizer.sumOfSquares(ctx, { ...args, x: x!, n, accumulate: args.accumulate || index > 0 }),
      ),
    clipScale: (args) => optimizer.clipScale(ctx, args),
    scaleInPlace: (args) =>
      elementWindows(ctx, args.n, [args.x], ([x], n) => optimizer.scaleInPlace(ctx, { ...args, x: x!, n })),
    rmsNorm: (args) => rmsnorm.rmsNorm(ctx, args),
    rmsNormBackward: (args) => rmsnorm.rmsNormBackward(ctx, args),
    rope: (args) => rope.rope(ctx, args),
    ropeAppend: (args) => rope.ropeAppend(ctx, args),
    softmax: (args) => softmax.softmax(ctx, args),
    softmaxBackward: (args) => softmax.softmaxBackward(ctx, args),
    logSoftmax: (args) => softmax.logSoftmax(ctx, args),
    logSoftmaxBackward: (args) => softmax.logSoftmaxBackward(ctx, args),
    swiglu: (args) => activation.swiglu(ctx, args),
    swigluPacked: (args) => activation.swigluPacked(ctx, args),
    linearOfInput: (args) => matvecWithInput(ctx, args),
    swigluBackward: (args) => activation.swigluBackward(ctx, args),
    embedding: (args) => embedding.embedding(ctx, args),
    embeddingBackward: (args) => embedding.embeddingBackward(ctx, args),
    tokenLogProbs: (args) => logprobs.tokenLogProbs(ctx, args),
    tokenLogProbsBackward: (args) => logprobs.tokenLogProbsBackward(ctx, args),
    entropy: (args) => logprobs.entropy(ctx, args),
    entropyBackward: (args) => logprobs.entropyBackward(ctx, args),
    crossEntropy: (args) => logprobs.crossEntropy(ctx, args),
    crossEntropyBackward: (args) => logprobs.crossEntropyBackward(ctx, args),
    sampleRows: (args) => sampling.sampleRows(ctx, args),
    attentionForward: (args) => attention.attentionForward(ctx, args),
    attentionBackward: (args) => attention.attentionBackward(ctx, args),
    decodeAttention: (args) => attention.decodeAttention(ctx, args),
    decodeAttentionRoped: ({ positions, theta, ...args }) => {
      if (!attention.ropedDecodeFits(args.headDim)) return false;
      attention.decodeAttention(ctx, args, { positions, theta });
      return true;
    },
  };
}

/** Acquire a device and return a WebGPU backend on it. */
export async function webGpuBackend(options?: ContextOptions): Promise<WebGpuBackend> {
  return createWebGpuBackend(await GpuContext.create(options));
}
