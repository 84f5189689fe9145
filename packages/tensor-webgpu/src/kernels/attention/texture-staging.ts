/**
 * Where the software attention kernels (texture-forward.ts, texture-backward.ts) run, and how their
 * operands get into textures: each q-like or k-like tensor ([batch, rows, heads, headDim], rows of
 * heads·headDim/4 texels) is copied into a scratch texture of its elements (rgba32float, or rgba16float
 * for halves; the kernels read either as f32), a chunk of whole sequences at a time when the batch is
 * taller than the device's texture limit, and each chunk is one dispatch.
 */
import type { AttentionDims } from "../../core/attention.js";
import { type GpuContext, grid, type Resource } from "../../gpu/context.js";
import { type FloatStorage, storageBytes } from "../elementwise.js";
import { textureLanes } from "../texture-lanes.js";
import { cachedCode, stagingFormat, storageWgsl } from "./shared.js";
import { attentionParams, attentionTuning, tileProfile } from "./tiles.js";

/**
 * Output vec4 columns per lane at most (headDim ≤ 64 with 8 lanes): beyond that the per-lane
 * accumulators outgrow what lavapipe's JIT handles quickly, and the tiled kernels run instead.
 */
const MAX_COLUMNS_PER_LANE = 2;

let testTextureRows: number | undefined;

/** Pretend the device's textures hold at most `rows` rows (to test chunking on small problems); no argument restores it. */
export function limitTextureRowsForTesting(rows?: number): void {
  testTextureRows = rows;
}

/** Texture rows the device allows (or the test limit). */
function maxTextureRows(ctx: GpuContext): number {
  return Math.min(ctx.device.limits.maxTextureDimension2D, testTextureRows ?? Number.POSITIVE_INFINITY);
}

/** The subgroup width the texture kernels run with for `dims` on this context, or undefined (tiled kernels). */
export function textureAttentionLanes(ctx: GpuContext, dims: AttentionDims): number | undefined {
  if (!attentionTuning.textures || tileProfile(ctx) !== "software") return undefined;
  const lanes = textureLanes(ctx);
  if (lanes === undefined || ctx.device.limits.maxStorageTexturesPerShaderStage < 4) return undefined;
  const d4 = dims.headDim / 4;
  const rows = Math.max(dims.seqLen, dims.kvCapacity ?? dims.kvLen);
  const fits = rows <= maxTextureRows(ctx) && dims.numHeads * d4 <= ctx.device.limits.maxTextureDimension2D;
  return fits && Math.ceil(d4 / lanes) <= MAX_COLUMNS_PER_LANE ? lanes : undefined;
}

/** A tensor staged as a texture: `rows` rows per sequence of `heads` heads. */
export interface TextureSource {
  buffer: GPUBuffer;
  rows: number;
  heads: number;
}

const COPY_SRC = 0x4;

/** Copies flat vec4s into a texture `width` texels wide: for sources whose rows a buffer copy cannot take. */
const repackCode = (dtype: FloatStorage) => {
  const storage = storageWgsl(dtype);
  return /* wgsl */ `${storage.enable}
struct Params { width: u32, texels: u32, base: u32 }
@group(0) @binding(0) var<storage, read> src: array<${storage.vec4}>;
@group(0) @binding(1) var dst: texture_storage_2d<${stagingFormat(dtype)}, write>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let t = id.x + id.y * groups.x * 64u;
  if (t >= params.texels) { return; }
  textureStore(dst, vec2u(t % params.width, t / params.width), ${storage.widen("src[params.base + t]")});
}`;
};

/**
 * Records the copy of sequences [b0, b0 + count) of `source` (of `dtype` elements) into a scratch texture
 * of the same elements, and returns it.
 */
function stage(
  ctx: GpuContext,
  source: TextureSource,
  headDim: number,
  b0: number,
  count: number,
  dtype: FloatStorage,
) {
  const width = (source.heads * headDim) / 4;
  const height = count * source.rows;
  const texture = ctx.textures.acquire(stagingFormat(dtype), width, height, "attention operand");
  const firstTexel = b0 * source.rows * width;
  const texelBytes = 4 * storageBytes(dtype);
  const bytesPerRow = width * texelBytes;
  if ((source.buffer.usage & COPY_SRC) !== 0 && bytesPerRow % 256 === 0) {
    ctx.copyToTexture(
      { buffer: source.buffer, offset: firstTexel * texelBytes, bytesPerRow },
      texture.texture,
      { x: 0, y: 0 },
      [width, height],
    );
  } else {
    const texels = width * height;
    ctx.dispatch(
      ctx.pipeline(
        `attention repack${dtype === "f16" ? " (f16)" : ""}`,
        cachedCode(`repack:${dtype}`, () => repackCode(dtype)),
      ),
      [source.buffer, { textureView: texture.view }],
      new Uint32Array([width, texels, firstTexel]),
      grid(Math.ceil(texels / 64)),
    );
  }
  return texture;
}

/** One texture kernel's dispatch: its WGSL (generated once per process under `key`), its storage bindings and grid. */
export interface TexturePass {
  name: string;
  key: string;
  /** `dtype`: the elements of the pass's q-like outputs. */
  code: (lanes: number, d4: number, dtype: FloatStorage) => string;
  /** The block sizes, for the Params block's tileRows and tileKeys. */
  tile: { bq: number; bk: number };
  /** Bound after the staged textures; the Params block follows them. */
  buffers: Resource[];
  /** x and y of the grid (z is the chunk's sequences). */
  workgroups: [number, number];
}

/**
 * Records texture kernels over the whole batch: per chunk of sequences, stages `sources` once (bindings
 * 0..n-1 of every pass) and dispatches each pass in order. Sources and q-like outputs hold `dims.dtype`.
 */
export function dispatchTextureAttention(
  ctx: GpuContext,
  dims: AttentionDims,
  flags: number,
  lanes: number,
  sources: TextureSource[],
  passes: TexturePass[],
): void {
  const d4 = dims.headDim / 4;
  const dtype = dims.dtype ?? "f32";
  const pipelines = passes.map((pass) =>
    ctx.pipeline(
      `attention ${pass.name} (texture, headDim ${dims.headDim}${dtype === "f16" ? ", f16" : ""})`,
      cachedCode(`${pass.key}:${lanes}:${d4}:${dtype}`, () => pass.code(lanes, d4, dtype)),
    ),
  );
  const tallest = Math.max(...sources.map((s) => s.rows));
  const perChunk = Math.floor(maxTextureRows(ctx) / tallest);
  for (let b0 = 0; b0 < dims.batch; b0 += perChunk) {
    const count = Math.min(perChunk, dims.batch - b0);
    const textures = sources.map((source) => stage(ctx, source, dims.headDim, b0, count, dtype));
    const views = textures.map((t) => ({ textureView: t.view }));
    for (const [i, pass] of passes.entries()) {
      ctx.dispatch(pipelines[i]!, [...views, ...pass.buffers], attentionParams(dims, flags, pass.tile, b0), [
        pass.workgroups[0],
        pass.workgroups[1],
        count,
      ]);
    }
    // Later commands may reuse them; the dispatches above are recorded first.
    for (const texture of textures) ctx.textures.release(texture);
  }
}
