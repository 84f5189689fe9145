/**
 * What every decoding attention kernel shares (decode.ts's workgroup form, decode-lanes.ts's lane form):
 * one parameter block and one binding layout, so that decodeAttention fills them the same way whichever
 * kernel runs (the fused RoPE form adds the positions and the rotation), and which keys a workgroup takes.
 */
import { rotationWgsl } from "../rope.js";

/** WGSL: the Params block and the bindings; with `rope`, the positions binding and rope.ts's rotation too. */
export function decodeBindings(rope?: { headDim: number; theta: number }): string {
  const cache = rope ? "read_write" : "read";
  return /* wgsl */ `struct Params {
  kvLen: u32, capacity: u32, numHeads: u32, numKvHeads: u32,
  keysPerSplit: u32, splits: u32, hasKvStart: u32,
  // The workgroup form's loop bounds: equal to baked-in constants, read at run time so that LLVM does not
  // unroll them (JIT time). The lane form ignores them.
  d4: u32, chunk: u32, slices: u32, keysPerSlice: u32, queryElements: u32,
  scale: f32,
}
@group(0) @binding(0) var<storage, read> q: array<vec4f>;
@group(0) @binding(1) var<storage, ${cache}> kCache: array<vec4f>;
@group(0) @binding(2) var<storage, ${cache}> vCache: array<vec4f>;
@group(0) @binding(3) var<storage, read> kvStart: array<i32>;
@group(0) @binding(4) var<storage, read_write> partOut: array<vec4f>;   // [batch, numHeads, splits, headDim]
@group(0) @binding(5) var<storage, read_write> partStats: array<vec2f>; // [batch, numHeads, splits]: (max, sum)
${
  rope
    ? `@group(0) @binding(6) var<storage, read> positions: array<i32>;
@group(0) @binding(7) var<uniform> params: Params;
${rotationWgsl(rope.headDim, rope.theta, 4)}`
    : "@group(0) @binding(6) var<uniform> params: Params;"
}`;
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
