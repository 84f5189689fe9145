/**
 * Prefill/training attention forward for software adapters (lavapipe): the arithmetic of forward.ts's
 * kernel on its software tile (blocks of 32 keys, the same online softmax, the same order of every sum),
 * with the data movement of the "texture" matmul. Q, K and V are staged in textures (rgba32float, or
 * rgba16float for halves); one workgroup is one subgroup of L lanes and computes R query rows of one
 * head: lane l owns keys
 * k0 + 4l .. 4l + 3 of each block of 4L keys and vec4 columns l, l + L, ... of the output. Query vec4s
 * reach every lane by subgroup broadcast and probabilities by subgroup shuffle, so no workgroup memory is
 * touched: lavapipe serves workgroup-memory loads lane by lane, and the tiled kernel ran at 1-2 GFLOP/s.
 */
import type { FloatStorage } from "../elementwise.js";
import { EMPTY_LSE, each, MASKED, stagingFormat, storageWgsl } from "./shared.js";
import { commonWgsl, qIndex, WRITE_LSE } from "./tiles.js";

/** Query rows per workgroup (8 and 32 measured no faster on lavapipe; 32 took seconds longer to JIT). */
export const TEXTURE_ROWS = 16;

/** The block sizes, for the Params block's tileRows and tileKeys. */
export const textureForwardTile = (lanes: number) => ({ bq: TEXTURE_ROWS, bk: 4 * lanes });

/** `dtype`: the elements of the staged operands' textures (stagingFormat) and of the output. */
export function textureForwardCode(
  lanes: number,
  d4: number,
  dtype: FloatStorage = "f32",
  rows = TEXTURE_ROWS,
): string {
  const storage = storageWgsl(dtype);
  const format = stagingFormat(dtype);
  const bk = 4 * lanes;
  const columns = Math.ceil(d4 / lanes); // vec4 columns of the output per lane
  const loadsQ = rows / lanes;
  const keys = [0, 1, 2, 3];
  const comp = ["x", "y", "z", "w"];
  const rowList = Array.from({ length: rows }, (_, r) => r);
  const colList = Array.from({ length: columns }, (_, c) => c);
  const lines = (f: (r: number) => string) => rowList.map(f).join("\n    ");
  return /* wgsl */ `${storage.enable}enable subgroups;
@group(0) @binding(0) var qTex: texture_storage_2d<${format}, read>;
@group(0) @binding(1) var kTex: texture_storage_2d<${format}, read>;
@group(0) @binding(2) var vTex: texture_storage_2d<${format}, read>;
@group(0) @binding(3) var<storage, read_write> out: array<${storage.vec4}>;
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;
${commonWgsl(5)}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  let qBlocks = (params.seqLen + ${rows - 1}u) / ${rows}u;
  let q0 = (qBlocks - 1u - wg.x) * ${rows}u; // the last blocks (most keys under the causal mask) first
  let head = wg.y;
  let b = wg.z + params.batch0;
  let kvHead = head / params.group;
  let kStart = firstKey(b);
  let kEnd = keyEnd(q0 + ${rows}u);
  let qRow = wg.z * params.seqLen; // texture rows of this chunk's sequences
  let kRow = wg.z * params.kvCapacity;
  let qx = head * ${d4}u;
  let kx = kvHead * ${d4}u;
  let lastRow = params.seqLen - 1u;
  let lastKey = params.kvLen - 1u;
  ${each(loadsQ, (g) => `let myRow${g} = qRow + min(q0 + lane + ${g * lanes}u, lastRow);`)}
  ${each(columns, (c) => `let vx${c} = kx + min(lane + ${c * lanes}u, ${d4 - 1}u);`)}
  ${lines((r) => `var m${r} = ${MASKED};\n    var l${r} = 0.0;`)}
  ${rowList.map((r) => colList.map((c) => `var acc${r}_${c} = vec4f(0.0);`).join(" ")).join("\n  ")}

  for (var k0 = kStart / ${bk}u * ${bk}u; k0 < kEnd; k0 += ${bk}u) {
    // S = (scale·Q)·Kᵀ for this lane's 4 keys and every row.
    ${each(4, (i) => `let key${i} = kRow + min(k0 + 4u * lane + ${i}u, lastKey);`)}
    ${lines((r) => keys.map((i) => `var s${r}_${i} = 0.0;`).join(" "))}
    for (var c = 0u; c < params.d4; c++) {
      ${each(4, (i) => `let k${i} = textureLoad(kTex, vec2u(kx + c, key${i}));`)}
      ${each(loadsQ, (g) => `let qv${g} = textureLoad(qTex, vec2u(qx + c, myRow${g})) * params.scale;`)}
      ${lines((r) => `{ let q = subgroupBroadcast(qv${Math.floor(r / lanes)}, ${r % lanes}u);\n      ${keys.map((i) => `s${r}_${i} += dot(q, k${i});`).join(" ")} }`)}
    }
    // Keys all visible to all rows: no per-score test.
    let whole = k0 >= kStart && k0 + ${bk}u <= params.kvLen &&
      (params.causal == 0u || k0 + ${bk - 1}u + params.seqLen <= q0 + params.kvLen);
    // Online softmax: the block's max over every lane, this lane's probabilities, the rescale factor.
    ${lines(
      (r) => `var p${r} = vec4f(0.0);
    var sum${r} = 0.0;
    {
      var top = m${r};
      ${keys.map((i) => `let visible${i} = whole || visible(q0 + ${r}u, k0 + 4u * lane + ${i}u, kStart);`).join("\n      ")}
      ${keys.map((i) => `if (visible${i}) { top = max(top, s${r}_${i}); }`).join("\n      ")}
      let blockMax = subgroupMax(top);
      let alpha = exp(m${r} - blockMax);
      ${keys.map((i) => `p${r}.${comp[i]} = select(0.0, exp(s${r}_${i} - blockMax), visible${i});`).join("\n      ")}
      sum${r} = l${r} * alpha;
      ${colList.map((c) => `acc${r}_${c} *= alpha;`).join(" ")}
      m${r} = blockMax;
    }`,
    )}
    // O += P·V and l += the row's probabilities, key by key in order (4 keys of lane src at a time).
    for (var src = 0u; src < ${lanes}u; src++) {
      ${each(4, (i) => `let vRow${i} = kRow + min(k0 + 4u * src + ${i}u, lastKey);`)}
      ${colList.map((c) => keys.map((i) => `let v${i}_${c} = textureLoad(vTex, vec2u(vx${c}, vRow${i}));`).join("\n      ")).join("\n      ")}
      ${lines(
        (r) => `{ let p = subgroupShuffle(p${r}, src);
      ${keys.map((i) => `sum${r} += p.${comp[i]}; ${colList.map((c) => `acc${r}_${c} += p.${comp[i]} * v${i}_${c};`).join(" ")}`).join("\n      ")} }`,
      )}
    }
    ${lines((r) => `l${r} = sum${r};`)}
  }

  ${lines(
    (r) => `if (q0 + ${r}u < params.seqLen) {
    let hasKeys = l${r} > 0.0;
    let inverse = select(0.0, 1.0 / l${r}, hasKeys);
    if (lane == 0u && (params.flags & ${WRITE_LSE}u) != 0u) {
      lse[(b * params.numHeads + head) * params.seqLen + q0 + ${r}u] = select(${EMPTY_LSE}, m${r} + log(l${r}), hasKeys);
    }
    let base = ${qIndex(d4, `q0 + ${r}u`)};
    ${colList.map((c) => `if (lane + ${c * lanes}u < ${d4}u) { out[base + lane + ${c * lanes}u] = ${storage.narrow(`acc${r}_${c} * inverse`)}; }`).join("\n    ")}
  }`,
  )}
}
`;
}
