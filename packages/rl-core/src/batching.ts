import type { TokenBatch } from "@ragen/models";
import type { Trajectory } from "@ragen/rollout";

/**
 * Trajectories packed into right-padded [batch, seqLen] rows for teacher forcing. Row b, position t
 * feeds `inputIds[t] = tokens[t]` and scores `targets[t] = tokens[t + 1]`; every per-token array is
 * aligned to the targets (shifted left by one from the trajectory's own arrays), so `mask[t]` says
 * whether the policy sampled the token predicted at position t. Padding has id 0 and mask 0; right
 * padding leaves real positions at 0, 1, 2, ... and, under causal attention, unaffected by the padding.
 */
export interface PackedBatch {
  batch: number;
  seqLen: number;
  inputIds: Int32Array;
  targets: Int32Array;
  mask: Float32Array;
  oldLogProbs: Float32Array;
  tokenRewards: Float32Array;
  /** Real (unpadded) positions per row: tokens.length - 1. */
  lengths: Int32Array;
  /**
   * Each target's weight on the policy-gradient term (Trajectory.importanceWeights; 1 for rows without),
   * or undefined when no row has weights.
   */
  importanceWeights: Float32Array | undefined;
}

/** Positions a trajectory takes in a packed batch: one per target (tokens − 1). */
export const packedLength = (t: Trajectory): number => t.tokens.length - 1;

/** Packs trajectories into right-padded rows; see PackedBatch for the alignment. */
export function packTrajectories(trajectories: readonly Trajectory[]): PackedBatch {
  if (trajectories.length === 0) throw new RangeError("packTrajectories: no trajectories");
  for (const t of trajectories) {
    if (t.tokens.length < 2)
      throw new RangeError(`packTrajectories: trajectory ${t.index} (${t.tag}:${t.seed}) has under 2 tokens`);
    // Position 0 has no prediction before it, so a sampled first token could never be trained.
    if (t.lossMask[0])
      throw new RangeError(
        `packTrajectories: trajectory ${t.index} (${t.tag}:${t.seed}) marks token 0 as sampled`,
      );
  }
  const batch = trajectories.length;
  const seqLen = Math.max(...trajectories.map(packedLength));
  const packed: PackedBatch = {
    batch,
    seqLen,
    inputIds: new Int32Array(batch * seqLen),
    targets: new Int32Array(batch * seqLen),
    mask: new Float32Array(batch * seqLen),
    oldLogProbs: new Float32Array(batch * seqLen),
    tokenRewards: new Float32Array(batch * seqLen),
    lengths: new Int32Array(batch),
    importanceWeights: trajectories.some((t) => t.importanceWeights)
      ? new Float32Array(batch * seqLen).fill(1)
      : undefined,
  };
  trajectories.forEach((t, b) => {
    const n = packedLength(t);
    const row = b * seqLen;
    packed.lengths[b] = n;
    packed.inputIds.set(t.tokens.subarray(0, n), row);
    packed.targets.set(t.tokens.subarray(1), row);
    packed.mask.set(t.lossMask.subarray(1), row);
    packed.oldLogProbs.set(t.oldLogProbs.subarray(1), row);
    packed.tokenRewards.set(t.tokenRewards.subarray(1), row);
    if (t.importanceWeights) packed.importanceWeights!.set(t.importanceWeights.subarray(1), row);
  });
  return packed;
}

/**
 * Log-probs of a row's targets (`targetLogProbs[i]` scores token i + 1, as a packed row's positions do)
 * put back on the row's own tokens, like Trajectory.oldLogProbs: token t gets target t − 1's where the
 * policy sampled it (lossMask), 0 elsewhere.
 */
export function sampledTokenLogProbs(row: Trajectory, targetLogProbs: Float32Array): Float32Array {
  if (targetLogProbs.length < row.tokens.length - 1)
    throw new RangeError(
      `sampledTokenLogProbs: ${targetLogProbs.length} log-probs for a row of ${row.tokens.length} tokens (needs ${row.tokens.length - 1})`,
    );
  const onTokens = new Float32Array(row.tokens.length);
  for (let t = 1; t < row.tokens.length; t++) if (row.lossMask[t]) onTokens[t] = targetLogProbs[t - 1]!;
  return onTokens;
}

/** The model input of a packed batch. */
export function inputOf(packed: PackedBatch): TokenBatch {
  return { ids: packed.inputIds, batch: packed.batch, seqLen: packed.seqLen };
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A seeded Fisher-Yates shuffle (mulberry32 stream): the same seed deals the same order. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
