/**
 * Conversions between float32 and the two 16-bit float formats found in checkpoints.
 *
 * - IEEE binary16 ("F16"): 1 sign, 5 exponent, 10 mantissa bits. Widening is exact for every
 *   value, subnormals, infinities and NaN included.
 * - bfloat16 ("BF16"): the top 16 bits of a float32, so widening is a 16-bit shift.
 *
 * Narrowing rounds to nearest, ties to even, like numpy's astype(float16) and PyTorch's
 * .to(torch.bfloat16). All functions work on bit patterns (numbers in 0..0xffff) so NaN
 * payloads are not lost to JavaScript's NaN canonicalisation.
 */

// Scratch views for moving between a float32 value and its bits.
const scratchFloat = new Float32Array(1);
const scratchBits = new Uint32Array(scratchFloat.buffer);

export function float32ToBits(value: number): number {
  scratchFloat[0] = value;
  return scratchBits[0]!;
}

export function bitsToFloat32(bits: number): number {
  scratchBits[0] = bits;
  return scratchFloat[0]!;
}

/** The float32 bit pattern of a binary16 bit pattern (exact). */
export function float16BitsToFloat32Bits(half: number): number {
  const sign = (half & 0x8000) << 16;
  const exponent = (half >>> 10) & 0x1f;
  let mantissa = half & 0x3ff;
  if (exponent === 0x1f) return (sign | 0x7f800000 | (mantissa << 13)) >>> 0; // inf, or NaN keeping its payload
  if (exponent === 0) {
    if (mantissa === 0) return sign >>> 0; // signed zero
    // Subnormal: shift the mantissa up until the implicit bit appears; each shift lowers the exponent.
    let shifts = 0;
    while ((mantissa & 0x400) === 0) {
      mantissa <<= 1;
      shifts++;
    }
    return (sign | ((127 - 14 - shifts) << 23) | ((mantissa & 0x3ff) << 13)) >>> 0;
  }
  return (sign | ((exponent + 127 - 15) << 23) | (mantissa << 13)) >>> 0;
}

export function float16BitsToFloat32(half: number): number {
  return bitsToFloat32(float16BitsToFloat32Bits(half));
}

/** binary16 bits of a float32 bit pattern, rounded to nearest even; overflow becomes infinity. */
export function float32BitsToFloat16Bits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) {
    if (mantissa === 0) return sign | 0x7c00;
    // NaN: keep the top payload bits (quiet bit included), and make sure it stays a NaN.
    const payload = mantissa >>> 13;
    return sign | 0x7c00 | (payload === 0 ? 0x200 : payload);
  }
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00;
  if (halfExponent <= 0) {
    // Result is subnormal (or zero): value = significand * 2^(exponent - 150), in units of 2^-24.
    if (halfExponent < -10) return sign; // below half the smallest subnormal: rounds to zero
    const significand = mantissa | 0x800000;
    const shift = 14 - halfExponent;
    let half = significand >>> shift;
    const remainder = significand & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (remainder > halfway || (remainder === halfway && (half & 1) === 1)) half++;
    return sign | half; // a carry into bit 10 correctly yields the smallest normal
  }
  let half = (halfExponent << 10) | (mantissa >>> 13);
  const remainder = mantissa & 0x1fff;
  if (remainder > 0x1000 || (remainder === 0x1000 && (half & 1) === 1)) half++; // a carry may reach infinity
  return sign | half;
}

export function float32ToFloat16Bits(value: number): number {
  return float32BitsToFloat16Bits(float32ToBits(value));
}

export function bfloat16BitsToFloat32(bf16: number): number {
  return bitsToFloat32((bf16 << 16) >>> 0);
}

/** bfloat16 bits of a float32 bit pattern, rounded to nearest even. NaN becomes 0x7fc0 as in PyTorch. */
export function float32BitsToBfloat16Bits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return 0x7fc0;
  // No NaN reaches here, so the sum stays below 2^32 and the shift cannot wrap.
  return ((bits >>> 0) + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

export function float32ToBfloat16Bits(value: number): number {
  return float32BitsToBfloat16Bits(float32ToBits(value));
}

let float16Table: Uint32Array | undefined;

/** float32 bits of all 65536 binary16 patterns (256 KiB), built on first use. */
function float16ToFloat32BitsTable(): Uint32Array {
  if (float16Table === undefined) {
    float16Table = new Uint32Array(65536);
    for (let half = 0; half < 65536; half++) float16Table[half] = float16BitsToFloat32Bits(half);
  }
  return float16Table;
}

function checkOutput(length: number, out: Float32Array | undefined): Float32Array {
  if (out === undefined) return new Float32Array(length);
  if (out.length !== length) throw new RangeError(`output has ${out.length} elements, expected ${length}`);
  return out;
}

/** Widens binary16 bit patterns to float32 values. */
export function float16ArrayToFloat32(halves: Uint16Array, out?: Float32Array): Float32Array {
  const result = checkOutput(halves.length, out);
  const resultBits = new Uint32Array(result.buffer, result.byteOffset, result.length);
  const table = float16ToFloat32BitsTable();
  for (let i = 0; i < halves.length; i++) resultBits[i] = table[halves[i]!]!;
  return result;
}

/** Widens bfloat16 bit patterns to float32 values. */
export function bfloat16ArrayToFloat32(bf16s: Uint16Array, out?: Float32Array): Float32Array {
  const result = checkOutput(bf16s.length, out);
  const resultBits = new Uint32Array(result.buffer, result.byteOffset, result.length);
  for (let i = 0; i < bf16s.length; i++) resultBits[i] = bf16s[i]! << 16;
  return result;
}

/** Narrows float32 values to binary16 bit patterns (round to nearest even). */
export function float32ArrayToFloat16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const result = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) result[i] = float32BitsToFloat16Bits(bits[i]!);
  return result;
}

/** Narrows float32 values to bfloat16 bit patterns (round to nearest even). */
export function float32ArrayToBfloat16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const result = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) result[i] = float32BitsToBfloat16Bits(bits[i]!);
  return result;
}

/**
 * `value` rounded to the nearest binary16 value (ties to even; overflow to infinity, NaN kept): f16 storage
 * emulated in f32. The same result as float16BitsToFloat32(float32ToFloat16Bits(value)), in plain
 * arithmetic (the CPU backend rounds every element an op writes to an f16 tensor).
 */
export function roundToHalf(value: number): number {
  const magnitude = Math.abs(value);
  if (magnitude === 0 || Number.isNaN(value)) return value;
  if (magnitude >= 65520) return value < 0 ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  let exponent = Math.floor(Math.log2(magnitude));
  // log2 may be off by one next to powers of two.
  if (2 ** exponent > magnitude) exponent--;
  else if (2 ** (exponent + 1) <= magnitude) exponent++;
  const quantum = 2 ** (Math.max(exponent, -14) - 10); // subnormals: 2^-24
  const scaled = magnitude / quantum; // exact: quantum is a power of two
  let steps = Math.floor(scaled);
  const remainder = scaled - steps;
  if (remainder > 0.5 || (remainder === 0.5 && steps % 2 === 1)) steps++;
  const rounded = steps * quantum;
  return value < 0 ? -rounded : rounded;
}

/** Round the first n entries of `values` to binary16 values in place. */
export function roundToHalves(values: Float32Array, n = values.length): Float32Array {
  for (let i = 0; i < n; i++) values[i] = roundToHalf(values[i]!);
  return values;
}
