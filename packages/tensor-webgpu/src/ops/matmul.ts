import { record } from "../autograd.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { add, scale } from "./elementwise.js";
import { promoted } from "./precision.js";
import { sumToShape } from "./reduce.js";
import { reshape } from "./shape.js";
import { backendOf, equalShapes, ShapeError } from "./util.js";

export interface MatmulOptions {
  /** Use the transpose of a's last two dimensions. */
  transA?: boolean;
  /** Use the transpose of b's last two dimensions (x · Wᵀ for a weight W [out, in]). */
  transB?: boolean;
}

/**
 * Matrix product over the last two dimensions. a: [..., m, k] (or [..., k, m] with transA); b: [k, n]
 * (shared by every batch: the weight case) or [..., k, n] with the same leading dimensions as a. Two f16
 * operands give an f16 result (products accumulated in f32); f16 with f32 is computed in f32.
 */
export function matmul(a: Tensor, b: Tensor, options: MatmulOptions = {}): Tensor {
  return product(a, b, options, {});
}

/** What the kernel's epilogue adds to alpha · op(a) · op(b): a bias row [n] and an addend of the result's shape. */
interface Epilogue {
  alpha?: number;
  bias?: Tensor;
  addend?: Tensor;
}

/** alpha · op(a) · op(b) + bias + addend, in one kernel (the epilogue's tensors have the result's dtype). */
function product(a: Tensor, b: Tensor, options: MatmulOptions, epilogue: Epilogue): Tensor {
  const { alpha = 1, bias, addend } = epilogue;
  const fused = bias !== undefined || addend !== undefined;
  const backend = backendOf(fused ? "linear" : "matmul", a, b, bias, addend);
  if (a.dtype === "i32" || b.dtype === "i32")
    throw new TypeError(`matmul: expected float tensors, got ${a.describe()} and ${b.describe()}`);
  // f16 · f16 runs the f16 kernel (f32 accumulation, f16 result); f16 with f32 promotes to f32.
  if (a.dtype !== b.dtype) return promoted(a, b, (pa, pb) => product(pa, pb, options, epilogue));
  const dtype = a.dtype;
  const { transA = false, transB = false } = options;
  if (a.rank < 2 || b.rank < 2)
    throw new ShapeError(`matmul: needs rank >= 2, got ${a.describe()} and ${b.describe()}`);
  const [ar, ac] = a.shape.slice(-2) as [number, number];
  const [br, bc] = b.shape.slice(-2) as [number, number];
  const m = transA ? ac : ar;
  const k = transA ? ar : ac;
  const kb = transB ? bc : br;
  const n = transB ? br : bc;
  if (k !== kb)
    throw new ShapeError(
      `matmul: inner dimensions differ: ${a.describe()} and ${b.describe()}${transB ? " (b transposed)" : ""}`,
    );
  const batchDims = a.shape.slice(0, -2);
  const batch = batchDims.reduce((p, d) => p * d, 1);
  const sharedB = b.rank === 2;
  if (!sharedB && (b.rank !== a.rank || b.shape.slice(0, -2).some((d, i) => d !== batchDims[i]))) {
    throw new ShapeError(`matmul: batch dimensions of ${a.describe()} and ${b.describe()} differ`);
  }
  const out = emptyTensor(backend, [...batchDims, m, n], dtype);
  // A shared B with a stored [..., m, k] is one product of batch · m rows (the same layout in memory):
  // decoding's x · Wᵀ of B sequences, one token each, reads W once for all B rows, not once per row.
  const batchAsRows = sharedB && !transA;
  backend.matmul({
    dtype,
    a: a.buffer,
    b: b.buffer,
    out: out.buffer,
    batch: batchAsRows ? 1 : batch,
    m: batchAsRows ? batch * m : m,
    n,
    k,
    transA,
    transB,
    bBatchStride: sharedB ? 0 : k * n,
    ...(alpha !== 1 ? { alpha } : {}),
    ...(bias ? { bias: bias.buffer } : {}),
    ...(addend ? { addend: addend.buffer } : {}),
  });
  return record(fused ? "linear" : "matmul", out, [a, b, bias, addend], [a, b], (g, [sa, sb]) => {
    // d(alpha · P)/dP = alpha: the product's gradients see alpha · g.
    const gp = alpha === 1 || !(a.requiresGrad || b.requiresGrad) ? g : scale(g, alpha);
    const grads = [
      a.requiresGrad ? gradA(gp, sb!, transA, transB) : null,
      b.requiresGrad ? gradB(gp, sa!, transA, transB, sharedB, b.shape) : null,
      bias?.requiresGrad ? sumToShape(g, bias.shape) : null,
      // The addend has the result's shape: its gradient is g, as an add's is.
      addend?.requiresGrad ? sumToShape(g, addend.shape) : null,
    ];
    if (gp !== g) gp.dispose();
    return grads;
  });
}

// C = op(A)·op(B). dA and dB in the stored layouts of A and B.
function gradA(g: Tensor, b: Tensor, transA: boolean, transB: boolean): Tensor {
  if (!transA) return matmul(g, b, { transB: !transB }); // dC · op(B)ᵀ
  return matmul(b, g, { transA: transB, transB: true }); // stored [k, m]: op(B) · dCᵀ
}

function gradB(
  g: Tensor,
  a: Tensor,
  transA: boolean,
  transB: boolean,
  sharedB: boolean,
  bShape: readonly number[],
): Tensor {
  if (sharedB) {
    // Fold the batch into the rows: dB sums over every batch.
    const rows = g.size / g.shape[g.rank - 1]!;
    const g2 = reshape(g, [rows, g.shape[g.rank - 1]!]);
    const a2 = transA ? undefined : reshape(a, [rows, a.shape[a.rank - 1]!]);
    if (a2) {
      const result = transB ? matmul(g2, a2, { transA: true }) : matmul(a2, g2, { transA: true });
      return reshape(result, bShape);
    }
    const perBatch = transB
      ? matmul(g, a, { transA: true, transB: true })
      : matmul(a, g, { transA: false, transB: false });
    return sumToShape(perBatch, bShape);
  }
  // stored [k, n]: op(A)ᵀ · dC ; stored [n, k]: dCᵀ · op(A)
  return transB
    ? matmul(g, a, { transA: true, transB: transA })
    : matmul(a, g, { transA: !transA, transB: false });
}

/**
 * x · Wᵀ + bias, for a weight W [out, in] (PyTorch's and Hugging Face's layout). A bias [out] of the
 * result's dtype is added in the matmul's epilogue (one dispatch, one pass over the output); any other
 * bias is broadcast-added after.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  if (bias && inEpilogue(x, weight, bias)) return product(x, weight, { transB: true }, { bias });
  const y = matmul(x, weight, { transB: true });
  if (!bias) return y;
  const out = add(y, bias);
  y.dispose();
  return out;
}

/**
 * addend + alpha · x · Wᵀ (+ bias) in one kernel: a residual connection around a linear layer, or a LoRA
 * update added onto its base output. The addend has the result's shape ([..., out]); bias and addend
 * of another dtype than the result, or an addend of another shape, fall back to separate ops.
 */
export function addLinear(addend: Tensor, x: Tensor, weight: Tensor, bias?: Tensor, alpha = 1): Tensor {
  const outShape = [...x.shape.slice(0, -1), weight.shape[0]!];
  const fits = inEpilogue(x, weight, bias) && addend.dtype === x.dtype && equalShapes(addend.shape, outShape);
  if (fits) return product(x, weight, { transB: true }, { alpha, bias, addend });
  const y = linear(x, weight, bias);
  const scaled = alpha === 1 ? y : scale(y, alpha);
  if (scaled !== y) y.dispose();
  const out = add(addend, scaled);
  scaled.dispose();
  return out;
}

/** Whether x · Wᵀ (+ bias) can run as one kernel: W [out, in], a bias [out], all of x's dtype. */
function inEpilogue(x: Tensor, weight: Tensor, bias: Tensor | undefined): boolean {
  return (
    weight.rank === 2 &&
    weight.dtype === x.dtype &&
    (bias === undefined || (bias.rank === 1 && bias.shape[0] === weight.shape[0] && bias.dtype === x.dtype))
  );
}
