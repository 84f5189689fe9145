import { record } from "../autograd.js";
import type { FloatDType, ReduceOp } from "../backend.js";
import { emptyTensor } from "../runtime.js";
import type { Tensor } from "../tensor.js";
import { castUnrecorded } from "./precision.js";
import { broadcastTo, reshape, setSumToShape } from "./shape.js";
import { axisOf, backendOf, floatDtypeOf, ShapeError } from "./util.js";

/** One axis of x reduced, the result stored as `outDtype` (the sums are f32 whatever x holds). */
function reduceAxis(op: ReduceOp, x: Tensor, axis: number, keepDims: boolean, outDtype: FloatDType): Tensor {
  const dtype = floatDtypeOf(op, x);
  const backend = backendOf(op, x);
  const a = axisOf(op, axis, x.rank);
  const outer = x.shape.slice(0, a).reduce((p, d) => p * d, 1);
  const size = x.shape[a]!;
  const inner = x.shape.slice(a + 1).reduce((p, d) => p * d, 1);
  const kept = x.shape.map((d, i) => (i === a ? 1 : d));
  const out = emptyTensor(backend, kept, outDtype);
  backend.reduce({ op, x: x.buffer, out: out.buffer, outer, size, inner, dtype, outDtype });
  return keepDims
    ? out
    : reshape(
        out,
        x.shape.filter((_, i) => i !== a),
      );
}

function allAxes(x: Tensor, axis: number | readonly number[] | undefined): number[] {
  if (axis === undefined) return x.shape.map((_, i) => i);
  return (typeof axis === "number" ? [axis] : [...axis]).map((a) => axisOf("reduce", a, x.rank));
}

function reduceOver(
  op: "sum" | "mean" | "max" | "min",
  x: Tensor,
  axis: number | readonly number[] | undefined,
  keepDims: boolean,
): Tensor {
  const axes = allAxes(x, axis).sort((a, b) => b - a); // from the last, so earlier indices stay valid
  // Between axes the partial results stay f32; only the last axis's are stored in x's dtype.
  let current = x;
  for (const [i, a] of axes.entries()) {
    const next = reduceAxis(op, current, a, true, i === axes.length - 1 ? floatDtypeOf(op, x) : "f32");
    if (current !== x) current.dispose();
    current = next;
  }
  if (current === x) current = reshape(x, x.shape);
  const finalShape = keepDims ? current.shape : x.shape.filter((_, i) => !axes.includes(i));
  const result = reshape(current, finalShape);
  if (result !== current) current.dispose();
  return result;
}

/** Sum over `axis` (one, several, or all when omitted). */
export function sum(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  const out = reduceOver("sum", x, axis, keepDims);
  return record("sum", out, [x], [], (g) => [broadcastTo(reshape(g, keptShape(x, axis)), x.shape)]);
}

/** Mean over `axis` (one, several, or all when omitted). */
export function mean(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  const out = reduceOver("mean", x, axis, keepDims);
  const count = allAxes(x, axis).reduce((p, a) => p * x.shape[a]!, 1);
  return record("mean", out, [x], [], (g) => {
    const spread = broadcastTo(reshape(g, keptShape(x, axis)), x.shape);
    const backend = spread.backend;
    const scaled = emptyTensor(backend, x.shape, spread.dtype);
    backend.affine({
      x: spread.buffer,
      out: scaled.buffer,
      n: spread.size,
      scale: 1 / count,
      shift: 0,
      dtype: spread.dtype === "f16" ? "f16" : "f32",
    });
    spread.dispose();
    return [scaled];
  });
}

/** Maximum over `axis` (not differentiable here: use it for statistics). */
export function max(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  return reduceOver("max", x, axis, keepDims);
}

/** Minimum over `axis` (not differentiable here). */
export function min(x: Tensor, axis?: number | readonly number[], keepDims = false): Tensor {
  return reduceOver("min", x, axis, keepDims);
}

/** Index of the largest entry along the last axis (i32). */
export function argmax(x: Tensor): Tensor {
  if (x.dtype === "f16") {
    const wide = castUnrecorded(x, "f32");
    const out = argmax(wide);
    wide.dispose();
    return out;
  }
  const backend = backendOf("argmax", x);
  if (x.rank === 0) throw new ShapeError("argmax: needs at least one dimension");
  const size = x.shape[x.rank - 1]!;
  const out = emptyTensor(backend, x.shape.slice(0, -1), "i32");
  backend.argmax({ x: x.buffer, out: out.buffer, outer: x.size / Math.max(size, 1), size });
  return out;
}

function keptShape(x: Tensor, axis: number | readonly number[] | undefined): number[] {
  const axes = allAxes(x, axis);
  return x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
}

/** Sum `g` down to `shape` over the dimensions that broadcasting expanded (the gradient of a broadcast). */
export function sumToShape(g: Tensor, shape: readonly number[]): Tensor {
  const offset = g.rank - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < g.rank; i++) {
    const j = i - offset;
    if (j < 0 || (shape[j] === 1 && g.shape[i] !== 1)) axes.push(i);
  }
  if (axes.length === 0) return reshape(g, shape);
  const reduced = reduceOver("sum", g, axes, true);
  const out = reshape(reduced, shape);
  if (out !== reduced) reduced.dispose();
  return out;
}

setSumToShape(sumToShape);
