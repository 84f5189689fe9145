import { describe, expect, it } from "vitest";
import {
  bfloat16ArrayToFloat32,
  bfloat16BitsToFloat32,
  bitsToFloat32,
  float16ArrayToFloat32,
  float16BitsToFloat32,
  float16BitsToFloat32Bits,
  float32ArrayToBfloat16,
  float32ArrayToFloat16,
  float32BitsToFloat16Bits,
  float32ToBfloat16Bits,
  float32ToBits,
  float32ToFloat16Bits,
} from "../src/core/half-float.js";

/** binary16 value from its fields, written straight from the IEEE 754 definition. */
function halfFromDefinition(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Every finite non-negative binary16 value in increasing order, with its bit pattern. */
const FINITE_HALVES = Array.from({ length: 0x7c00 }, (_, bits) => bits);

/** Nearest binary16 (ties to even mantissa) by search over all values: an oracle independent of bit tricks. */
function nearestHalf(value: number): number {
  if (Number.isNaN(value)) return 0x7e00;
  const sign = value < 0 || Object.is(value, -0) ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  const max = halfFromDefinition(0x7bff);
  // Values at or above max + half an ulp (2^15 * 2^-10 / 2 = 16) round to infinity.
  if (magnitude >= max + 16) return sign | 0x7c00;
  let low = 0;
  let high = FINITE_HALVES.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (halfFromDefinition(mid) <= magnitude) low = mid;
    else high = mid - 1;
  }
  if (low === 0x7bff) return sign | low;
  const below = halfFromDefinition(low);
  const above = halfFromDefinition(low + 1);
  const pick =
    magnitude - below < above - magnitude
      ? low
      : magnitude - below > above - magnitude
        ? low + 1
        : low % 2 === 0
          ? low
          : low + 1;
  return sign | pick;
}

/** Nearest bfloat16 by comparing the two candidates around the value, ties to even. */
function nearestBfloat16(bits: number): number {
  const value = bitsToFloat32(bits);
  if (Number.isNaN(value)) return 0x7fc0;
  const truncated = bits >>> 16;
  if (!Number.isFinite(value)) return truncated;
  const below = bfloat16BitsToFloat32(truncated);
  // Past the largest finite value the next step up is 2^128, which rounds to infinity.
  const next = truncated + 1;
  const above = (next & 0x7fff) === 0x7f80 ? Math.sign(value) * 2 ** 128 : bfloat16BitsToFloat32(next);
  const distanceBelow = Math.abs(value - below);
  const distanceAbove = Math.abs(above - value);
  if (distanceBelow < distanceAbove) return truncated;
  if (distanceBelow > distanceAbove) return next;
  return truncated % 2 === 0 ? truncated : next;
}

/** Deterministic pseudo-random 32-bit patterns (xorshift). */
function* randomBits(count: number, seed = 0x9e3779b9): Generator<number> {
  let state = seed >>> 0;
  for (let i = 0; i < count; i++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    yield state;
  }
}

describe("float16", () => {
  it("widens all 65536 patterns exactly (subnormals, infinities, NaN included)", () => {
    const wrong: string[] = [];
    for (let bits = 0; bits < 65536; bits++) {
      const expected = halfFromDefinition(bits);
      const actual = float16BitsToFloat32(bits);
      const same = Number.isNaN(expected) ? Number.isNaN(actual) : Object.is(actual, expected);
      if (!same) wrong.push(`0x${bits.toString(16)}: ${actual} vs ${expected}`);
    }
    expect(wrong).toEqual([]);
  });

  it("narrows back every pattern to itself, NaN payloads included", () => {
    // On bit patterns: a float32 NaN passing through a JavaScript number may lose its payload.
    const wrong: number[] = [];
    for (let bits = 0; bits < 65536; bits++) {
      if (float32BitsToFloat16Bits(float16BitsToFloat32Bits(bits)) !== bits) wrong.push(bits);
    }
    expect(wrong).toEqual([]);
    const halves = new Uint16Array(65536).map((_, i) => i);
    expect(float32ArrayToFloat16(float16ArrayToFloat32(halves))).toEqual(halves);
  });

  it("matches known vectors", () => {
    const vectors: [number, number][] = [
      [1, 0x3c00],
      [-2, 0xc000],
      [65504, 0x7bff], // largest finite
      [65519.99, 0x7bff], // just below the rounding point
      [65520, 0x7c00], // tie between max and 2^16: even mantissa is infinity
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // exactly half the smallest subnormal: ties to even, zero
      [2.9802326e-8, 0x0001], // just above half: rounds up
      [1.00048828125, 0x3c00], // 1 + ulp/2: tie, stays even
      [1.00146484375, 0x3c02], // 1 + 3 ulp/2: tie, rounds up to even
      [0.1, 0x2e66],
      [1e-10, 0x0000],
      [-0, 0x8000],
      [Number.POSITIVE_INFINITY, 0x7c00],
      [Number.NEGATIVE_INFINITY, 0xfc00],
      [Number.NaN, 0x7e00],
    ];
    for (const [value, bits] of vectors) expect(float32ToFloat16Bits(value), String(value)).toBe(bits);
  });

  it("rounds to nearest even like an exhaustive search, on 100k random float32 values", () => {
    const wrong: string[] = [];
    const check = (value: number) => {
      const got = float32ToFloat16Bits(value);
      const ok = Number.isNaN(value)
        ? (got & 0x7c00) === 0x7c00 && (got & 0x3ff) !== 0
        : got === nearestHalf(value);
      if (!ok) wrong.push(`${value} (0x${float32ToBits(value).toString(16)}) -> 0x${got.toString(16)}`);
    };
    for (const bits of randomBits(100_000)) check(bitsToFloat32(bits));
    // Focus on the subnormal/normal boundary and the overflow region, where bugs hide.
    for (const bits of randomBits(20_000, 7)) {
      check(bitsToFloat32(0x33000000 + (bits % 0x05000000))); // ~3e-8 .. ~1.2e-4
      check(bitsToFloat32(0x477f0000 + (bits % 0x00200000))); // around 65504
    }
    expect(wrong).toEqual([]);
  });

  it("converts arrays both ways", () => {
    const values = new Float32Array([1, -2, 0.5, 65504, 1e-7, Number.POSITIVE_INFINITY]);
    const halves = float32ArrayToFloat16(values);
    expect([...halves]).toEqual([...values].map((v) => float32ToFloat16Bits(v)));
    const back = float16ArrayToFloat32(halves);
    expect([...back]).toEqual([...halves].map((h) => float16BitsToFloat32(h)));
    const out = new Float32Array(6);
    expect(float16ArrayToFloat32(halves, out)).toBe(out);
    expect(() => float16ArrayToFloat32(halves, new Float32Array(2))).toThrow(/6/);
  });
});

describe("bfloat16", () => {
  it("widens every pattern by a 16-bit shift", () => {
    // Checked on bit patterns: NaN payloads may change when a float32 NaN becomes a JavaScript number.
    const all = new Uint16Array(65536).map((_, i) => i);
    const widened = new Uint32Array(bfloat16ArrayToFloat32(all).buffer);
    const wrong = [...all].filter((bits) => widened[bits] !== (bits << 16) >>> 0);
    expect(wrong).toEqual([]);
    expect(Object.is(bfloat16BitsToFloat32(0x8000), -0)).toBe(true);
    expect(bfloat16BitsToFloat32(0x4049)).toBe(3.140625);
  });

  it("matches known vectors", () => {
    const vectors: [number, number][] = [
      [1, 0x3f80],
      [3.140625, 0x4049],
      [-0.1, 0xbdcd],
      [1.00390625, 0x3f80], // 1 + ulp/2: tie, stays even
      [1.01171875, 0x3f82], // 1 + 3 ulp/2: tie, rounds up to even
      [3.4e38, 0x7f80], // above the largest finite bfloat16: infinity
      [-0, 0x8000],
      [Number.NEGATIVE_INFINITY, 0xff80],
      [Number.NaN, 0x7fc0],
    ];
    for (const [value, bits] of vectors) expect(float32ToBfloat16Bits(value), String(value)).toBe(bits);
  });

  it("rounds to nearest even like a two-candidate search, on 100k random float32 values", () => {
    const wrong: string[] = [];
    for (const bits of randomBits(100_000, 12345)) {
      // Through a Uint32 view, as the array conversion works: NaN payloads stay intact.
      const got = float32ArrayToBfloat16(new Float32Array(new Uint32Array([bits]).buffer))[0]!;
      if (got !== nearestBfloat16(bits)) wrong.push(`0x${bits.toString(16)} -> 0x${got.toString(16)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("converts arrays both ways", () => {
    const values = new Float32Array([1, -2.5, 1e-40, 3e38]);
    const packed = float32ArrayToBfloat16(values);
    expect([...packed]).toEqual([...values].map((v) => float32ToBfloat16Bits(v)));
    expect([...bfloat16ArrayToFloat32(packed)]).toEqual([...packed].map((b) => bfloat16BitsToFloat32(b)));
  });
});
