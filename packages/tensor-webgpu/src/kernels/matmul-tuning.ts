/**
 * Measures which matmul kernel is fastest for a problem on this adapter and keeps the winner in the
 * context's table (matmul-choices.ts), so that `matmul` runs it from then on. Every variant and "blocked"
 * tile that can run the problem is timed (tuning-timer.ts) on operands filled with a fixed pattern of
 * small values: data changes a GPU's power draw, and zeros would flatter every kernel. The fastest wins,
 * unless the fixed rule's kernel is within REPLACE_MARGIN of it.
 */
import type { GpuContext } from "../gpu/context.js";
import { fixedRuleVariant, matmul, subgroupMatrixShape, textureVariantAvailable } from "./matmul.js";
import {
  type CandidateTime,
  choiceName,
  enableMatmulTuning,
  type MatmulChoice,
  type MatmulShape,
  matmulShapeKey,
  type TunedMatmul,
} from "./matmul-choices.js";
import { BLOCKED_TILES, blockedTileBytes, MATVEC_MAX_ROWS } from "./matmul-gpu.js";
import { chooseWinner, type TimingOptions, type TuningPassOptions, timeCandidates } from "./tuning-timer.js";

/** Every kernel that can run this problem on this context. */
export function matmulCandidates(ctx: GpuContext, shape: MatmulShape): MatmulChoice[] {
  const candidates: MatmulChoice[] = [{ variant: "buffer" }, { variant: "tiled" }];
  if (shape.m <= MATVEC_MAX_ROWS && !shape.transA && shape.transB) candidates.push({ variant: "matvec" });
  if (ctx.info.adapter.isSoftware) {
    // Lavapipe runs workgroup-memory kernels lane by lane: "blocked" is never near the texture variant.
    if (textureVariantAvailable(ctx)) candidates.push({ variant: "texture" });
    return candidates;
  }
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  for (const tile of BLOCKED_TILES)
    if (blockedTileBytes(tile) <= limit) candidates.push({ variant: "blocked", blockedTile: tile });
  if (shape.dtype === "f16" && subgroupMatrixShape(ctx)) candidates.push({ variant: "subgroup-matrix" });
  return candidates;
}

export interface TuneOptions extends TuningPassOptions {
  /** Candidates to try instead of matmulCandidates' (tests, benchmarks). */
  candidates?: (shape: MatmulShape) => MatmulChoice[];
}

const STORAGE = 0x80 | 0x8; // STORAGE | COPY_DST
/** Bytes written per call while filling an operand. */
const FILL_CHUNK = 1 << 22;

function filledBuffer(ctx: GpuContext, elements: number, dtype: MatmulShape["dtype"]): GPUBuffer {
  const bytes = Math.max(4, Math.ceil((elements * (dtype === "f16" ? 2 : 4)) / 4) * 4);
  const buffer = ctx.device.createBuffer({ size: bytes, usage: STORAGE, label: "matmul tuning operand" });
  // A fixed pattern: f32 values in [-0.5, 0.5), or two halves in [0.5, 1) per 32-bit word.
  const words = new Uint32Array(Math.min(bytes, FILL_CHUNK) / 4);
  const f32 = new Float32Array(words.buffer);
  for (let i = 0; i < words.length; i++) {
    const value = ((i * 7919) % 1000) / 1000 - 0.5;
    if (dtype === "f32") f32[i] = value;
    else words[i] = 0x3800_3800 ^ (i & 0x03ff_03ff); // pairs of halves in [0.5, 1), varying mantissas
  }
  for (let offset = 0; offset < bytes; offset += words.byteLength) {
    const size = Math.min(words.byteLength, bytes - offset);
    ctx.device.queue.writeBuffer(buffer, offset, words, 0, size / 4);
  }
  return buffer;
}

/** Measure every candidate on one problem; the fastest first. Candidates that fail to run are left out. */
export async function timeMatmulCandidates(
  ctx: GpuContext,
  shape: MatmulShape,
  candidates: MatmulChoice[],
  options: TimingOptions = {},
): Promise<(CandidateTime & { choice: MatmulChoice })[]> {
  const { batch, m, n, k, dtype } = shape;
  const a = filledBuffer(ctx, batch * m * k, dtype);
  const b = filledBuffer(ctx, batch * k * n, dtype);
  const out = filledBuffer(ctx, batch * m * n, dtype);
  const args = { a, b, out, batch, m, n, k, transA: shape.transA, transB: shape.transB, dtype };
  try {
    const timed = await timeCandidates(
      ctx,
      candidates,
      (choice) => matmul(ctx, { ...args, ...choice }),
      options,
    );
    return timed.map(({ candidate, ms }) => ({ choice: candidate, kernel: choiceName(candidate), ms }));
  } finally {
    await ctx.sync().catch(() => undefined);
    for (const buffer of [a, b, out]) buffer.destroy();
  }
}

/**
 * Measure the candidates of each problem (by default the groups `matmul` has seen unmeasured since
 * tuning was turned on) and keep each winner in the context's table. Turns tuning on for the context.
 */
export async function tuneMatmuls(
  ctx: GpuContext,
  shapes?: readonly MatmulShape[],
  options: TuneOptions = {},
): Promise<TunedMatmul[]> {
  const table = enableMatmulTuning(ctx);
  const todo = shapes ?? table.pendingShapes();
  const tuned: TunedMatmul[] = [];
  for (const [index, shape] of todo.entries()) {
    const key = matmulShapeKey(shape);
    options.onProblem?.(index, todo.length, key);
    const candidates = options.candidates?.(shape) ?? matmulCandidates(ctx, shape);
    const timed = await timeMatmulCandidates(ctx, shape, candidates, options);
    const fixed = fixedRuleVariant(ctx, shape);
    const choice = chooseWinner(
      timed.map((t) => ({ candidate: t.choice, ms: t.ms })),
      (c) => c.variant === fixed && !c.blockedTile,
    );
    if (!choice) throw new Error(`matmul tuning: no kernel could run ${key} on this adapter`);
    const entry: TunedMatmul = {
      key,
      shape: { ...shape },
      choice,
      candidates: timed.map(({ kernel, ms }) => ({ kernel, ms })),
    };
    table.set(entry);
    tuned.push(entry);
  }
  options.onProblem?.(todo.length, todo.length, "");
  return tuned;
}
