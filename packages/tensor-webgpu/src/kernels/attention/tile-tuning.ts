/**
 * Measures which tile is fastest for each tiled attention dispatch (prefill forward, dK/dV, dQ) noted by
 * the context's table (tile-choices.ts), and keeps the winner there. A noted dispatch is run again on
 * fresh buffers of its bindings' sizes, its inputs filled with tuning-check.ts's pattern, with each
 * candidate tile in turn (tuning-timer.ts). A tile whose outputs differ from the list's tile's (the one
 * that runs without tuning) is left out, whatever its speed; the fastest of the rest wins, unless the
 * list's tile is within REPLACE_MARGIN of it.
 */
import type { GpuContext } from "../../gpu/context.js";
import { CHECKED_USAGE, outputsCheck, patternBuffer } from "../tuning-check.js";
import {
  type CandidateTimes,
  namedRejections,
  type TimingOptions,
  type TuningPassOptions,
  timeCandidates,
  winnerOrFail,
} from "../tuning-timer.js";
import { ATTENTION_PATTERN_AMPLITUDE } from "./shared.js";
import {
  attentionTileKey,
  enableAttentionTuning,
  type Tile,
  type TiledDispatch,
  type TunedTile,
  tileCandidates,
  tileName,
} from "./tile-choices.js";
import { dispatchTiled, KV_START_BINDING, listTile, tileProfile } from "./tiles.js";

/**
 * Every candidate tile of one dispatch that computes it as the list's tile does, timed (fastest first);
 * the rest, with why. Each candidate's first run is checked: every binding it writes against the list's
 * tile's on the same inputs.
 */
export async function timeAttentionTiles(
  ctx: GpuContext,
  dispatch: TiledDispatch,
  options: TimingOptions = {},
): Promise<CandidateTimes<Tile>> {
  const { kernel, dims, flags, bindingSizes, workgroups } = dispatch;
  const d4 = dims.headDim / 4;
  const limit = ctx.device.limits.maxComputeWorkgroupStorageSize;
  const candidates = tileCandidates(kernel, d4, limit, tileProfile(ctx), ctx.info.adapter.isSoftware);
  const outputs = kernel.outputs(flags, dims);
  const written = new Set(outputs.map((o) => o.binding));
  const halves = dims.dtype === "f16" ? new Set(kernel.storageInputs) : new Set<number>();
  // Inputs hold the pattern (q-like ones in their dtype); kvStart zeros (every key visible from the start);
  // outputs are written.
  const buffers = bindingSizes.map((size, binding) =>
    written.has(binding) || binding === KV_START_BINDING
      ? ctx.device.createBuffer({ size, usage: CHECKED_USAGE, label: "attention tuning buffer" })
      : patternBuffer(ctx, halves.has(binding) ? size / 2 : size / 4, {
          dtype: halves.has(binding) ? "f16" : "f32",
          signed: true,
          amplitude: ATTENTION_PATTERN_AMPLITUDE,
          phase: 257 * binding,
          label: "attention tuning buffer",
        }),
  );
  const run = (tile: Tile) => dispatchTiled(ctx, kernel, tile, dims, flags, buffers, workgroups);
  try {
    const checked = outputs.map(({ binding, bytes, dtype }) => ({
      name: `binding ${binding}`,
      buffer: buffers[binding]!,
      bytes,
      dtype,
    }));
    const check = await outputsCheck(ctx, checked, run, listTile(ctx, kernel, d4) ?? candidates[0]!);
    return await timeCandidates(ctx, candidates, run, options, check);
  } finally {
    await ctx.sync().catch(() => undefined);
    ctx.destroyBuffers(buffers);
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
    const left = namedRejections(rejected, tileName);
    const isListed = (t: Tile) => listed !== undefined && tileName(t) === tileName(listed);
    const winner = winnerOrFail(timed, isListed, "attention tuning: no tile", key, left);
    const candidates = timed.map(({ candidate, ms }) => ({ tile: tileName(candidate), ms }));
    const entry = { key, tile: winner, candidates, rejected: left };
    table.set(entry);
    tuned.push(entry);
  }
  return tuned;
}
