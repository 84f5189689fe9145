/**
 * A linear layer with the op before it folded in: rmsNorm then linear, and swiglu then linear (plus a
 * residual). Decoding a token runs each pair on a few rows, where a GPU step costs what its dispatches
 * cost: a backend that can (Backend.linearOfInput) runs the pair as one kernel, and otherwise, or while
 * gradients are recorded, the ops run one after the other as they would be written.
 */
import { isGradEnabled } from "../autograd.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { addLinear, linear } from "./matmul.js";
import { rmsNorm, swigluPacked } from "./nn.js";
import { backendOf, equalShapes, ShapeError, sharedFloatDtype } from "./util.js";

type LinearInput = { kind: "rmsNorm"; weight: Tensor; eps: number } | { kind: "swiglu" };

/** x [..., k] · Wᵀ in one kernel if the backend has one for it; undefined when it does not. */
function fused(
  x: Tensor,
  k: number,
  weight: Tensor,
  input: LinearInput,
  bias: Tensor | undefined,
  addend: Tensor | undefined,
): Tensor | undefined {
  const backend = backendOf("linearOfInput", x, weight);
  const inputs = [x, weight, bias, addend, input.kind === "rmsNorm" ? input.weight : undefined];
  const present = inputs.filter((t): t is Tensor => t !== undefined);
  const dtype = sharedFloatDtype(present);
  if (!backend.linearOfInput || !dtype) return undefined;
  if (isGradEnabled() && present.some((t) => t.requiresGrad)) return undefined;
  const n = weight.shape[0]!;
  const shape = [...x.shape.slice(0, -1), n];
  if (bias && !(bias.rank === 1 && bias.shape[0] === n)) return undefined;
  if (addend && !equalShapes(addend.shape, shape)) return undefined;
  const out = emptyTensor(backend, shape, dtype);
  const done = backend.linearOfInput({
    x: x.buffer,
    weight: weight.buffer,
    out: out.buffer,
    rows: x.size / x.shape[x.rank - 1]!,
    n,
    k,
    // Present, undefined when absent: a conditional spread gives each combination its own object shape,
    // and a spread on this path measured slower than the rest of the call (matmul-fused-input.ts).
    bias: bias?.buffer,
    addend: addend?.buffer,
    input:
      input.kind === "rmsNorm" ? { kind: "rmsNorm", weight: input.weight.buffer, eps: input.eps } : input,
    dtype,
  });
  if (done) return out;
  out.dispose();
  return undefined;
}

function checkWeight(op: string, weight: Tensor, k: number): void {
  if (weight.rank !== 2 || weight.shape[1] !== k)
    throw new ShapeError(`${op}: weight must be [out, ${k}], got ${weight.describe()}`);
}

/** linear(rmsNorm(x, normWeight, eps), weight, bias): x [..., k], normWeight [k], weight [out, k]. */
export function normLinear(
  x: Tensor,
  normWeight: Tensor,
  eps: number,
  weight: Tensor,
  bias?: Tensor,
): Tensor {
  const k = x.shape[x.rank - 1]!;
  checkWeight("normLinear", weight, k);
  if (normWeight.rank !== 1 || normWeight.shape[0] !== k)
    throw new ShapeError(`normLinear: normWeight must be [${k}], got ${normWeight.describe()}`);
  const one = fused(x, k, weight, { kind: "rmsNorm", weight: normWeight, eps }, bias, undefined);
  if (one) return one;
  const normed = rmsNorm(x, normWeight, eps);
  try {
    return linear(normed, weight, bias);
  } finally {
    normed.dispose();
  }
}

/**
 * (residual +) swigluPacked(gateUp) · Wᵀ: gateUp [..., 2k] (each row's gate, then its up), weight
 * [out, k], residual [..., out].
 */
export function swigluLinear(gateUp: Tensor, weight: Tensor, residual?: Tensor): Tensor {
  const packed = gateUp.shape[gateUp.rank - 1]!;
  if (packed % 2 !== 0)
    throw new ShapeError(`swigluLinear: expected gateUp [..., 2 x width], got ${gateUp.describe()}`);
  const k = packed / 2;
  checkWeight("swigluLinear", weight, k);
  const one = fused(gateUp, k, weight, { kind: "swiglu" }, undefined, residual);
  if (one) return one;
  const gated = swigluPacked(gateUp);
  try {
    return residual ? addLinear(residual, gated, weight) : linear(gated, weight);
  } finally {
    gated.dispose();
  }
}
