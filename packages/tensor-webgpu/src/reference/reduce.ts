/**
 * Reference reductions on typed arrays: the ground truth for ../kernels/reduce.ts. Sums accumulate in
 * double precision, so the reference is at least as accurate as any f32 order.
 */
import type { ReduceOp } from "../core/ops.js";

/** out[o, j] = op over k of x[o, k, j] for x contiguous [outer, size, inner]. */
export function reduceRef(args: {
  op: ReduceOp;
  x: Float32Array;
  out: Float32Array;
  outer: number;
  size: number;
  inner: number;
}): Float32Array {
  const { op, x, outer, size, inner } = args;
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < inner; j++) {
      let acc = op === "max" ? -Infinity : op === "min" ? Infinity : 0;
      for (let k = 0; k < size; k++) {
        const v = x[(o * size + k) * inner + j]!;
        if (op === "max") acc = Math.max(acc, v);
        else if (op === "min") acc = Math.min(acc, v);
        else acc += v;
      }
      args.out[o * inner + j] = op === "mean" ? acc / size : acc;
    }
  }
  return args.out;
}

/** out[o] = index of the first largest x[o, k] (NaN counts as largest). */
export function argmaxRef(args: {
  x: Float32Array;
  out: Int32Array;
  outer: number;
  size: number;
}): Int32Array {
  const { x, outer, size } = args;
  for (let o = 0; o < outer; o++) {
    let best = 0;
    for (let k = 1; k < size; k++) {
      const v = x[o * size + k]!;
      const b = x[o * size + best]!;
      if (Number.isNaN(b)) break;
      if (Number.isNaN(v) || v > b) best = k;
    }
    args.out[o] = best;
  }
  return args.out;
}
