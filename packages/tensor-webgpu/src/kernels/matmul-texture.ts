/**
 * The "texture" matmul variant, for software adapters (lavapipe): operands staged in rgba32float (or
 * rgba16float) storage textures, A shared across a subgroup by broadcast. matmul.ts describes the scheme
 * and chooses it (textureDecodes is part of that rule).
 */
import type { GpuContext } from "../gpu/context.js";
import type { PooledTexture } from "../gpu/texture-pool.js";
import { enableFor, type FloatStorage } from "./elementwise.js";
import {
  type Axis,
  bindingOverflow,
  type Chunk,
  code,
  epilogueOf,
  limits,
  type MatmulArgs,
  type Problem,
  params,
  plan,
  source,
  spans,
  storeFn,
  windowFor,
} from "./matmul-problem.js";
import { textureLanes } from "./texture-lanes.js";

const TEX_ROWS = 16; // output rows per workgroup (and vec4 accumulators per lane)
// Longer k is split into accumulating chunks: a workgroup's A rows and B columns then stay in the CPU's
// L2 cache (measured on lavapipe: [512x4864]·[4864x896]ᵀ 33 -> 46 GFLOP/s; no change at 2048³).
const TEX_MAX_K = 1280;
const COPY_SRC = 0x4;
/** Texture format the operands of each element type are staged in (f16 operands stay halves). */
const TEXTURE_FORMAT: Record<FloatStorage, GPUTextureFormat> = { f32: "rgba32float", f16: "rgba16float" };

/**
 * Copies a stored row-major matrix (per batch: rows x cols at base + batch·batchStride, row stride ld) into
 * texels of 4 consecutive columns; zero outside rows x cols. For operands a plain copyBufferToTexture cannot
 * move (row stride not a multiple of 64 floats, k not a multiple of 4, misaligned start, no COPY_SRC).
 */
const repackKernel = (storage: FloatStorage, whole: boolean) => /* wgsl */ `${enableFor(storage)}
struct Params { rows: u32, cols: u32, texelsPerRow: u32, rowsPerBatch: u32, texels: u32, base: u32, batchStride: u32, ld: u32 }
@group(0) @binding(0) var<storage, read> src: array<${whole ? `vec4<${storage}>` : storage}>;
@group(0) @binding(1) var dst: texture_storage_2d<${TEXTURE_FORMAT[storage]}, write>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let t = id.x + id.y * groups.x * 64u;
  if (t >= p.texels) { return; }
  let x = t % p.texelsPerRow;
  let y = t / p.texelsPerRow;
  let row = y % p.rowsPerBatch;
  let rowStart = p.base + (y / p.rowsPerBatch) * p.batchStride + min(row, p.rows - 1u) * p.ld;
${
  whole
    ? `  // Rows of whole vectors: one load a texel.
  let inside = row < p.rows && x * 4u < p.cols;
  let v = select(vec4f(0.0), vec4f(src[(rowStart + min(x * 4u, p.cols - 4u)) / 4u]), inside);`
    : `  var v = vec4f(0.0);
  for (var i = 0u; i < 4u; i++) {
    let col = x * 4u + i;
    v[i] = select(0.0, f32(src[rowStart + min(col, p.cols - 1u)]), row < p.rows && col < p.cols);
  }`
}
  textureStore(dst, vec2u(x, y), v);
}`;

/**
 * The multiply for `lanes`-wide subgroups. Textures mirror the stored layouts: A as [m][k/4] texels, or
 * [k][m/4] when transA; B as [k][n/4], or [n][k/4] when transB. Per 4 k-steps each lane loads rows/lanes
 * texels of A and 4 of B, then does rows x 4 x 4 multiply-adds.
 */
function textureKernel(lanes: number, transA: boolean, transB: boolean, storage: FloatStorage): string {
  const format = TEXTURE_FORMAT[storage];
  const rows = Math.max(TEX_ROWS, lanes);
  const loadsA = rows / lanes;
  const comp = ["x", "y", "z", "w"];
  const body: string[] = [];
  // aValue(r, q): A[row0 + r][4·kt + q], broadcast from the lane that loaded it.
  let aValue: (r: number, q: number) => string;
  if (!transA) {
    // Lane j loads row row0 + j + lanes·g: 4 consecutive k of one row.
    for (let g = 0; g < loadsA; g++) {
      body.push(`    let a${g} = textureLoad(aTex, vec2u(kt, aRow + row0 + lane + ${g * lanes}u));`);
    }
    aValue = (r, q) => `subgroupBroadcast(a${Math.floor(r / lanes)}.${comp[q]}, ${r % lanes}u)`;
  } else {
    // The tile needs rows/4 texels (4 rows each) at each of 4 k; texel t = lane + lanes·g is quad t % quads
    // at k offset t / quads.
    const quads = rows / 4;
    for (let g = 0; g < loadsA; g++) {
      body.push(`    let t${g} = lane + ${g * lanes}u;`);
      body.push(
        `    let a${g} = textureLoad(aTex, vec2u(row0 / 4u + t${g} % ${quads}u, aRow + kt * 4u + t${g} / ${quads}u));`,
      );
    }
    aValue = (r, q) => {
      const t = q * quads + Math.floor(r / 4);
      return `subgroupBroadcast(a${Math.floor(t / lanes)}.${comp[r % 4]}, ${t % lanes}u)`;
    };
  }
  // b{q}: B[4·kt + q][4·colTexel .. + 3].
  if (!transB) {
    for (let q = 0; q < 4; q++)
      body.push(`    let b${q} = textureLoad(bTex, vec2u(colTexel, bRow + kt * 4u + ${q}u));`);
  } else {
    // Column c's texel holds 4 consecutive k; regrouping components is free (one register each).
    for (let i = 0; i < 4; i++)
      body.push(`    let c${i} = textureLoad(bTex, vec2u(kt, bRow + colTexel * 4u + ${i}u));`);
    for (let q = 0; q < 4; q++)
      body.push(`    let b${q} = vec4f(c0.${comp[q]}, c1.${comp[q]}, c2.${comp[q]}, c3.${comp[q]});`);
  }
  for (let q = 0; q < 4; q++) {
    for (let r = 0; r < rows; r++) body.push(`    acc${r} += ${aValue(r, q)} * b${q};`);
  }
  const accs = Array.from({ length: rows }, (_, r) => `acc${r}`);
  return /* wgsl */ `${enableFor(storage)}enable subgroups;
struct Params {
  m: u32, n: u32, k4: u32, aRowsPerBatch: u32, bRowsPerBatch: u32,
  outBase: u32, outBatchStride: u32, ldo: u32, accumulate: u32, hasBias: u32, biasBase: u32,
  hasAddend: u32, addendBase: u32, alpha: f32,
}
@group(0) @binding(0) var aTex: texture_storage_2d<${format}, read>;
@group(0) @binding(1) var bTex: texture_storage_2d<${format}, read>;
@group(0) @binding(2) var<storage, read_write> out: array<${storage}>;
@group(0) @binding(3) var<storage, read> bias: array<${storage}>;
@group(0) @binding(4) var<storage, read> addend: array<${storage}>;
@group(0) @binding(5) var<uniform> p: Params;
${storeFn(storage)}

@compute @workgroup_size(${lanes})
fn main(@builtin(subgroup_invocation_id) lane: u32, @builtin(workgroup_id) wg: vec3u) {
  let batch = wg.z;
  let row0 = wg.y * ${rows}u;
  let colTexel = wg.x * ${lanes}u + lane; // this lane's output columns: 4·colTexel .. 4·colTexel + 3
  let aRow = batch * p.aRowsPerBatch;
  let bRow = batch * p.bRowsPerBatch;
${accs.map((acc) => `  var ${acc} = vec4f(0.0);`).join("\n")}
  for (var kt = 0u; kt < p.k4; kt++) {
${body.join("\n")}
  }
  let col0 = colTexel * 4u;
  let outBase = p.outBase + batch * p.outBatchStride;
  let accs = array<vec4f, ${rows}>(${accs.join(", ")});
  for (var i = 0u; i < ${rows}u; i++) {
    let row = row0 + i;
    if (row >= p.m) { break; }
    for (var j = 0u; j < 4u; j++) {
      if (col0 + j < p.n) { storeOut(outBase + row * p.ldo + col0 + j, col0 + j, accs[i][j]); }
    }
  }
}`;
}

const roundUp = (x: number, multiple: number) => Math.ceil(x / multiple) * multiple;

/**
 * One operand of a chunk as stored: per batch a rows x cols block at element `origin + batch·batchStride`
 * with row stride ld, and the texture block it goes to (rowsPerBatch texture rows of `width` texels; all
 * batches when batchStride > 0, else one block read by every batch).
 */
interface OperandBlock {
  rows: number;
  cols: number;
  ld: number;
  origin: number;
  batchStride: number;
  batches: number;
  rowsPerBatch: number;
  width: number;
  /** The stored rows run along k: rows past `rows` must read as zero, so they cannot be left stale. */
  kAlongRows: boolean;
}

function textureBlocks(p: Problem, c: Chunk, lanes: number) {
  const tileRows = Math.max(TEX_ROWS, lanes);
  const mPad = roundUp(c.m, tileRows);
  const kPad = roundUp(c.k, 4);
  const nPad = roundUp(c.n, 4 * lanes);
  const aBatches = p.aBatchStride === 0 ? 1 : c.batches;
  const bBatches = p.bBatchStride === 0 ? 1 : c.batches;
  const a: OperandBlock = p.transA
    ? {
        rows: c.k,
        cols: c.m,
        ld: p.m,
        origin: c.k0 * p.m + c.m0,
        rowsPerBatch: kPad,
        width: mPad / 4,
        kAlongRows: true,
        batchStride: p.aBatchStride,
        batches: aBatches,
      }
    : {
        rows: c.m,
        cols: c.k,
        ld: p.k,
        origin: c.m0 * p.k + c.k0,
        rowsPerBatch: mPad,
        width: kPad / 4,
        kAlongRows: false,
        batchStride: p.aBatchStride,
        batches: aBatches,
      };
  const b: OperandBlock = p.transB
    ? {
        rows: c.n,
        cols: c.k,
        ld: p.k,
        origin: c.n0 * p.k + c.k0,
        rowsPerBatch: nPad,
        width: kPad / 4,
        kAlongRows: false,
        batchStride: p.bBatchStride,
        batches: bBatches,
      }
    : {
        rows: c.k,
        cols: c.n,
        ld: p.n,
        origin: c.k0 * p.n + c.n0,
        rowsPerBatch: kPad,
        width: nPad / 4,
        kAlongRows: true,
        batchStride: p.bBatchStride,
        batches: bBatches,
      };
  a.origin += c.batch0 * p.aBatchStride;
  b.origin += c.batch0 * p.bBatchStride;
  return { tileRows, mPad, kPad, nPad, a, b };
}

const textureBytes = (block: OperandBlock) => block.width * block.batches * block.rowsPerBatch * 16;

/**
 * Whether copyBufferToTexture can fill the block: rows 256-byte aligned (ld a multiple of 64 floats or
 * 128 halves),
 * whole texels, a 16-byte aligned start, and no k padding to zero. Rows and texels past the block along m
 * or n keep stale values: they only reach outputs that are never stored.
 */
function copyable(buffer: GPUBuffer, block: OperandBlock, bytes: number, format: GPUTextureFormat): boolean {
  return (
    (buffer.usage & COPY_SRC) !== 0 &&
    (format === "rgba32float" ? bytes === 4 : bytes === 2) && // a copy cannot convert
    (block.ld * bytes) % 256 === 0 &&
    block.cols % 4 === 0 &&
    block.origin % 4 === 0 &&
    block.batchStride % 4 === 0 &&
    (!block.kAlongRows || block.rows % 4 === 0)
  );
}

export function runTexture(ctx: GpuContext, args: MatmulArgs, p: Problem): void {
  const lanes = textureLanes(ctx);
  if (lanes === undefined) {
    throw new Error(
      'matmul: the "texture" variant needs subgroups of a known size (not available on this adapter)',
    );
  }
  const { textureDimension: maxDim, textureBytes: maxBytes, workgroups: maxGroups } = limits(ctx);
  const overflow = (c: Chunk): Axis | undefined => {
    const fromBindings = bindingOverflow(ctx, p, c);
    if (fromBindings) return fromBindings;
    const t = textureBlocks(p, c, lanes);
    const splittable = (axis: Axis) => (axis === "batch" ? c.batches : c[axis]) >= 2;
    for (const [block, other] of [
      [t.a, "m"],
      [t.b, "n"],
    ] as const) {
      const height = block.batches * block.rowsPerBatch;
      const bytes = textureBytes(block);
      const repackGroups = Math.ceil((block.width * height) / 64 / maxGroups); // repack grid is 2-D
      if (
        c.batches > 1 &&
        block.batches > 1 &&
        (height > maxDim || bytes > maxBytes || repackGroups > maxGroups)
      )
        return "batch";
      // Split along the axis that shrinks the offending dimension: texture rows or texels per row.
      const rowsAxis: Axis = block.kAlongRows ? "k" : other;
      const widthAxis: Axis = block.kAlongRows ? other : "k";
      if (height > maxDim) return rowsAxis;
      if (block.width > maxDim) return widthAxis;
      if (bytes > maxBytes || repackGroups > maxGroups) {
        const [first, second] =
          block.rowsPerBatch >= block.width * 4 ? [rowsAxis, widthAxis] : [widthAxis, rowsAxis];
        return splittable(first) ? first : second;
      }
    }
    if (c.k > TEX_MAX_K) return "k";
    if (c.batches > maxGroups) return "batch";
    if (t.nPad / (4 * lanes) > maxGroups) return "n";
    if (t.mPad / t.tileRows > maxGroups) return "m";
    return undefined;
  };

  const repackPipeline = (whole: boolean) =>
    ctx.pipeline(
      `matmul repack ${p.dtype}${whole ? " vec4" : ""}`,
      source(`repack ${p.dtype} ${whole}`, () => repackKernel(p.dtype, whole)),
    );
  const multiply = ctx.pipeline(
    `matmul texture L${lanes} ${code(p)}`,
    source(`texture ${lanes} ${code(p)}`, () => textureKernel(lanes, p.transA, p.transB, p.dtype)),
  );
  const fill = (buffer: GPUBuffer, block: OperandBlock, target: PooledTexture) => {
    if (copyable(buffer, block, p.bytes, TEXTURE_FORMAT[p.dtype])) {
      for (let batch = 0; batch < block.batches; batch++) {
        ctx.copyToTexture(
          {
            buffer,
            offset: (block.origin + batch * block.batchStride) * p.bytes,
            bytesPerRow: block.ld * p.bytes,
          },
          target.texture,
          { x: 0, y: batch * block.rowsPerBatch },
          [block.cols / 4, block.rows],
        );
      }
      return;
    }
    const last = (block.batches - 1) * block.batchStride + (block.rows - 1) * block.ld + block.cols;
    const window = windowFor(ctx, buffer, [block.origin, block.origin + last], p.bytes);
    const texels = block.width * block.batches * block.rowsPerBatch;
    // Every row starting on a whole vector and holding whole vectors: vec4 loads.
    const whole = [window.base, block.ld, block.batchStride, block.cols].every((n) => n % 4 === 0);
    ctx.dispatch(
      repackPipeline(whole),
      [window.binding, { textureView: target.view }],
      params([
        block.rows,
        block.cols,
        block.width,
        block.rowsPerBatch,
        texels,
        window.base,
        block.batchStride,
        block.ld,
      ]),
      grid2(Math.ceil(texels / 64), maxGroups),
    );
  };
  const textures = ctx.textures;
  for (const c of plan(p, overflow)) {
    const t = textureBlocks(p, c, lanes);
    const aTexture = textures.acquire(
      TEXTURE_FORMAT[p.dtype],
      t.a.width,
      t.a.batches * t.a.rowsPerBatch,
      "matmul a",
    );
    const bTexture = textures.acquire(
      TEXTURE_FORMAT[p.dtype],
      t.b.width,
      t.b.batches * t.b.rowsPerBatch,
      "matmul b",
    );
    fill(args.a, t.a, aTexture);
    fill(args.b, t.b, bTexture);
    const out = windowFor(ctx, args.out, spans(p, c).out, p.bytes);
    const accumulate = p.accumulate || c.k0 > 0;
    const epilogue = epilogueOf(ctx, args, p, c);
    ctx.dispatch(
      multiply,
      [{ textureView: aTexture.view }, { textureView: bTexture.view }, out.binding, ...epilogue.bindings],
      params(
        [
          c.m,
          c.n,
          t.kPad / 4,
          t.a.batches > 1 ? t.a.rowsPerBatch : 0,
          t.b.batches > 1 ? t.b.rowsPerBatch : 0,
          out.base,
          p.m * p.n,
          p.n,
          accumulate ? 1 : 0,
          ...epilogue.params,
        ],
        [p.alpha],
      ),
      [t.nPad / (4 * lanes), t.mPad / t.tileRows, c.batches],
    );
    // Recorded: later commands on the context's encoder may reuse them (WebGPU orders the accesses).
    textures.release(aTexture);
    textures.release(bTexture);
  }
}

function grid2(count: number, max: number): [number, number] {
  if (count <= max) return [Math.max(count, 1), 1];
  const y = Math.ceil(count / max);
  return [Math.ceil(count / y), y];
}

/**
 * Decoding's x · Wᵀ with 8-32 rows (a batch of sequences, one token each), below the size rule: with
 * rows of whole 256 bytes (k a multiple of 64) both operands are copied into textures, not repacked, and
 * the texture variant was 1.1-2.3x faster than "buffer" on lavapipe from 16 x 64 x 128 and, with 8 rows,
 * from 256 columns (the embedded model's q/k/v/o, gate/up and head); with 32 rows also unaligned (1.4x
 * at 32 x 128 x 344). Both variants sum each output over k in the same order, so with k in one chunk
 * (TEX_MAX_K) the results are the same bits.
 */
export function textureDecodes(args: Pick<MatmulArgs, "m" | "n" | "k" | "transA" | "transB">): boolean {
  const { m, n, k } = args;
  if (args.transA || !args.transB || k > TEX_MAX_K) return false;
  const size = m * n * k;
  if (m >= 32) return size >= 2 ** 18;
  return k % 64 === 0 && ((m >= 16 && size >= 2 ** 17) || (m >= 8 && n >= 256));
}

/** Whether the "texture" variant can run on this context (subgroups of a known size). */
export function textureVariantAvailable(ctx: GpuContext): boolean {
  return textureLanes(ctx) !== undefined;
}
