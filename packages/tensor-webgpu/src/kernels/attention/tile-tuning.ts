/**
 * Measures which tile is fastest for each tiled attention dispatch (prefill forward, dK/dV, dQ) noted by
 * the context's table (tile-choices.ts), and keeps the winner there. A noted dispatch is run again on
 * fresh zero-filled buffers of its bindings' sizes (timing does not depend on the values: every score is
 * computed, masked or not), with each candidate tile in turn (tuning-timer.ts). The fastest wins, unless
 * the list's tile is within REPLACE_MARGIN of it.
 */
import type { GpuContext } from "../../gpu/context.js";
import {
  type CandidateTimes,
  chooseWinner,
  type TimingOptions,
  type TuningPassOptions,
  timeCandidates,
} from "../tuning-timer.js";
import {
  attentionTileKey,
  enableAttentionTuning,
  type Tile,
  type TiledDispatch,
  type TunedTile,
  tileCandidates,
  tileName,
} from "./tile-choices.js";
import { dispatchTiled, listTile, tileProfile } from "./tiles.js";

const STORAGE = 0x80 | 0x8; // STORAGE | COPY_DST

/** Every candidate tile of one dispatch: those that run, timed (fastest first); the rest, with why. */
export async function timeAttentionTiles(
  ctx: GpuContext,
  dispatch: TiledDispatch,
  options: TimingOptions = {},
): Promise<CandidateTimes<Tile>> {
  const { kernel, dims, flags, bindingSizes, workgroups } = dispatch;
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const candidates = tileCandidates(
    kernel,
    dims.headDim / 4,
    limit,
    tileProfile(ctx),
    ctx.info.adapter.isSoftware,
  );
  const buffers = bindingSizes.map((size) =>
    ctx.device.createBuffer({ size, usage: STORAGE, label: "attention tuning buffer" }),
  );
  try {
    return await timeCandidates(
      ctx,
      candidates,
      (tile) => dispatchTiled(ctx, kernel, tile, dims, flags, buffers, workgroups),
      options,
    );
  } finally {
    await ctx.sync().catch(() => undefined);
    for (const buffer of buffers) buffer.destroy();
  }
}

/**
 * Time the candidate tiles of each dispatch group noted since tuning was turned on (or of `dispatches`)
 * and keep each winner in the context's table.
 */
export async function tuneAttentionTiles(
  ctx: GpuContext,
  dispatches?: readonly TiledDispatch[],
  options: TuningPassOptions = {},
): Promise<TunedTile[]> {
  const table = enableAttentionTuning(ctx);
  const todo = dispatches ?? table.pendingDispatches();
  const tuned: TunedTile[] = [];
  for (const [index, dispatch] of todo.entries()) {
    const key = attentionTileKey(dispatch.kernel, dispatch.dims);
    options.onProblem?.(index, todo.length, key);
    const { timed, rejected } = await timeAttentionTiles(ctx, dispatch, options);
    const listed = listTile(ctx, dispatch.kernel, dispatch.dims.headDim / 4);
    const winner = chooseWinner(timed, (t) => listed !== undefined && tileName(t) === tileName(listed));
    if (!winner)
      throw new Error(
        `attention tuning: no tile could run ${key} on this adapter (${rejected.map((r) => `${tileName(r.candidate)}: ${r.reason}`).join("; ")})`,
      );
    const candidates = timed.map(({ candidate, ms }) => ({ tile: tileName(candidate), ms }));
    const entry = { key, tile: winner, candidates };
    table.set(entry);
    tuned.push(entry);
  }
  return tuned;
}
