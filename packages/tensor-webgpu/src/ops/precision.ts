/**
 * Mixed precision at op boundaries. Ops without an f16 kernel of their own (softmax, decoding attention,
 * clamp, where) and ops given a mix of f16 and f32 run on f32 copies of their f16 inputs: `inF32` casts them with recorded
 * casts (so gradients flow back through a cast to f16) and casts the result back to f16. Ops that mix an
 * f16 and an f32 operand promote the f16 one to f32, as PyTorch does.
 */
import { emptyTensor } from "../runtime.js";
import { scope, type Tensor } from "../tensor.js";
import { cast } from "./shape.js";

/** A cast between f16 and f32 that autograd does not record (optimizer state, f32-only kernels' inputs). */
export function castUnrecorded(x: Tensor, dtype: "f32" | "f16"): Tensor {
  const out = emptyTensor(x.backend, x.shape, dtype);
  x.backend.cast({ x: x.buffer, out: out.buffer, n: x.size, from: x.dtype, to: dtype });
  return out;
}

export const isHalf = (t: Tensor | undefined): boolean => t?.dtype === "f16";

/**
 * `fn` on `inputs` with every f16 one cast to f32; the result goes back to f16 when any input was f16 and
 * `result` is "input" (activations), and stays f32 when it is "f32" (losses, statistics).
 */
export function inF32<const T extends readonly (Tensor | undefined)[]>(
  inputs: T,
  fn: (wide: T) => Tensor,
  result: "input" | "f32" = "input",
): Tensor {
  if (!inputs.some(isHalf)) return fn(inputs);
  // The scope frees the f32 copies and the f32 result: the graph keeps what backward needs.
  return scope(() => {
    const wide = inputs.map((t) => (t && isHalf(t) ? cast(t, "f32") : t)) as unknown as T;
    const out = fn(wide);
    return result === "input" ? cast(out, "f16") : out;
  });
}

/** a and b in one float dtype: f16 when both are, else f32 (an f16 one cast, differentiably). */
function promote(a: Tensor, b: Tensor): [Tensor, Tensor, Tensor[]] {
  if (a.dtype === b.dtype || a.dtype === "i32" || b.dtype === "i32") return [a, b, []];
  const made: Tensor[] = [];
  const widen = (t: Tensor) => {
    if (t.dtype !== "f16") return t;
    const wide = cast(t, "f32");
    made.push(wide);
    return wide;
  };
  return [widen(a), widen(b), made];
}

/** `fn` on a and b promoted to one dtype; the promoted copies are freed after (the graph keeps aliases). */
export function promoted(a: Tensor, b: Tensor, fn: (a: Tensor, b: Tensor) => Tensor): Tensor {
  const [pa, pb, made] = promote(a, b);
  try {
    return fn(pa, pb);
  } finally {
    for (const t of made) t.dispose();
  }
}
