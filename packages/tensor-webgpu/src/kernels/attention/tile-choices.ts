/**
 * Which tile a tiled attention kernel (prefill forward, dK/dV, dQ) uses, as measured on this adapter; the
 * counterpart of matmul-choices.ts, and filled by tile-tuning.ts.
 *
 * Without measurements each kernel takes the first tile of its list for the adapter kind that fits the
 * device's workgroup memory. With tuning on, a dispatch looks its problem up (the kernel, the heads and
 * head size, batch, query and key lengths rounded up to powers of two); a measured group runs its
 * winner, an unmeasured one runs the list's tile and is noted, with what it takes to run it again (the
 * sizes of its bindings, its flags and grid), for the next tuning pass. Only a kernel's own candidate
 * tiles are ever run: a saved tile that is not one of them is ignored.
 */

import type { AttentionDims } from "../../core/attention.js";
import type { GpuContext } from "../../gpu/context.js";
import type { FloatStorage } from "../elementwise.js";
import { KernelTuningFileError, parseRejected, type RejectedKernel } from "../matmul-choices.js";
import { PerContext } from "../per-context.js";
import { TuningTable } from "../tuning-table.js";

/** A tile shape: BQ query rows x BK keys, each thread owning RM rows x RN keys of the scores. */
export interface Tile {
  bq: number;
  bk: number;
  rm: number;
  rn: number;
}

/**
 * Candidate tiles per kind of adapter, best first; the first whose workgroup memory fits is used (larger
 * headDim falls through to smaller tiles). `tuning`: more tiles that only tuning tries.
 */
export interface TileChoices {
  hardware: Tile[];
  software: Tile[];
  tuning: Tile[];
}

/**
 * The form of a kernel's code: "hardware" for GPUs, "software" for CPU adapters such as lavapipe. They
 * compute the same (the forward's row sums in another order), each in the way its kind of adapter runs
 * fastest.
 */
export type TileProfile = "hardware" | "software";

/**
 * A tiled kernel: its candidate tiles, the workgroup memory (bytes) and WGSL of each tile for a headDim,
 * in the code form of `profile`.
 */
export interface TiledKernel {
  /** Pipeline labels and errors say "attention <name>". */
  name: string;
  /** Prefix of the kernel's keys in the code cache. */
  key: string;
  tiles: TileChoices;
  /**
   * What it writes with these flags: each output's binding and the bytes of it a dispatch fills (a pooled
   * buffer may be larger). The other bindings it reads.
   */
  outputs(flags: number, dims: AttentionDims): TiledOutput[];
  /** The bindings it reads that hold q-like elements (AttentionDims.dtype); the others hold f32 or i32. */
  storageInputs: number[];
  bytes(tile: Tile, d4: number, profile: TileProfile): number;
  /** WGSL for q-like elements of `dtype` in memory (the workgroup tiles and the arithmetic are f32). */
  code(tile: Tile, d4: number, profile: TileProfile, dtype: FloatStorage): string;
}

/** A binding a tiled kernel writes, how many of its bytes, and its elements. */
export interface TiledOutput {
  binding: number;
  bytes: number;
  dtype: FloatStorage;
}

/** One dispatch of a tiled kernel, as tuning runs it again on buffers of its own. */
export interface TiledDispatch {
  kernel: TiledKernel;
  dims: AttentionDims;
  flags: number;
  /** Bytes of each binding, in binding order. */
  bindingSizes: number[];
  workgroups: (tile: Tile) => [number, number, number];
}

/**
 * A measured group: the winner, every candidate's GPU time per dispatch (median of the rounds), and the
 * tiles left out (`kernel`: the tile's name).
 */
export interface TunedTile {
  key: string;
  tile: Tile;
  candidates: { tile: string; ms: number }[];
  rejected: RejectedKernel[];
}

export const tileName = (t: Tile): string => `${t.bq}x${t.bk}/${t.rm}x${t.rn}`;

const bucket = (x: number) => 2 ** Math.ceil(Math.log2(Math.max(1, x)));

/**
 * The group of an attention problem, after `prefix`: its heads, head size and mask, batch, query and key
 * lengths rounded up to powers of two, and " f16" where its elements are halves.
 */
export function attentionProblemKey(prefix: string, dims: AttentionDims): string {
  const { numHeads, numKvHeads, headDim, batch, seqLen, kvLen } = dims;
  const causal = (dims.causal ?? true) ? "causal" : "full";
  const halves = dims.dtype === "f16" ? " f16" : "";
  return `${prefix} ${numHeads}/${numKvHeads}x${headDim} ${causal} ${bucket(batch)}x${bucket(seqLen)}x${bucket(kvLen)}${halves}`;
}

/** The group a dispatch belongs to. */
export function attentionTileKey(kernel: TiledKernel, dims: AttentionDims): string {
  return attentionProblemKey(kernel.key, dims);
}

/**
 * Every tile a kernel may run that fits this device's workgroup memory: its lists, without repeats. On a
 * software adapter, where compiling each costs seconds, only the two kinds' first choices.
 */
export function tileCandidates(
  kernel: TiledKernel,
  d4: number,
  workgroupBytes: number,
  profile: TileProfile,
  software = false,
): Tile[] {
  const { hardware, software: softwareList, tuning } = kernel.tiles;
  const fits = (tile: Tile) => kernel.bytes(tile, d4, profile) <= workgroupBytes;
  const all = software
    ? [softwareList.find(fits), hardware.find(fits)].filter((t): t is Tile => t !== undefined)
    : [...hardware, ...softwareList, ...tuning];
  const seen = new Set<string>();
  return all.filter((tile) => {
    const name = tileName(tile);
    if (seen.has(name) || !fits(tile)) return false;
    seen.add(name);
    return true;
  });
}

export class AttentionTileTable extends TuningTable<TiledDispatch, TunedTile> {
  /** Measured groups whose tile was checked against the kernel's own: the tile, or undefined if not one. */
  private readonly checked = new Map<string, Tile | undefined>();

  /** The measured tile of this dispatch's group, if it is one of the kernel's candidates here. */
  lookup(dispatch: TiledDispatch, workgroupBytes: number, profile: TileProfile): Tile | undefined {
    const key = attentionTileKey(dispatch.kernel, dispatch.dims);
    if (this.checked.has(key)) return this.checked.get(key);
    const entry = this.find(key, () => dispatch);
    if (!entry) return undefined;
    const name = tileName(entry.tile);
    const d4 = dispatch.dims.headDim / 4;
    // Any tile of the kernel's lists may have been measured best, whatever the adapter kind. Checked
    // once per group: the key names the kernel and head size, and the device's memory does not change.
    const tile = tileCandidates(dispatch.kernel, d4, workgroupBytes, profile).find(
      (t) => tileName(t) === name,
    );
    this.checked.set(key, tile);
    return tile;
  }

  /** One dispatch of each group met but not yet measured, in the order first met. */
  pendingDispatches(): TiledDispatch[] {
    return this.pendingProblemList();
  }

  override set(entry: TunedTile): void {
    super.set(entry);
    this.checked.delete(entry.key);
  }
}

/** Saved attention measurements, checked field by field (`where` names the source in errors). */
export function parseAttentionEntries(saved: unknown, where: string): TunedTile[] {
  if (!Array.isArray(saved)) throw new KernelTuningFileError(where, "attention is not an array");
  return saved.map((e, i): TunedTile => {
    const at = `${where}, attention entry ${i}`;
    const entry = e as TunedTile;
    if (typeof entry?.key !== "string") throw new KernelTuningFileError(at, "key is not a string");
    const tile = entry.tile as unknown as Record<string, unknown>;
    for (const field of ["bq", "bk", "rm", "rn"])
      if (!Number.isInteger(tile?.[field]) || (tile[field] as number) < 1)
        throw new KernelTuningFileError(at, `tile.${field} is not a positive integer`);
    if (
      !Array.isArray(entry.candidates) ||
      entry.candidates.some((c) => typeof c?.tile !== "string" || typeof c?.ms !== "number")
    )
      throw new KernelTuningFileError(at, "candidates is not a list of {tile, ms}");
    const { bq, bk, rm, rn } = entry.tile;
    const candidates = entry.candidates.map(({ tile, ms }) => ({ tile, ms }));
    return {
      key: entry.key,
      tile: { bq, bk, rm, rn },
      candidates,
      rejected: parseRejected(entry.rejected, at),
    };
  });
}

const tables = new PerContext(() => new AttentionTileTable());

/** The context's table of measured attention tiles, if tuning is on for it. */
export function attentionTiles(ctx: GpuContext): AttentionTileTable | undefined {
  return tables.get(ctx);
}

/** Turn attention tile tuning on for a context; returns its table (the same one on every call). */
export function enableAttentionTuning(ctx: GpuContext): AttentionTileTable {
  return tables.ensure(ctx);
}

/** Turn attention tile tuning off for a context: each kernel takes its list's first fitting tile again. */
export function disableAttentionTuning(ctx: GpuContext): void {
  tables.drop(ctx);
}
