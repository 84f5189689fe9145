/**
 * Reference layout ops on typed arrays: the ground truth for ../kernels/layout.ts (f16 rounding and
 * conversions come from ../core/half-float.ts).
 */
import type { DType } from "../core/dtype.js";
import { float16BitsToFloat32, float32ToFloat16Bits, roundToHalf } from "../core/half-float.js";

type Words = Float32Array | Int32Array;

export function fillRef(args: { out: Words; n: number; value: number; dtype?: DType }): Words {
  args.out.fill(args.value, 0, args.n);
  return args.out;
}

function contiguous(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= shape[d]!;
  }
  return strides;
}

/** out[outOffset + Σ idx·outStrides] = x[xOffset + Σ idx·xStrides] for every index idx of `shape`. */
export function stridedCopyRef(args: {
  x: Words;
  out: Words;
  shape: readonly number[];
  xStrides: readonly number[];
  xOffset?: number;
  outStrides?: readonly number[];
  outOffset?: number;
  dtype?: DType;
}): Words {
  const { shape, xStrides } = args;
  const outStrides = args.outStrides ?? contiguous(shape);
  const n = shape.reduce((p, s) => p * s, 1);
  const index = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < n; i++) {
    let source = args.xOffset ?? 0;
    let dest = args.outOffset ?? 0;
    for (let d = 0; d < shape.length; d++) {
      source += index[d]! * xStrides[d]!;
      dest += index[d]! * outStrides[d]!;
    }
    args.out[dest] = args.x[source]!;
    for (let d = shape.length - 1; d >= 0; d--) {
      index[d]!++;
      if (index[d]! < shape[d]!) break;
      index[d] = 0;
    }
  }
  return args.out;
}

/** out = x with its dimensions reordered: out's dimension d is x's dimension perm[d]. */
export function permuteRef(args: {
  x: Words;
  out: Words;
  shape: readonly number[];
  perm: readonly number[];
  dtype?: DType;
}): Words {
  const strides = contiguous(args.shape);
  return stridedCopyRef({
    x: args.x,
    out: args.out,
    shape: args.perm.map((p) => args.shape[p]!),
    xStrides: args.perm.map((p) => strides[p]!),
  });
}

/**
 * f32 -> i32 truncates toward zero, saturating at the i32 range, NaN -> 0; i32 -> f32 rounds to nearest;
 * -> f16 rounds to the nearest half (f16 held as f32 words, as the CPU backend emulates it).
 */
export function castRef(args: { x: Words; out: Words; n: number; from: DType; to: DType }): Words {
  if ((args.from === "f16" && args.to === "i32") || (args.from === "i32" && args.to === "f16"))
    throw new RangeError(`cast: ${args.from} -> ${args.to} must go through f32`);
  for (let i = 0; i < args.n; i++) {
    const v = args.x[i]!;
    args.out[i] =
      args.to === "i32" && args.from === "f32"
        ? Number.isNaN(v)
          ? 0
          : Math.min(2 ** 31 - 1, Math.max(-(2 ** 31), Math.trunc(v)))
        : args.to === "f16"
          ? roundToHalf(v)
          : v;
  }
  return args.out;
}

/** The binary16 bit pattern of `value` as f32 storage holds it (ties to even), through the one converter (core/half-float.ts). */
export function toHalfBits(value: number): number {
  return float32ToFloat16Bits(value);
}

/** The value of a binary16 bit pattern. */
export function fromHalfBits(bits: number): number {
  return float16BitsToFloat32(bits);
}

/** Word i holds element 2i in its low half and element 2i+1 (or 0) in its high half. */
export function packF16Ref(args: { x: Float32Array; out: Uint32Array; n: number }): Uint32Array {
  for (let w = 0; w < Math.ceil(args.n / 2); w++) {
    const lo = toHalfBits(args.x[2 * w]!);
    const hi = 2 * w + 1 < args.n ? toHalfBits(args.x[2 * w + 1]!) : 0;
    args.out[w] = (lo | (hi << 16)) >>> 0;
  }
  return args.out;
}

export function unpackF16Ref(args: { x: Uint32Array; out: Float32Array; n: number }): Float32Array {
  for (let i = 0; i < args.n; i++) {
    const word = args.x[i >> 1]!;
    args.out[i] = fromHalfBits(i % 2 === 0 ? word & 0xffff : word >>> 16);
  }
  return args.out;
}
