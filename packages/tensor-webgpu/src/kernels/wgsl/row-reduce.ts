/**
 * What the row kernels (softmax, RMSNorm, log-probs/entropy/cross-entropy, row reductions) share: how many
 * lanes a row's workgroup gets, how a row is read (vec4 or scalar), and the WGSL that combines one value
 * per lane across the workgroup.
 *
 * Scheme of such a kernel: one workgroup per row (or per chunk of a long row); each lane strides through
 * the row with a stride of LANES vectors keeping its own partial, then a tree in workgroup memory combines
 * the lanes' partials in a fixed order, so results are bit-identical run to run.
 */
import type { GpuContext } from "../../gpu/context.js";

/** Overrides for tests and tuning: `rowLanes` forces the lanes per row workgroup (a power of two). */
export interface RowTuning {
  rowLanes?: number;
}

/** Lanes per row workgroup on a software adapter, unless a kernel measured better (see rowLanes). */
export const SOFTWARE_ROW_LANES = 8;

/**
 * Lanes per row workgroup for rows of `vectors` vectors: `tuning.rowLanes` when set; on a GPU 64, or 256
 * for long rows (memory parallelism); on a software adapter `softwareLanes`. Lavapipe runs a workgroup as
 * fibers of SIMD-width lanes on one CPU thread and each barrier of the reduction tree switches between all
 * of them, so few lanes are several times faster there (measured: 512x512 softmax 1.3 ms with 8 lanes,
 * 2.1 ms with 64, 6.8 ms with 256).
 */
export function rowLanes(
  ctx: GpuContext,
  vectors: number,
  tuning: RowTuning,
  softwareLanes = SOFTWARE_ROW_LANES,
): number {
  if (tuning.rowLanes) return tuning.rowLanes;
  if (ctx.info.adapter.isSoftware) return softwareLanes;
  return vectors >= 2048 ? 256 : 64;
}

/** How a row of `length` floats is read: as vec4 when the length allows it (4x fewer loads), else scalars. */
export function rowLayout(length: number): { width: 1 | 4; vectors: number } {
  const width: 1 | 4 = length % 4 === 0 ? 4 : 1;
  return { width, vectors: length / width };
}

/** WGSL: `V`, what a row is read as (vec4<f32> or f32), with its horizontal max and sum. */
export function rowVector(width: 1 | 4): string {
  return width === 4
    ? `alias V = vec4<f32>;
fn hmax(v: V) -> f32 { return max(max(v.x, v.y), max(v.z, v.w)); }
fn hsum(v: V) -> f32 { return dot(v, V(1.0)); }`
    : `alias V = f32;
fn hmax(v: V) -> f32 { return v; }
fn hsum(v: V) -> f32 { return v; }`;
}

/** WGSL: LOWEST, the start of a running max: exp(LOWEST - m) is 0 without producing NaN (as -inf would). */
export const LOWEST_WGSL = "const LOWEST = -0x1.fffffep+127f; // lowest finite f32";

/** WGSL: the workgroup size constant that rowMain and workgroupReduce use. */
export const lanesWgsl = (lanes: number): string => `const LANES = ${lanes}u;`;

/**
 * WGSL: `fn name(value: type, lane: u32) -> type`, called by every lane of the workgroup with its own
 * value; returns to every lane the combination of all LANES values by `combine` (a WGSL expression of two
 * values), in a tree in workgroup memory `scratch`. It has barriers: call it in uniform control flow.
 */
export function workgroupReduce(opts: {
  name: string;
  type: string;
  combine: (a: string, b: string) => string;
  scratch: string;
}): string {
  const { name, type, combine, scratch } = opts;
  return /* wgsl */ `
var<workgroup> ${scratch}: array<${type}, LANES>;

fn ${name}(value: ${type}, lane: u32) -> ${type} {
  ${scratch}[lane] = value;
  workgroupBarrier();
  for (var stride = LANES / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) { ${scratch}[lane] = ${combine(`${scratch}[lane]`, `${scratch}[lane + stride]`)}; }
    workgroupBarrier();
  }
  return ${scratch}[0];
}
`;
}

/** WGSL: `workgroupSum(value, lane)`, the sum over the workgroup's lanes (see workgroupReduce). */
export const WORKGROUP_SUM = workgroupReduce({
  name: "workgroupSum",
  type: "f32",
  combine: (a, b) => `${a} + ${b}`,
  scratch: "partial",
});

/**
 * WGSL: the opening of `main` for one workgroup of LANES lanes per row (or row chunk): `lane`, and `index`
 * (the name given), the workgroup's number; past 65535 rows the grid spills into y (see `grid`).
 */
export const rowMain = (index: string): string => /* wgsl */ `@compute @workgroup_size(LANES)
fn main(@builtin(workgroup_id) group: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) lane: u32) {
  let ${index} = group.x + group.y * groups.x;`;

/**
 * WGSL: rowMain for one workgroup per row of a batch of rows bound as a window (see binding-windows.ts):
 * `row` within the batch, `base`, the index of its first vector. Needs params.rows, params.vectors and
 * params.shift (where the window's first row starts).
 */
export const ROW_WINDOW_MAIN = /* wgsl */ `${rowMain("row")}
  if (row >= params.rows) { return; }
  let base = params.shift + row * params.vectors;`;
