/**
 * Reference element-wise ops on typed arrays: the ground truth for the WGSL kernels in
 * ../kernels/elementwise.ts, computed in double precision and rounded to f32 on store.
 */
import type { BinaryOp, UnaryOp } from "../core/ops.js";

const BINARY: Record<BinaryOp, (a: number, b: number) => number> = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  max: (a, b) => Math.max(a, b),
  min: (a, b) => Math.min(a, b),
  pow: (a, b) => a ** b,
  gt: (a, b) => (a > b ? 1 : 0),
  ge: (a, b) => (a >= b ? 1 : 0),
  lt: (a, b) => (a < b ? 1 : 0),
  le: (a, b) => (a <= b ? 1 : 0),
  eq: (a, b) => (a === b ? 1 : 0),
};

/** out[i] = a[i·aStrides] op b[i·bStrides] over the row-major indices i of `shape`. */
export function binaryRef(args: {
  op: BinaryOp;
  a: Float32Array;
  b: Float32Array;
  out: Float32Array;
  shape: readonly number[];
  aStrides: readonly number[];
  bStrides: readonly number[];
}): Float32Array {
  const { shape, aStrides, bStrides, out } = args;
  const apply = BINARY[args.op];
  const n = shape.reduce((p, s) => p * s, 1);
  const index = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < n; i++) {
    let ia = 0;
    let ib = 0;
    for (let d = 0; d < shape.length; d++) {
      ia += index[d]! * aStrides[d]!;
      ib += index[d]! * bStrides[d]!;
    }
    out[i] = apply(args.a[ia]!, args.b[ib]!);
    // Advance the row-major multi-index.
    for (let d = shape.length - 1; d >= 0; d--) {
      index[d]!++;
      if (index[d]! < shape[d]!) break;
      index[d] = 0;
    }
  }
  return out;
}

const UNARY: Record<UnaryOp, (x: number) => number> = {
  neg: (x) => -x,
  exp: Math.exp,
  log: Math.log,
  sqrt: Math.sqrt,
  rsqrt: (x) => 1 / Math.sqrt(x),
  abs: Math.abs,
  tanh: Math.tanh,
  sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  silu: (x) => x / (1 + Math.exp(-x)),
  relu: (x) => Math.max(x, 0),
  square: (x) => x * x,
  reciprocal: (x) => 1 / x,
  sin: Math.sin,
  cos: Math.cos,
  sign: Math.sign,
};

export function unaryRef(args: { op: UnaryOp; x: Float32Array; out: Float32Array; n: number }): Float32Array {
  const apply = UNARY[args.op];
  for (let i = 0; i < args.n; i++) args.out[i] = apply(args.x[i]!);
  return args.out;
}

export function affineRef(args: {
  x: Float32Array;
  out: Float32Array;
  n: number;
  scale: number;
  shift: number;
}): Float32Array {
  const scale = Math.fround(args.scale);
  const shift = Math.fround(args.shift);
  for (let i = 0; i < args.n; i++) args.out[i] = args.x[i]! * scale + shift;
  return args.out;
}

export function clampRef(args: {
  x: Float32Array;
  out: Float32Array;
  n: number;
  min: number;
  max: number;
}): Float32Array {
  for (let i = 0; i < args.n; i++) args.out[i] = Math.min(Math.max(args.x[i]!, args.min), args.max);
  return args.out;
}

export function whereRef(args: {
  cond: Float32Array;
  a: Float32Array;
  b: Float32Array;
  out: Float32Array;
  n: number;
}): Float32Array {
  for (let i = 0; i < args.n; i++) args.out[i] = args.cond[i] !== 0 ? args.a[i]! : args.b[i]!;
  return args.out;
}
