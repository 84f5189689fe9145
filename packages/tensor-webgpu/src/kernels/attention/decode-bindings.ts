/**
 * What every decoding attention kernel shares (decode.ts's workgroup form, decode-lanes.ts's lane form):
 * one parameter block and one binding layout, so that decodeAttention fills them the same way whichever
 * kernel runs (the fused RoPE form adds the positions and the rotation), and which keys a workgroup takes.
 * A kernel is specialised (DecodeVariant) for how q, the caches and the output are stored, and for whether
 * it writes the normalised output itself (a single split) or partial outputs for the combine.
 */
import type { FloatStorage } from "../elementwise.js";
import { rotationWgsl } from "../rope.js";
import { storageWgsl } from "./shared.js";

/** What a decoding kernel is generated for, besides its group size and head size. */
export interface DecodeVariant {
  /** How q (or the packed q/k/v), the caches and the output are stored; scores and sums are f32 in all. */
  dtype: FloatStorage;
  /**
   * Whether the kernel writes the normalised output (in `dtype`) itself: the single split of a short
   * cache, with no combine after it. Otherwise it writes f32 partial outputs and their (max, sum).
   */
  final: boolean;
  /** The fused form (decode.ts's DecodeRope): q is the packed q/k/v, rotated, and k/v are appended. */
  rope?: { headDim: number; theta: number };
}

/** The cache key part and label part naming a variant, so that no two variants share a kernel. */
export const variantName = (variant: DecodeVariant): string =>
  `${variant.dtype}${variant.final ? " final" : ""}${variant.rope ? ` rope ${variant.rope.theta}` : ""}`;

/**
 * WGSL: the enable lines, the Params block and the bindings of `variant` (numbered as decodeAttention
 * binds them); with rope, the positions binding and rope.ts's rotation too.
 */
export function decodeBindings(variant: DecodeVariant): string {
  const { rope, final } = variant;
  const storage = storageWgsl(variant.dtype);
  const cache = rope ? "read_write" : "read";
  const buffers = [
    `var<storage, read> q: array<${storage.vec4}>;`,
    `var<storage, ${cache}> kCache: array<${storage.vec4}>;`,
    `var<storage, ${cache}> vCache: array<${storage.vec4}>;`,
    "var<storage, read> kvStart: array<i32>;",
    ...(final
      ? [`var<storage, read_write> out: array<${storage.vec4}>; // [batch, numHeads, headDim]`]
      : [
          "var<storage, read_write> partOut: array<vec4f>;   // [batch, numHeads, splits, headDim]",
          "var<storage, read_write> partStats: array<vec2f>; // [batch, numHeads, splits]: (max, sum)",
        ]),
    ...(rope ? ["var<storage, read> positions: array<i32>;"] : []),
    "var<uniform> params: Params;",
  ];
  return /* wgsl */ `${storage.enable}struct Params {
  kvLen: u32, capacity: u32, numHeads: u32, numKvHeads: u32,
  keysPerSplit: u32, splits: u32, hasKvStart: u32,
  // The workgroup form's loop bounds: equal to baked-in constants, read at run time so that LLVM does not
  // unroll them (JIT time). The lane form ignores them.
  d4: u32, chunk: u32, slices: u32, keysPerSlice: u32, queryElements: u32,
  scale: f32,
  // Always 0: an operand the compiler cannot see through, so that it keeps a rounding to halves (rotatedQuery).
  opaqueZero: u32,
}
${buffers.map((declaration, i) => `@group(0) @binding(${i}) ${declaration}`).join("\n")}
${rope ? rotationWgsl(rope.headDim, rope.theta, 4) : ""}`;
}

/**
 * WGSL: a rotated query vec4 as the kernels keep it, before scaling: for halves, rounded as ropeAppend
 * would store it, so that the fused form gives ropeAppend + decodeAttention's bits in f16 too. A plain
 * f32(f16(x)) does not do: compilers may fold it back to x (lavapipe does), so the half's bits pass
 * through an integer operation whose operand (params.opaqueZero) is known only at run time.
 */
export function rotatedQuery(dtype: FloatStorage, value: string): string {
  if (dtype === "f32") return value;
  const storage = storageWgsl(dtype);
  const bits = `bitcast<vec2u>(${storage.narrow(value)}) | vec2u(params.opaqueZero)`;
  return storage.widen(`bitcast<${storage.vec4}>(${bits})`);
}

/**
 * WGSL opening `main` (after wg, the workgroup id): the workgroup's split, KV head and sequence b, its keys
 * jBegin..jEnd-1 (the split's, from the sequence's first unmasked key), and headBase, the index of the
 * group's first query head in [batch, numHeads].
 */
export function decodeWorkgroup(group: number): string {
  return /* wgsl */ `let split = wg.x;
  let kvHead = wg.y;
  let b = wg.z;
  var kStart = 0u;
  if (params.hasKvStart != 0u) { kStart = u32(clamp(kvStart[b], 0, i32(params.kvLen))); }
  let jBegin = max(split * params.keysPerSplit, kStart);
  let jEnd = min(split * params.keysPerSplit + params.keysPerSplit, params.kvLen);
  let headBase = b * params.numHeads + kvHead * ${group}u;`;
}
