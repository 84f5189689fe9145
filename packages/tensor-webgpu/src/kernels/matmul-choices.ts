/**
 * Which matmul kernel runs a problem, as measured on this adapter (matmul-tuning.ts measures).
 *
 * The best kernel and tile depend on the card and the shape: on an H200 the same "tiled" kernel ran at
 * 0.42x of PyTorch at 2048³ and 0.11x at 4096³, and no fixed rule picked well on both the H100 and the
 * H200. So a context can keep a table of measured choices. Problems are grouped by element type,
 * transposes and each dimension rounded up to a power of two (a 1,900-token micro-batch is tuned once
 * with the 2,048-token ones); `matmul` looks each problem up, runs the measured winner when there is one,
 * and otherwise takes the fixed rule and notes the group as pending, for the next tuning pass.
 *
 * Measurements hold for one adapter (vendor, architecture, device, description); kernel-tuning.ts saves
 * and loads them with the attention tiles', entries checked field by field (parseMatmulEntries).
 */
import type { GpuContext } from "../gpu/context.js";
import type { FloatStorage } from "./elementwise.js";
import {
  type BlockedTile,
  blockedTileProblem,
  MATRIX_TILES,
  type MatrixTile,
  type PipelinedStores,
} from "./matmul-gpu.js";
import { PerContext } from "./per-context.js";
import { TuningTable } from "./tuning-table.js";

export type MatmulVariant =
  | "texture"
  | "tiled"
  | "buffer"
  | "blocked"
  | "blocked-wide"
  | "subgroup-matrix"
  | "subgroup-matrix-direct"
  | "subgroup-matrix-pipelined"
  | "matvec";

const VARIANTS: readonly MatmulVariant[] = [
  "texture",
  "tiled",
  "buffer",
  "blocked",
  "blocked-wide",
  "subgroup-matrix",
  "subgroup-matrix-direct",
  "subgroup-matrix-pipelined",
  "matvec",
];

/** The dimensions and layout of a matmul problem: what decides which kernel is fastest. */
export interface MatmulShape {
  batch: number;
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  dtype: FloatStorage;
}

/** A kernel for a problem: the variant and, for "blocked" and the tensor-core variants that take one, its tile. */
export interface MatmulChoice {
  variant: MatmulVariant;
  /** "blocked" and "blocked-wide": the output tile and k-step. */
  blockedTile?: BlockedTile;
  /** "subgroup-matrix-direct" and "subgroup-matrix-pipelined": the square output tile. */
  matrixTile?: MatrixTile;
  /** "subgroup-matrix-direct" only: load each k-step's fragments one step ahead. */
  directPrefetch?: boolean;
  /**
   * "subgroup-matrix-pipelined" only: store each 16-byte load into workgroup memory whole, through a buffer
   * view (WGSL's buffer_view language feature), instead of as 8 halves.
   */
  wideStores?: boolean;
  /**
   * "subgroup-matrix-pipelined" only: store the 8 halves of each load in an order rotated per lane, so that
   * the lanes of each store write to different banks of workgroup memory (storeRotations).
   */
  rotatedStores?: boolean;
}

/** The tensor-core kernels' on/off options, with the suffix each adds to a kernel's name. */
const MATRIX_FLAGS = {
  directPrefetch: " prefetch",
  wideStores: " wide-stores",
  rotatedStores: " rotated-stores",
} as const;
type MatrixFlag = keyof typeof MATRIX_FLAGS;

/** The options among `source`'s (a choice, a tuning file's entry, matmul's arguments) that are set. */
export function matrixFlags(source: { [F in MatrixFlag]?: unknown }): Pick<MatmulChoice, MatrixFlag> {
  const set = (Object.keys(MATRIX_FLAGS) as MatrixFlag[]).filter((flag) => source[flag]);
  return Object.fromEntries(set.map((flag) => [flag, true]));
}

/** How a "subgroup-matrix-pipelined" choice stages its loads. */
export function pipelinedStoresOf(choice: MatmulChoice): PipelinedStores {
  if (choice.wideStores && choice.rotatedStores)
    throw new RangeError("matmul: wideStores and rotatedStores are two ways to stage a load; choose one");
  return choice.wideStores ? "wide" : choice.rotatedStores ? "rotated" : "halves";
}

/** One candidate's measured GPU time per product (median over the tuning's rounds). */
export interface CandidateTime {
  kernel: string;
  ms: number;
}

/**
 * A kernel tuning left out of a group, and why (the driver refused it, or its result was wrong): a matmul
 * kernel's name, an attention tile's or an attention form's.
 */
export interface RejectedKernel {
  kernel: string;
  reason: string;
}

/** A tuned group: the shape it was measured on, the winner, every candidate's time, those left out. */
export interface TunedMatmul {
  key: string;
  shape: MatmulShape;
  choice: MatmulChoice;
  candidates: CandidateTime[];
  rejected: RejectedKernel[];
}

const bucket = (x: number) => 2 ** Math.ceil(Math.log2(Math.max(1, x)));

/** The group a problem belongs to: element type, transposes, each dimension rounded up to a power of two. */
export function matmulShapeKey(shape: MatmulShape): string {
  const layout = `${shape.transA ? "T" : "N"}${shape.transB ? "T" : "N"}`;
  return `${shape.dtype} ${layout} ${bucket(shape.batch)}x${bucket(shape.m)}x${bucket(shape.n)}x${bucket(shape.k)}`;
}

/**
 * A kernel's name in reports: "tiled", "blocked 128x64/16", "subgroup-matrix-direct 64x64",
 * "subgroup-matrix-direct 128x128 prefetch", "subgroup-matrix-pipelined 128x128 wide-stores" (or
 * "rotated-stores").
 */
export function choiceName(choice: MatmulChoice): string {
  const tile = choice.blockedTile;
  if (tile) return `${choice.variant} ${tile.rows}x${tile.cols}/${tile.depth}`;
  const direct = choice.matrixTile;
  if (!direct) return choice.variant;
  const options = Object.keys(matrixFlags(choice)).map((flag) => MATRIX_FLAGS[flag as MatrixFlag]);
  return `${choice.variant} ${direct}x${direct}${options.join("")}`;
}

/** The adapter a table belongs to. */
export function adapterKey(ctx: GpuContext): string {
  const { vendor, architecture, device, description } = ctx.info.adapter;
  return [vendor, architecture, device, description].join(" | ");
}

export class KernelTuningFileError extends Error {
  constructor(where: string, problem: string) {
    super(`kernel tuning ${where}: ${problem}`);
    this.name = "KernelTuningFileError";
  }
}

export class MatmulChoiceTable extends TuningTable<MatmulShape, TunedMatmul> {
  /** The measured choice for this problem's group; an unmeasured group is noted as pending. */
  lookup(shape: MatmulShape): MatmulChoice | undefined {
    return this.find(matmulShapeKey(shape), () => ({ ...shape }))?.choice;
  }

  /** One problem of each group seen but not yet measured, in the order first seen. */
  pendingShapes(): MatmulShape[] {
    return this.pendingProblemList();
  }

  get(shape: MatmulShape): TunedMatmul | undefined {
    return this.measured(matmulShapeKey(shape));
  }
}

const isRecord = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const isCount = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 1;

function parseShape(x: unknown, where: string): MatmulShape {
  if (!isRecord(x)) throw new KernelTuningFileError(where, "shape is not an object");
  for (const dim of ["batch", "m", "n", "k"] as const)
    if (!isCount(x[dim])) throw new KernelTuningFileError(where, `shape.${dim} is not a positive integer`);
  if (typeof x.transA !== "boolean" || typeof x.transB !== "boolean")
    throw new KernelTuningFileError(where, "shape.transA and shape.transB must be true or false");
  if (x.dtype !== "f32" && x.dtype !== "f16")
    throw new KernelTuningFileError(where, `shape.dtype is ${JSON.stringify(x.dtype)}, not "f32" or "f16"`);
  const { batch, m, n, k, transA, transB, dtype } = x as unknown as MatmulShape;
  return { batch, m, n, k, transA, transB, dtype };
}

function parseChoice(x: unknown, where: string): MatmulChoice {
  if (!isRecord(x)) throw new KernelTuningFileError(where, "choice is not an object");
  if (!VARIANTS.includes(x.variant as MatmulVariant))
    throw new KernelTuningFileError(
      where,
      `choice.variant is ${JSON.stringify(x.variant)}, not one of ${VARIANTS.join(", ")}`,
    );
  const variant = x.variant as MatmulVariant;
  // Files written before the pipelined kernel call the tensor-core tile `directTile`.
  const square = x.matrixTile ?? x.directTile;
  if (square !== undefined) {
    if (!MATRIX_TILES.includes(square as MatrixTile))
      throw new KernelTuningFileError(
        where,
        `choice.matrixTile is ${JSON.stringify(square)}, not one of ${MATRIX_TILES.join(", ")}`,
      );
    for (const flag of Object.keys(MATRIX_FLAGS) as MatrixFlag[])
      if (x[flag] !== undefined && typeof x[flag] !== "boolean")
        throw new KernelTuningFileError(where, `choice.${flag} must be true or false`);
    if (x.wideStores && x.rotatedStores)
      throw new KernelTuningFileError(
        where,
        "choice sets both wideStores and rotatedStores; a load is staged one way",
      );
    const matrixTile = square as MatrixTile;
    return { variant, matrixTile, ...matrixFlags(x) };
  }
  if (x.blockedTile === undefined) return { variant };
  const tile = x.blockedTile as BlockedTile;
  const problem = isRecord(tile) ? blockedTileProblem(tile) : "choice.blockedTile is not an object";
  if (problem) throw new KernelTuningFileError(where, problem);
  return { variant, blockedTile: { rows: tile.rows, cols: tile.cols, depth: tile.depth } };
}

/** Saved matmul measurements, checked: every field of every entry, the keys against their shapes. */
export function parseMatmulEntries(x: unknown, where: string): TunedMatmul[] {
  if (!Array.isArray(x)) throw new KernelTuningFileError(where, "matmul is not an array");
  return x.map((e: unknown, i: number): TunedMatmul => {
    const at = `${where}, matmul entry ${i}`;
    if (!isRecord(e)) throw new KernelTuningFileError(at, "not an object");
    const shape = parseShape(e.shape, at);
    const key = matmulShapeKey(shape);
    if (e.key !== key)
      throw new KernelTuningFileError(at, `key ${JSON.stringify(e.key)} does not match its shape (${key})`);
    if (!Array.isArray(e.candidates)) throw new KernelTuningFileError(at, "candidates is not an array");
    const candidates = e.candidates.map((c: unknown) => {
      if (!isRecord(c) || typeof c.kernel !== "string" || typeof c.ms !== "number")
        throw new KernelTuningFileError(at, "a candidate is not {kernel, ms}");
      return { kernel: c.kernel, ms: c.ms };
    });
    return {
      key,
      shape,
      choice: parseChoice(e.choice, at),
      candidates,
      rejected: parseRejected(e.rejected, at),
    };
  });
}

/**
 * A saved entry's kernels left out by tuning's check, field by field. Files written before tuning checked
 * results have none.
 */
export function parseRejected(saved: unknown, at: string): RejectedKernel[] {
  if (saved === undefined) return [];
  if (!Array.isArray(saved)) throw new KernelTuningFileError(at, "rejected is not an array");
  return saved.map((r: unknown) => {
    if (!isRecord(r) || typeof r.kernel !== "string" || typeof r.reason !== "string")
      throw new KernelTuningFileError(at, "a rejected kernel is not {kernel, reason}");
    return { kernel: r.kernel, reason: r.reason };
  });
}

const tables = new PerContext(() => new MatmulChoiceTable());

/** The context's table of measured choices, if tuning is on for it. */
export function matmulChoices(ctx: GpuContext): MatmulChoiceTable | undefined {
  return tables.get(ctx);
}

/**
 * Turn tuning on for a context: from now on `matmul` runs measured choices and notes unmeasured problem
 * groups for `tuneMatmuls`. Returns the context's table (the same one on every call).
 */
export function enableMatmulTuning(ctx: GpuContext): MatmulChoiceTable {
  return tables.ensure(ctx);
}

/** Turn tuning off for a context: `matmul` goes back to its fixed rule. */
export function disableMatmulTuning(ctx: GpuContext): void {
  tables.drop(ctx);
}
