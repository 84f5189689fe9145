import { record, setAutogradHelpers } from "../autograd.js";
import type { BinaryOp, FloatDType, UnaryOp } from "../backend.js";
import { emptyTensor, full, onesLike } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { castUnrecorded, inF32, isHalf, promoted } from "./precision.js";
import { sumToShape } from "./reduce.js";
import { backendOf, broadcastShapes, broadcastStrides, sameShape } from "./util.js";

/** The float dtype of an element-wise op's operands (both f32, or both f16: the kernels run natively on f16). */
function floatDType(op: string, ...tensors: Tensor[]): FloatDType {
  const dtype = tensors[0]!.dtype;
  for (const t of tensors) {
    if (t.dtype === "i32" || t.dtype !== dtype)
      throw new TypeError(
        `${op}: expected f32 or f16 operands of one dtype, got ${tensors.map((x) => x.describe()).join(" and ")}`,
      );
  }
  return dtype as FloatDType;
}

function binaryRaw(op: BinaryOp, a: Tensor, b: Tensor): Tensor {
  const backend = backendOf(op, a, b);
  const dtype = floatDType(op, a, b);
  const shape = broadcastShapes(op, a.shape, b.shape);
  const out = emptyTensor(backend, shape, dtype);
  backend.binary({
    dtype,
    op,
    a: a.buffer,
    b: b.buffer,
    out: out.buffer,
    shape,
    aStrides: broadcastStrides(a.shape, shape),
    bStrides: broadcastStrides(b.shape, shape),
  });
  return out;
}

function unaryRaw(op: UnaryOp, x: Tensor): Tensor {
  const backend = backendOf(op, x);
  const dtype = floatDType(op, x);
  const out = emptyTensor(backend, x.shape, dtype);
  backend.unary({ op, x: x.buffer, out: out.buffer, n: x.size, dtype });
  return out;
}

type Operand = Tensor | number;

/** Run `fn` with `value` as a tensor; a scalar made here is disposed after (the graph keeps its own alias). */
function withOperand(value: Operand, like: Tensor, fn: (t: Tensor) => Tensor): Tensor {
  if (typeof value !== "number") return fn(value);
  const t = full([], value, { backend: like.backend, dtype: like.dtype === "f16" ? "f16" : "f32" });
  try {
    return fn(t);
  } finally {
    t.dispose();
  }
}

/** a + b (broadcasting). */
export function add(a: Tensor, b: Operand): Tensor {
  if (typeof b === "number") return affine(a, 1, b);
  if (a.dtype !== b.dtype) return promoted(a, b, add);
  const out = binaryRaw("add", a, b);
  return record("add", out, [a, b], [], (g) => [sumToShape(g, a.shape), sumToShape(g, b.shape)]);
}

/** a - b (broadcasting). */
export function sub(a: Tensor, b: Operand): Tensor {
  if (typeof b === "number") return affine(a, 1, -b);
  if (a.dtype !== b.dtype) return promoted(a, b, sub);
  const out = binaryRaw("sub", a, b);
  return record("sub", out, [a, b], [], (g) => [sumToShape(g, a.shape), sumToShape(scale(g, -1), b.shape)]);
}

/** a * b (broadcasting). */
export function mul(a: Tensor, b: Operand): Tensor {
  if (typeof b === "number") return scale(a, b);
  if (a.dtype !== b.dtype) return promoted(a, b, mul);
  const out = binaryRaw("mul", a, b);
  return record("mul", out, [a, b], [a, b], (g, [sa, sb]) => [
    a.requiresGrad ? sumToShape(binaryRaw("mul", g, sb!), a.shape) : null,
    b.requiresGrad ? sumToShape(binaryRaw("mul", g, sa!), b.shape) : null,
  ]);
}

/** a / b (broadcasting). */
export function div(a: Tensor, b: Operand): Tensor {
  if (typeof b === "number") return scale(a, 1 / b);
  if (a.dtype !== b.dtype) return promoted(a, b, div);
  const out = binaryRaw("div", a, b);
  return record("div", out, [a, b], [b, out], (g, [sb, so]) => [
    a.requiresGrad ? sumToShape(binaryRaw("div", g, sb!), a.shape) : null,
    // d(a/b)/db = -(a/b)/b
    b.requiresGrad ? sumToShape(neg(binaryRaw("div", binaryRaw("mul", g, so!), sb!)), b.shape) : null,
  ]);
}

/** Element-wise maximum (the gradient goes to the larger; to a on ties). */
export function maximum(a: Tensor, b: Operand): Tensor {
  if (typeof b !== "number" && a.dtype !== b.dtype) return promoted(a, b, maximum);
  return withOperand(b, a, (bt) => maximumOf(a, bt));
}

function maximumOf(a: Tensor, bt: Tensor): Tensor {
  const out = binaryRaw("max", a, bt);
  return record("maximum", out, [a, bt], [a, bt], (g, [sa, sb]) => {
    const aWins = binaryRaw("ge", sa!, sb!);
    return [
      sumToShape(binaryRaw("mul", g, aWins), a.shape),
      sumToShape(binaryRaw("mul", g, affine(aWins, -1, 1)), bt.shape),
    ];
  });
}

/** Element-wise minimum (the gradient goes to the smaller; to a on ties). */
export function minimum(a: Tensor, b: Operand): Tensor {
  if (typeof b !== "number" && a.dtype !== b.dtype) return promoted(a, b, minimum);
  return withOperand(b, a, (bt) => minimumOf(a, bt));
}

function minimumOf(a: Tensor, bt: Tensor): Tensor {
  const out = binaryRaw("min", a, bt);
  return record("minimum", out, [a, bt], [a, bt], (g, [sa, sb]) => {
    const aWins = binaryRaw("le", sa!, sb!);
    return [
      sumToShape(binaryRaw("mul", g, aWins), a.shape),
      sumToShape(binaryRaw("mul", g, affine(aWins, -1, 1)), bt.shape),
    ];
  });
}

/** A comparison of a and b (promoted to one dtype): 1 where true, 0 where false, in that dtype. */
function compare(op: BinaryOp, a: Tensor, b: Operand): Tensor {
  if (typeof b !== "number" && a.dtype !== b.dtype) return promoted(a, b, (pa, pb) => compare(op, pa, pb));
  return withOperand(b, a, (bt) => binaryRaw(op, a, bt));
}

/** Comparisons: 1 where true, 0 where false (not differentiable). */
export const greater = (a: Tensor, b: Operand): Tensor => compare("gt", a, b);
export const greaterEqual = (a: Tensor, b: Operand): Tensor => compare("ge", a, b);
export const less = (a: Tensor, b: Operand): Tensor => compare("lt", a, b);
export const lessEqual = (a: Tensor, b: Operand): Tensor => compare("le", a, b);
export const equal = (a: Tensor, b: Operand): Tensor => compare("eq", a, b);

/** x * scale + shift. */
export function affine(x: Tensor, scaleBy: number, shift: number): Tensor {
  const backend = backendOf("affine", x);
  const dtype = floatDType("affine", x);
  const out = emptyTensor(backend, x.shape, dtype);
  backend.affine({ x: x.buffer, out: out.buffer, n: x.size, scale: scaleBy, shift, dtype });
  return record("affine", out, [x], [], (g) => [scaleBy === 1 ? g : affine(g, scaleBy, 0)]);
}

export const scale = (x: Tensor, by: number): Tensor => affine(x, by, 0);
export const neg = (x: Tensor): Tensor => affine(x, -1, 0);

/** Clamp into [min, max] (gradient 0 outside; f16 runs in f32). */
export function clamp(x: Tensor, lo: number, hi: number): Tensor {
  if (x.dtype === "f16") return inF32([x], ([wide]) => clamp(wide, lo, hi));
  const backend = backendOf("clamp", x);
  const out = emptyTensor(backend, x.shape, "f32");
  backend.clamp({ x: x.buffer, out: out.buffer, n: x.size, min: lo, max: hi });
  return record("clamp", out, [x], [x], (g, [sx]) => {
    const inside = binaryRaw(
      "mul",
      binaryRaw("ge", sx!, full([], lo, { backend })),
      binaryRaw("le", sx!, full([], hi, { backend })),
    );
    return [binaryRaw("mul", g, inside)];
  });
}

/** cond != 0 ? a : b (all the same shape; the gradient flows to the chosen side; f16 runs in f32). */
export function where(cond: Tensor, a: Tensor, b: Tensor): Tensor {
  if ([cond, a, b].some(isHalf)) return inF32([cond, a, b], ([c, wa, wb]) => where(c, wa, wb));
  const backend = backendOf("where", cond, a, b);
  sameShape("where", cond, a);
  sameShape("where", a, b);
  const out = emptyTensor(backend, a.shape, "f32");
  backend.where({ cond: cond.buffer, a: a.buffer, b: b.buffer, out: out.buffer, n: a.size });
  return record("where", out, [cond, a, b], [cond], (g, [c]) => {
    const zero = full(g.shape, 0, { backend });
    const ga = emptyTensor(backend, g.shape, "f32");
    const gb = emptyTensor(backend, g.shape, "f32");
    backend.where({ cond: c!.buffer, a: g.buffer, b: zero.buffer, out: ga.buffer, n: g.size });
    backend.where({ cond: c!.buffer, a: zero.buffer, b: g.buffer, out: gb.buffer, n: g.size });
    return [null, ga, gb];
  });
}

/** exp(x). */
export function exp(x: Tensor): Tensor {
  const out = unaryRaw("exp", x);
  return record("exp", out, [x], [out], (g, [y]) => [binaryRaw("mul", g, y!)]);
}

/** Natural log. */
export function log(x: Tensor): Tensor {
  const out = unaryRaw("log", x);
  return record("log", out, [x], [x], (g, [sx]) => [binaryRaw("div", g, sx!)]);
}

/** Square root. */
export function sqrt(x: Tensor): Tensor {
  const out = unaryRaw("sqrt", x);
  return record("sqrt", out, [x], [out], (g, [y]) => [binaryRaw("div", scale(g, 0.5), y!)]);
}

/** x². */
export function square(x: Tensor): Tensor {
  const out = unaryRaw("square", x);
  return record("square", out, [x], [x], (g, [sx]) => [binaryRaw("mul", g, scale(sx!, 2))]);
}

/** |x| (gradient sign(x)). */
export function abs(x: Tensor): Tensor {
  const out = unaryRaw("abs", x);
  return record("abs", out, [x], [x], (g, [sx]) => [binaryRaw("mul", g, unaryRaw("sign", sx!))]);
}

/** tanh(x). */
export function tanh(x: Tensor): Tensor {
  const out = unaryRaw("tanh", x);
  return record("tanh", out, [x], [out], (g, [y]) => [
    binaryRaw("mul", g, affine(unaryRaw("square", y!), -1, 1)),
  ]);
}

/** The logistic sigmoid. */
export function sigmoid(x: Tensor): Tensor {
  const out = unaryRaw("sigmoid", x);
  return record("sigmoid", out, [x], [out], (g, [y]) => [
    binaryRaw("mul", g, binaryRaw("mul", y!, affine(y!, -1, 1))),
  ]);
}

/** max(x, 0). */
export function relu(x: Tensor): Tensor {
  const out = unaryRaw("relu", x);
  return record("relu", out, [x], [x], (g, [sx]) => [
    binaryRaw("mul", g, binaryRaw("gt", sx!, full([], 0, { backend: x.backend, dtype: sx!.dtype }))),
  ]);
}

setAutogradHelpers(
  (a, b) => binaryRaw("add", a, b),
  (t) => onesLike(t),
  (t, dtype) => castUnrecorded(t, dtype),
);

/** x · sigmoid(x) (SiLU / swish). */
export function silu(x: Tensor): Tensor {
  const out = unaryRaw("silu", x);
  return record("silu", out, [x], [x], (g, [sx]) => {
    // d/dx x·σ(x) = σ(x) · (1 + x · (1 − σ(x)))
    const s = unaryRaw("sigmoid", sx!);
    const slope = binaryRaw("mul", s, affine(binaryRaw("mul", sx!, affine(s, -1, 1)), 1, 1));
    return [binaryRaw("mul", g, slope)];
  });
}
