/**
 * Measures which matmul kernel is fastest for a problem on this adapter and keeps the winner in the
 * context's table (matmul-choices.ts), so that `matmul` runs it from then on. Every variant and "blocked"
 * tile that can run the problem is timed (tuning-timer.ts) on operands filled with tuning-check.ts's
 * pattern. Before it is timed, each candidate's product is compared with the plain "buffer" kernel's
 * (resultMismatch): a kernel that computes wrongly on this driver is left out, whatever its speed. The fastest of the rest wins, unless
 * the fixed rule's kernel is within REPLACE_MARGIN of it.
 */
import { float16ArrayToFloat32 } from "../core/half-float.js";
import type { GpuContext } from "../gpu/context.js";
import { fixedRuleChoice, matmul, subgroupMatrixShape, textureVariantAvailable } from "./matmul.js";
import { blockedWideBytes, wideFits } from "./matmul-blocked-wide.js";
import {
  type CandidateTime,
  choiceName,
  enableMatmulTuning,
  type MatmulChoice,
  type MatmulShape,
  matmulShapeKey,
  type RejectedKernel,
  type TunedMatmul,
} from "./matmul-choices.js";
import {
  BLOCKED_TILES,
  blockedTileBytes,
  directFits,
  MATRIX_TILES,
  MATVEC_BLOCKED_MAX_ROWS,
  packedLayout,
  pipelinedDepth,
  pipelinedFits,
} from "./matmul-gpu.js";
import { patternBuffer, poison, resultMismatch } from "./tuning-check.js";
import { type TimingOptions, type TuningPassOptions, timeCandidates, winnerOrFail } from "./tuning-timer.js";

/** Every kernel that can run this problem on this context. */
export function matmulCandidates(ctx: GpuContext, shape: MatmulShape): MatmulChoice[] {
  const candidates: MatmulChoice[] = [{ variant: "buffer" }, { variant: "tiled" }];
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  if (shape.m <= MATVEC_BLOCKED_MAX_ROWS && !shape.transA && shape.transB)
    candidates.push({ variant: "matvec" });
  if (ctx.info.adapter.isSoftware) {
    // Lavapipe runs workgroup-memory kernels lane by lane: "blocked" is never near the texture variant.
    if (textureVariantAvailable(ctx)) candidates.push({ variant: "texture" });
  } else {
    for (const tile of BLOCKED_TILES)
      if (blockedTileBytes(tile) <= limit) candidates.push({ variant: "blocked", blockedTile: tile });
    if (wideFits({ ...packedLayout(shape), dtype: shape.dtype }))
      for (const tile of BLOCKED_TILES)
        if (blockedWideBytes(tile) <= limit) candidates.push({ variant: "blocked-wide", blockedTile: tile });
  }
  // Matrix units: a card's, or emulated ones (DeviceOptions.emulateSubgroupMatrices) on any adapter.
  const units = shape.dtype === "f16" ? subgroupMatrixShape(ctx) : undefined;
  if (units) {
    candidates.push({ variant: "subgroup-matrix" });
    if (directFits(units, shape.m, shape.n, shape.k))
      for (const matrixTile of MATRIX_TILES) {
        candidates.push({ variant: "subgroup-matrix-direct", matrixTile });
        candidates.push({ variant: "subgroup-matrix-direct", matrixTile, directPrefetch: true });
      }
    if (pipelinedFits(packedLayout(shape)))
      for (const matrixTile of MATRIX_TILES)
        if (pipelinedDepth(matrixTile, units, limit)) {
          candidates.push({ variant: "subgroup-matrix-pipelined", matrixTile });
          candidates.push({ variant: "subgroup-matrix-pipelined", matrixTile, rotatedStores: true });
          if (ctx.info.features.subgroupMatrixViews)
            candidates.push({ variant: "subgroup-matrix-pipelined", matrixTile, wideStores: true });
        }
  }
  return candidates;
}

export interface TuneOptions extends TuningPassOptions {
  /** Candidates to try instead of matmulCandidates' (tests, benchmarks). */
  candidates?: (shape: MatmulShape) => MatmulChoice[];
}

/**
 * Most output elements a check reads back. A larger product (a language-model head: 2,048 rows of 151,936
 * logits, 1.2 GB) is checked on a smaller problem of its kind instead: the same kernel code, element type
 * and transposes, with each dimension over 512 cut to 256 plus its remainder modulo 256 (so ragged edges
 * and whole-fragment alignment stay as they were), and at most two batches.
 */
export const CHECK_MAX_ELEMENTS = 1 << 22;

/** The problem a candidate's product is checked on (the problem itself when its output is small enough). */
export function checkShapeFor(shape: MatmulShape): MatmulShape {
  if (shape.batch * shape.m * shape.n <= CHECK_MAX_ELEMENTS) return shape;
  const cut = (x: number) => (x <= 512 ? x : 256 + (x % 256));
  return { ...shape, batch: Math.min(shape.batch, 2), m: cut(shape.m), n: cut(shape.n) };
}

const describe = (s: MatmulShape) => `${s.batch > 1 ? `${s.batch} x ` : ""}${s.m}x${s.n}x${s.k}`;

/** Operands filled with the tuning pattern, and an output, for one problem. */
function problemBuffers(ctx: GpuContext, shape: MatmulShape) {
  const { batch, m, n, k, dtype } = shape;
  const buffers = {
    a: patternBuffer(ctx, batch * m * k, { dtype, label: "matmul tuning operand" }),
    b: patternBuffer(ctx, batch * k * n, { dtype, label: "matmul tuning operand" }),
    out: patternBuffer(ctx, batch * m * n, { dtype, label: "matmul tuning output" }),
  };
  const args = { ...buffers, batch, m, n, k, transA: shape.transA, transB: shape.transB, dtype };
  const destroy = () => ctx.destroyBuffers(Object.values(buffers));
  return { args, destroy };
}

/** Every candidate on one problem: those that run and compute it right, timed (fastest first); the rest, with why. */
export async function timeMatmulCandidates(
  ctx: GpuContext,
  shape: MatmulShape,
  candidates: MatmulChoice[],
  options: TimingOptions = {},
): Promise<{ timed: (CandidateTime & { choice: MatmulChoice })[]; rejected: RejectedKernel[] }> {
  const timing = problemBuffers(ctx, shape);
  const checkShape = checkShapeFor(shape);
  const checking = checkShape === shape ? timing : problemBuffers(ctx, checkShape);
  const run = (choice: MatmulChoice) => matmul(ctx, { ...timing.args, ...choice });
  const { out, batch, m, n, dtype } = checking.args;
  const outBytes = batch * m * n * (dtype === "f16" ? 2 : 4);
  const product = async (choice: MatmulChoice) => {
    poison(ctx, out, Math.ceil(outBytes / 4) * 4);
    matmul(ctx, { ...checking.args, ...choice });
    const bytes = await ctx.read(out, outBytes);
    return dtype === "f16" ? float16ArrayToFloat32(new Uint16Array(bytes)) : new Float32Array(bytes);
  };
  try {
    const reference = await product({ variant: "buffer" });
    const { timed, rejected } = await timeCandidates(ctx, candidates, run, options, async (choice) => {
      const problem = resultMismatch(reference, await product(choice));
      if (problem) return checking === timing ? problem : `${problem} (checked on ${describe(checkShape)})`;
      if (checking === timing) return undefined;
      // Checked on a smaller problem: the full one must still run (inside the check's error scope).
      run(choice);
      await ctx.sync();
      return undefined;
    });
    return {
      timed: timed.map(({ candidate, ms }) => ({ choice: candidate, kernel: choiceName(candidate), ms })),
      rejected: rejected.map(({ candidate, reason }) => ({ kernel: choiceName(candidate), reason })),
    };
  } finally {
    await ctx.sync().catch(() => undefined);
    timing.destroy();
    if (checking !== timing) checking.destroy();
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
    const { timed, rejected } = await timeMatmulCandidates(ctx, shape, candidates, options);
    const fixed = choiceName(fixedRuleChoice(ctx, shape));
    const choice = winnerOrFail(
      timed.map((t) => ({ candidate: t.choice, ms: t.ms })),
      (c) => choiceName(c) === fixed,
      "matmul tuning: no kernel",
      key,
      rejected,
    );
    const entry: TunedMatmul = {
      key,
      shape: { ...shape },
      choice,
      candidates: timed.map(({ kernel, ms }) => ({ kernel, ms })),
      rejected,
    };
    table.set(entry);
    tuned.push(entry);
  }
  options.onProblem?.(todo.length, todo.length, "");
  return tuned;
}
