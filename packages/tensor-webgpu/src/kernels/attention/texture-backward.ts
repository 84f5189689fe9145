/**
 * Attention backward for software adapters: the dQ and dK/dV kernels of backward.ts (the same products,
 * probabilities and order of every sum) with the data movement of texture-forward.ts: Q, K, V and dOut in
 * textures (rgba32float, or rgba16float for halves), one subgroup of L lanes per workgroup, operands
 * shared by subgroup broadcast and shuffle instead of workgroup memory.
 *  - dQ: R query rows per workgroup; lane l owns keys k0 + 4l .. 4l + 3 of each block of 4L keys (their
 *    P and dS) and vec4 columns l, l + L, ... of dQ.
 *  - dK/dV: KR keys per workgroup; query rows stream in blocks of 4L, lane l owning rows q0 + 4l .. 4l + 3
 *    (their P and dS) and vec4 columns l, l + L, ... of dK and dV. Rows run in the order the tiled kernel
 *    sums them (the group's heads one after another, rows ascending), so dK and dV come out the same.
 */
import type { FloatStorage } from "../elementwise.js";
import { each, stagingFormat, storageWgsl } from "./shared.js";
import { commonWgsl, qIndex } from "./tiles.js";

const comp = ["x", "y", "z", "w"];
const four = [0, 1, 2, 3];
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * WGSL shared by both kernels: the input textures and the outputs (of `dtype` elements), stats, kvStart
 * and the Params block.
 */
function backwardBindings(outputs: string[], dtype: FloatStorage): string {
  const storage = storageWgsl(dtype);
  const format = stagingFormat(dtype);
  return /* wgsl */ `${storage.enable}enable subgroups;
@group(0) @binding(0) var qTex: texture_storage_2d<${format}, read>;
@group(0) @binding(1) var kTex: texture_storage_2d<${format}, read>;
@group(0) @binding(2) var vTex: texture_storage_2d<${format}, read>;
@group(0) @binding(3) var dOTex: texture_storage_2d<${format}, read>;
@group(0) @binding(4) var<storage, read> stats: array<vec2f>;
${outputs.map((name, i) => `@group(0) @binding(${6 + i}) var<storage, read_write> ${name}: array<${storage.vec4}>;`).join("\n")}
@group(0) @binding(${6 + outputs.length}) var<uniform> params: Params;
${commonWgsl(5)}`;
}

/** dQ = dS·K, R query rows of one head per workgroup. */
export function textureQGradCode(
  lanes: number,
  d4: number,
  rows: number,
  dtype: FloatStorage = "f32",
): string {
  const { narrow } = storageWgsl(dtype);
  const bk = 4 * lanes;
  const columns = Math.ceil(d4 / lanes);
  const loads = rows / lanes;
  const rowList = range(rows);
  const colList = range(columns);
  const lines = (f: (r: number) => string) => rowList.map(f).join("\n    ");
  return /* wgsl */ `${backwardBindings(["dQ"], dtype)}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  let qBlocks = (params.seqLen + ${rows - 1}u) / ${rows}u;
  let q0 = (qBlocks - 1u - wg.x) * ${rows}u;
  let head = wg.y;
  let b = wg.z + params.batch0;
  let kvHead = head / params.group;
  let kStart = firstKey(b);
  let kEnd = keyEnd(q0 + ${rows}u);
  let qRow = wg.z * params.seqLen;
  let kRow = wg.z * params.kvCapacity;
  let qx = head * ${d4}u;
  let kx = kvHead * ${d4}u;
  let lastRow = params.seqLen - 1u;
  let lastKey = params.kvLen - 1u;
  ${each(loads, (g) => `let myRow${g} = qRow + min(q0 + lane + ${g * lanes}u, lastRow);`)}
  ${each(columns, (c) => `let kcx${c} = kx + min(lane + ${c * lanes}u, ${d4 - 1}u);`)}
  let statBase = (b * params.numHeads + head) * params.seqLen;
  ${lines((r) => `let stat${r} = stats[statBase + min(q0 + ${r}u, lastRow)];`)}
  ${rowList.map((r) => colList.map((c) => `var dq${r}_${c} = vec4f(0.0);`).join(" ")).join("\n  ")}

  for (var k0 = kStart / ${bk}u * ${bk}u; k0 < kEnd; k0 += ${bk}u) {
    ${each(4, (i) => `let key${i} = kRow + min(k0 + 4u * lane + ${i}u, lastKey);`)}
    ${lines((r) => four.map((i) => `var s${r}_${i} = 0.0; var dp${r}_${i} = 0.0;`).join(" "))}
    for (var c = 0u; c < params.d4; c++) {
      ${each(4, (i) => `let k${i} = textureLoad(kTex, vec2u(kx + c, key${i}));\n      let v${i} = textureLoad(vTex, vec2u(kx + c, key${i}));`)}
      ${each(loads, (g) => `let qv${g} = textureLoad(qTex, vec2u(qx + c, myRow${g}));\n      let ov${g} = textureLoad(dOTex, vec2u(qx + c, myRow${g}));`)}
      ${lines(
        (r) => `{ let q = subgroupBroadcast(qv${Math.floor(r / lanes)}, ${r % lanes}u);
      let o = subgroupBroadcast(ov${Math.floor(r / lanes)}, ${r % lanes}u);
      ${four.map((i) => `s${r}_${i} += dot(q, k${i}); dp${r}_${i} += dot(o, v${i});`).join(" ")} }`,
      )}
    }
    let whole = k0 >= kStart && k0 + ${bk}u <= params.kvLen &&
      (params.causal == 0u || k0 + ${bk - 1}u + params.seqLen <= q0 + params.kvLen);
    ${lines(
      (r) => `var ds${r} = vec4f(0.0);
    ${four
      .map(
        (i) => `{
      let p = select(0.0, exp(s${r}_${i} * params.scale - stat${r}.x), whole || visible(q0 + ${r}u, k0 + 4u * lane + ${i}u, kStart));
      ds${r}.${comp[i]} = p * (dp${r}_${i} - stat${r}.y) * params.scale;
    }`,
      )
      .join("\n    ")}`,
    )}
    // dQ += dS·K key by key in order (4 keys of lane src at a time).
    for (var src = 0u; src < ${lanes}u; src++) {
      ${each(4, (i) => `let keyRow${i} = kRow + min(k0 + 4u * src + ${i}u, lastKey);`)}
      ${colList.map((c) => four.map((i) => `let k${i}_${c} = textureLoad(kTex, vec2u(kcx${c}, keyRow${i}));`).join("\n      ")).join("\n      ")}
      ${lines(
        (r) => `{ let d = subgroupShuffle(ds${r}, src);
      ${four.map((i) => colList.map((c) => `dq${r}_${c} += d.${comp[i]} * k${i}_${c};`).join(" ")).join("\n      ")} }`,
      )}
    }
  }

  ${lines(
    (r) => `if (q0 + ${r}u < params.seqLen) {
    let base = ${qIndex(d4, `q0 + ${r}u`)};
    ${colList.map((c) => `if (lane + ${c * lanes}u < ${d4}u) { dQ[base + lane + ${c * lanes}u] = ${narrow(`dq${r}_${c}`)}; }`).join("\n    ")}
  }`,
  )}
}
`;
}

/** Keys per dK/dV workgroup. */
export const textureKvGradKeys = (lanes: number) => Math.max(8, lanes);

/** dV = Pᵀ·dOut and dK = dSᵀ·Q, `keys` keys of one KV head per workgroup, over its group's query heads. */
export function textureKvGradCode(
  lanes: number,
  d4: number,
  keys: number,
  dtype: FloatStorage = "f32",
): string {
  const { narrow } = storageWgsl(dtype);
  const bq = 4 * lanes;
  const columns = Math.ceil(d4 / lanes);
  const loads = keys / lanes;
  const keyList = range(keys);
  const colList = range(columns);
  const lines = (f: (j: number) => string) => keyList.map(f).join("\n      ");
  return /* wgsl */ `${backwardBindings(["dK", "dV"], dtype)}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  let k0 = wg.x * ${keys}u;
  let kvHead = wg.y;
  let b = wg.z + params.batch0;
  let kStart = firstKey(b);
  let qRow = wg.z * params.seqLen;
  let kRow = wg.z * params.kvCapacity;
  let kx = kvHead * ${d4}u;
  let lastRow = params.seqLen - 1u;
  let lastKey = params.kvLen - 1u;
  ${each(loads, (g) => `let myKey${g} = kRow + min(k0 + lane + ${g * lanes}u, lastKey);`)}
  ${keyList.map((j) => colList.map((c) => `var dk${j}_${c} = vec4f(0.0); var dv${j}_${c} = vec4f(0.0);`).join(" ")).join("\n  ")}

  // Rows that see some key of this block: none if all its keys are before kStart.
  let rowFirst = firstRowSeeing(k0) / ${bq}u * ${bq}u;
  let rowEnd = select(params.seqLen, 0u, k0 + ${keys}u <= kStart);
  let headFirst = kvHead * params.group;
  for (var head = headFirst; head < headFirst + params.group; head++) {
    let qx = head * ${d4}u;
    ${each(columns, (c) => `let ocx${c} = qx + min(lane + ${c * lanes}u, ${d4 - 1}u);`)}
    let statBase = (b * params.numHeads + head) * params.seqLen;
    for (var q0 = rowFirst; q0 < rowEnd; q0 += ${bq}u) {
      ${each(4, (i) => `let row${i} = min(q0 + 4u * lane + ${i}u, lastRow);\n      let stat${i} = stats[statBase + row${i}];`)}
      ${lines((j) => four.map((i) => `var s${j}_${i} = 0.0; var dp${j}_${i} = 0.0;`).join(" "))}
      for (var c = 0u; c < params.d4; c++) {
        ${each(4, (i) => `let q${i} = textureLoad(qTex, vec2u(qx + c, qRow + row${i}));\n        let o${i} = textureLoad(dOTex, vec2u(qx + c, qRow + row${i}));`)}
        ${each(loads, (g) => `let kv${g} = textureLoad(kTex, vec2u(kx + c, myKey${g}));\n        let vv${g} = textureLoad(vTex, vec2u(kx + c, myKey${g}));`)}
        ${keyList
          .map(
            (j) => `{ let k = subgroupBroadcast(kv${Math.floor(j / lanes)}, ${j % lanes}u);
        let v = subgroupBroadcast(vv${Math.floor(j / lanes)}, ${j % lanes}u);
        ${four.map((i) => `s${j}_${i} += dot(q${i}, k); dp${j}_${i} += dot(o${i}, v);`).join(" ")} }`,
          )
          .join("\n        ")}
      }
      // Rows past seqLen must count as masked here: their products reach dK and dV.
      let whole = q0 + ${bq}u <= params.seqLen && k0 >= kStart && k0 + ${keys}u <= params.kvLen &&
        (params.causal == 0u || k0 + ${keys - 1}u + params.seqLen <= q0 + params.kvLen);
      ${lines(
        (j) => `var p${j} = vec4f(0.0);
      var ds${j} = vec4f(0.0);
      ${four
        .map(
          (i) => `{
        let p = select(0.0, exp(s${j}_${i} * params.scale - stat${i}.x), whole || visible(q0 + 4u * lane + ${i}u, k0 + ${j}u, kStart));
        p${j}.${comp[i]} = p;
        ds${j}.${comp[i]} = p * (dp${j}_${i} - stat${i}.y) * params.scale;
      }`,
        )
        .join("\n      ")}`,
      )}
      // dV += Pᵀ·dOut and dK += dSᵀ·Q row by row in order (4 rows of lane src at a time).
      for (var src = 0u; src < ${lanes}u; src++) {
        ${lines((j) => `let ps${j} = subgroupShuffle(p${j}, src);\n      let dss${j} = subgroupShuffle(ds${j}, src);`)}
        ${four
          .map(
            (i) => `{
        let r = qRow + min(q0 + 4u * src + ${i}u, lastRow);
        ${colList.map((c) => `let o${c} = textureLoad(dOTex, vec2u(ocx${c}, r));\n        let q${c} = textureLoad(qTex, vec2u(ocx${c}, r));`).join("\n        ")}
        ${keyList.map((j) => colList.map((c) => `dv${j}_${c} += ps${j}.${comp[i]} * o${c}; dk${j}_${c} += dss${j}.${comp[i]} * q${c};`).join(" ")).join("\n        ")}
      }`,
          )
          .join("\n        ")}
      }
    }
  }

  ${keyList
    .map(
      (j) => `if (k0 + ${j}u < params.kvLen) {
    let base = ((b * params.kvLen + k0 + ${j}u) * params.numKvHeads + kvHead) * ${d4}u;
    ${colList.map((c) => `if (lane + ${c * lanes}u < ${d4}u) { dK[base + lane + ${c * lanes}u] = ${narrow(`dk${j}_${c}`)}; dV[base + lane + ${c * lanes}u] = ${narrow(`dv${j}_${c}`)}; }`).join("\n    ")}
  }`,
    )
    .join("\n  ")}
}
`;
}
