/**
 * The decoding attention of decode.ts for software adapters (lavapipe): one workgroup is one subgroup of
 * L lanes serving one (KV split, KV head, sequence), and lane l owns vec4 columns l, l + L, ... of the
 * head, so every cache row is read by one vector load per L columns. Per block of L keys, each key's
 * score against each head of the group is the subgroup sum of the lanes' partial dot products, and lane i
 * keeps key i's; the online softmax then runs on all L keys at once, and P·V takes each key's probability
 * by shuffle. Nothing is staged in workgroup memory: lavapipe serves workgroup-memory loads lane by lane,
 * and the 64-thread form (a barrier and one serial softmax thread per head for every 64 keys) ran at
 * 1-1.4 GFLOP/s there. It writes what that form writes (partial outputs and their (max, sum), or the
 * normalised output for a single split), with the same bindings, so the same combine follows it; like it,
 * it reads and writes halves for f16 storage and computes in f32.
 */
import type { FloatStorage } from "../elementwise.js";
import { type DecodeVariant, decodeBindings, decodeWorkgroup, rotatedQuery } from "./decode-bindings.js";
import { each, MASKED, storageWgsl } from "./shared.js";

/** WGSL: the fused form's query rotation into registers and, for the last split, the cache append. */
function ropedLoads(group: number, d4: number, columns: number, dtype: FloatStorage): string {
  const { narrow } = storageWgsl(dtype);
  return /* wgsl */ `let position = u32(positions[b]);
  let row = b * (params.numHeads + 2u * params.numKvHeads); // the new token's heads: q's, k's, v's
  ${each(
    group,
    (g) =>
      each(
        columns,
        (c) =>
          `let q${g}_${c} = select(vec4f(0.0), ${rotatedQuery(dtype, `rotatedHalf((row + kvHead * ${group}u + ${g}u) * ${d4}u, col${c}, position)`)} * params.scale, owned${c});`,
        "\n  ",
      ),
    "\n  ",
  )}
  if (split == params.splits - 1u) {
    let slot = ((b * params.capacity + params.kvLen - 1u) * params.numKvHeads + kvHead) * ${d4}u;
    ${each(
      columns,
      (c) => `if (owned${c}) {
      kCache[slot + col${c}] = ${narrow(`rotatedHalf((row + params.numHeads + kvHead) * ${d4}u, col${c}, position)`)};
      vCache[slot + col${c}] = q[(row + params.numHeads + params.numKvHeads + kvHead) * ${d4}u + col${c}];
    }`,
      "\n    ",
    )}
  }
  // Each lane reads back only the columns it wrote; the barrier orders those writes before the reads.
  storageBarrier();`;
}

/**
 * WGSL: column `column` of the head whose first vec4 is q[head], rotated: rope.ts's rotation of its pair
 * (the same arithmetic as ropeAppend's), keeping the column's half — the first below `pairs`, else the second.
 */
function rotatedHalfWgsl(pairs: number, dtype: FloatStorage): string {
  const { widen } = storageWgsl(dtype);
  return /* wgsl */ `fn rotatedHalf(head: u32, column: u32, position: u32) -> vec4f {
  let pair = column % ${pairs}u;
  let r = rotate(${widen("q[head + pair]")}, ${widen(`q[head + pair + ${pairs}u]`)}, position, pair);
  return select(r.second, r.first, column < ${pairs}u);
}`;
}

/**
 * WGSL of the lane form for subgroups of `lanes`, `group` query heads per KV head and head size 4·d4, in
 * `variant`'s storage, fused form (decode.ts's DecodeRope) and outputs.
 */
export function laneDecodeCode(lanes: number, group: number, d4: number, variant: DecodeVariant): string {
  const { rope, dtype } = variant;
  const { widen, narrow } = storageWgsl(dtype);
  const columns = Math.ceil(d4 / lanes);
  const cols = (f: (c: number) => string, separator = "\n  ") => each(columns, f, separator);
  const heads = (f: (g: number) => string, separator = "\n  ") => each(group, f, separator);
  const loads = rope
    ? ropedLoads(group, d4, columns, dtype)
    : heads((g) =>
        cols(
          (c) =>
            `let q${g}_${c} = select(vec4f(0.0), ${widen(`q[(headBase + ${g}u) * ${d4}u + col${c}]`)} * params.scale, owned${c});`,
        ),
      );
  // A single split is the whole answer: normalised here into out, and no combine runs.
  const store = (g: number) =>
    variant.final
      ? `let scale = select(0.0, 1.0 / l${g}, l${g} > 0.0);
    let at = (headBase + ${g}u) * ${d4}u;
    ${cols((c) => `if (owned${c}) { out[at + col${c}] = ${narrow(`acc${g}_${c} * scale`)}; }`, "\n    ")}`
      : `let at = ((headBase + ${g}u) * params.splits + split) * ${d4}u;
    ${cols((c) => `if (owned${c}) { partOut[at + col${c}] = acc${g}_${c}; }`, "\n    ")}
    if (lane == 0u) { partStats[(headBase + ${g}u) * params.splits + split] = vec2f(m${g}, l${g}); }`;
  return /* wgsl */ `enable subgroups;
${decodeBindings(variant)}
${rope ? rotatedHalfWgsl(d4 / 2, dtype) : ""}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  ${decodeWorkgroup(group)}
  ${cols((c) => `let owned${c} = lane + ${c * lanes}u < ${d4}u;\n  let col${c} = min(lane + ${c * lanes}u, ${d4 - 1}u);`)}
  ${loads}
  ${heads((g) => `var m${g} = ${MASKED};\n  var l${g} = 0.0;\n  ${cols((c) => `var acc${g}_${c} = vec4f(0.0);`, " ")}`)}
  let stride = params.numKvHeads * ${d4}u; // between a head's rows of consecutive keys
  let origin = (b * params.capacity * params.numKvHeads + kvHead) * ${d4}u;
  let last = max(jEnd, 1u) - 1u;
  for (var j0 = jBegin; j0 < jEnd; j0 += ${lanes}u) {
    // Lane i ends with key j0 + i's score against each head (keys past the split repeat its last).
    ${heads((g) => `var s${g} = 0.0;`, " ")}
    for (var i = 0u; i < ${lanes}u; i++) {
      let base = origin + min(j0 + i, last) * stride;
      ${cols((c) => `let k${c} = ${widen(`kCache[base + col${c}]`)};`, "\n      ")}
      ${heads((g) => `s${g} = select(s${g}, subgroupAdd(${cols((c) => `dot(q${g}_${c}, k${c})`, " + ")}), lane == i);`, "\n      ")}
    }
    let valid = j0 + lane < jEnd;
    ${heads(
      (g) => `var p${g} = 0.0;
    {
      let top = max(m${g}, subgroupMax(select(${MASKED}, s${g}, valid)));
      let alpha = exp(m${g} - top);
      p${g} = select(0.0, exp(s${g} - top), valid);
      l${g} = l${g} * alpha + subgroupAdd(p${g});
      ${cols((c) => `acc${g}_${c} *= alpha;`, " ")}
      m${g} = top;
    }`,
      "\n    ",
    )}
    for (var i = 0u; i < ${lanes}u; i++) {
      let base = origin + min(j0 + i, last) * stride;
      ${cols((c) => `let v${c} = ${widen(`vCache[base + col${c}]`)};`, "\n      ")}
      ${heads((g) => `{ let p = subgroupShuffle(p${g}, i); ${cols((c) => `acc${g}_${c} += p * v${c};`, " ")} }`, "\n      ")}
    }
  }
  ${heads(
    (g) => `{
    ${store(g)}
  }`,
  )}
}
`;
}
