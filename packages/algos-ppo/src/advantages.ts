import { groupIndices, meanOf, STD_EPS, sampleStd } from "./stats.js";

/**
 * Per-token advantage estimators. A batch is a list of sequences of different lengths (one multi-turn
 * chat each); `masks[i][t]` is 1 on tokens the policy sampled. Only those are time steps: prompt and
 * template tokens between turns are skipped, so turn k's last token bootstraps from turn k+1's first.
 */
export interface TokenBatch {
  /** Reward per token (the trajectory reward usually sits on the last sampled token). */
  tokenRewards: readonly Float32Array[];
  masks: readonly ArrayLike<number>[];
}

export interface AdvantageResult {
  /** Per token, 0 where the mask is 0. */
  advantages: Float32Array[];
  /** Regression targets for the critic (GAE: A + V); 0 where the mask is 0. */
  returns: Float32Array[];
}

export interface GaeOptions {
  gamma?: number;
  lambda?: number;
}

/**
 * Generalised advantage estimation, backwards over the sampled tokens of each sequence. With the
 * defaults gamma = lambda = 1 every advantage is (sum of rewards from t on) - V_t.
 * A reward sitting on an unmasked token (none does when the rollout places rewards) is credited to the
 * sampled token before it, so no reward is dropped.
 */
export function gaeAdvantages(
  batch: TokenBatch,
  values: readonly Float32Array[],
  options: GaeOptions = {},
): AdvantageResult {
  const gamma = options.gamma ?? 1;
  const lambda = options.lambda ?? 1;
  const result: AdvantageResult = { advantages: [], returns: [] };
  batch.tokenRewards.forEach((rewards, i) => {
    const mask = batch.masks[i]!;
    const v = values[i]!;
    checkLengths("gaeAdvantages", rewards, mask, v);
    const advantages = new Float32Array(rewards.length);
    const returns = new Float32Array(rewards.length);
    let nextValue = 0;
    let runningAdvantage = 0;
    let pendingReward = 0;
    for (let t = rewards.length - 1; t >= 0; t--) {
      if (!mask[t]) {
        pendingReward += rewards[t]!;
        continue;
      }
      const delta = rewards[t]! + pendingReward + gamma * nextValue - v[t]!;
      pendingReward = 0;
      runningAdvantage = delta + gamma * lambda * runningAdvantage;
      advantages[t] = runningAdvantage;
      returns[t] = runningAdvantage + v[t]!;
      nextValue = v[t]!;
    }
    result.advantages.push(advantages);
    result.returns.push(returns);
  });
  return result;
}

export interface BiLevelGaeOptions extends GaeOptions {
  /** Discount between turns (RAGEN's high_level_gamma, 0.95). */
  highLevelGamma?: number;
}

/**
 * Bi-level GAE (RAGEN's compute_bi_level_gae_advantage_return): GAE over turns, then GAE over the tokens of
 * each turn. A turn is a run of sampled tokens (the template text between turns is not sampled); its value
 * is the critic's value at its last token and its reward what sits on that token and after it, up to the
 * next turn. Over turns, backwards: delta_k = R_k + highLevelGamma * V_{k+1} - V_k and
 * A_k = delta_k + highLevelGamma * lambda * A_{k+1}. Within turn k, the last token takes A_k and the
 * tokens before it run token-level GAE (gamma, lambda, their own rewards) back from it. Returns are A + V.
 *
 * RAGEN finds turn ends by the tokens that carry a reward, so with the reward on the last token only its
 * two levels collapse into one; here a turn is a turn whatever it earned.
 */
export function biLevelGaeAdvantages(
  batch: TokenBatch,
  values: readonly Float32Array[],
  options: BiLevelGaeOptions = {},
): AdvantageResult {
  const gamma = options.gamma ?? 1;
  const lambda = options.lambda ?? 1;
  const highLevelGamma = options.highLevelGamma ?? 0.95;
  const result: AdvantageResult = { advantages: [], returns: [] };
  batch.tokenRewards.forEach((rewards, i) => {
    const mask = batch.masks[i]!;
    const v = values[i]!;
    checkLengths("biLevelGaeAdvantages", rewards, mask, v);
    const advantages = new Float32Array(rewards.length);
    const returns = new Float32Array(rewards.length);
    const turns = turnSpans(mask);
    // Turn level: each turn's reward is its last token's plus what lies on the text after it.
    const turnAdvantages = new Float64Array(turns.length);
    let running = 0;
    for (let k = turns.length - 1; k >= 0; k--) {
      const { end } = turns[k]!;
      const nextStart = k + 1 < turns.length ? turns[k + 1]!.start : rewards.length;
      let turnReward = 0;
      for (let t = end; t < nextStart; t++) turnReward += rewards[t]!;
      const nextValue = k + 1 < turns.length ? v[turns[k + 1]!.end]! : 0;
      const delta = turnReward + highLevelGamma * nextValue - v[end]!;
      running = delta + highLevelGamma * lambda * running;
      turnAdvantages[k] = running;
    }
    // Token level, within each turn, back from its last token.
    turns.forEach(({ start, end }, k) => {
      let tokenRunning = turnAdvantages[k]!;
      advantages[end] = tokenRunning;
      returns[end] = tokenRunning + v[end]!;
      for (let t = end - 1; t >= start; t--) {
        const delta = rewards[t]! + gamma * v[t + 1]! - v[t]!;
        tokenRunning = delta + gamma * lambda * tokenRunning;
        advantages[t] = tokenRunning;
        returns[t] = tokenRunning + v[t]!;
      }
    });
    result.advantages.push(advantages);
    result.returns.push(returns);
  });
  return result;
}

/** The runs of sampled tokens of one sequence (its turns), as inclusive [start, end] indices. */
export function turnSpans(mask: ArrayLike<number>): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  for (let t = 0; t < mask.length; t++) {
    if (!mask[t]) continue;
    if (t > 0 && mask[t - 1]) spans[spans.length - 1]!.end = t;
    else spans.push({ start: t, end: t });
  }
  return spans;
}

/**
 * GRPO: each trajectory's total reward z-scored within its group, (R - mean) / (std + 1e-6), on all of
 * its sampled tokens. A group of one keeps R (mean 0, std 1, as verl does). With `normalizeByStd: false`
 * (Dr. GRPO, verl's norm_adv_by_std_in_grpo) the advantage is R - mean: a group whose rewards barely
 * differ keeps small advantages. Returns equal advantages.
 */
export function grpoAdvantages(
  batch: TokenBatch,
  groupIds: ArrayLike<number>,
  options: { normalizeByStd?: boolean } = {},
): AdvantageResult {
  const normalizeByStd = options.normalizeByStd ?? true;
  const scores = trajectoryScores(batch);
  const perTrajectory = new Float64Array(scores.length);
  for (const members of groupsOf(groupIds, scores.length).values()) {
    const groupScores = members.map((i) => scores[i]!);
    const single = members.length === 1;
    const mean = single ? 0 : meanOf(groupScores);
    const std = single ? 1 : sampleStd(groupScores);
    for (const i of members)
      perTrajectory[i] = normalizeByStd ? (scores[i]! - mean) / (std + STD_EPS) : scores[i]! - mean;
  }
  return broadcastToTokens(batch, perTrajectory);
}

/**
 * RLOO: baseline = mean reward of the other members of the group, A_i = R_i - mean_{j != i} R_j.
 * A group of one has no others: baseline 0. Returns equal advantages.
 */
export function rlooAdvantages(batch: TokenBatch, groupIds: ArrayLike<number>): AdvantageResult {
  const scores = trajectoryScores(batch);
  const perTrajectory = new Float64Array(scores.length);
  for (const members of groupsOf(groupIds, scores.length).values()) {
    let total = 0;
    for (const i of members) total += scores[i]!;
    const others = members.length - 1;
    for (const i of members)
      perTrajectory[i] = scores[i]! - (others === 0 ? 0 : (total - scores[i]!) / others);
  }
  return broadcastToTokens(batch, perTrajectory);
}

/**
 * REINFORCE++: discounted return-to-go over sampled tokens (skipping unmasked ones, as in GAE), then
 * whitened over every sampled token of the batch. Returns are the un-whitened returns-to-go.
 */
export function reinforcePlusPlusAdvantages(
  batch: TokenBatch,
  options: { gamma?: number } = {},
): AdvantageResult {
  const gamma = options.gamma ?? 1;
  const returns = batch.tokenRewards.map((rewards, i) => {
    const mask = batch.masks[i]!;
    checkLengths("reinforcePlusPlusAdvantages", rewards, mask);
    const out = new Float32Array(rewards.length);
    let running = 0;
    let pendingReward = 0;
    for (let t = rewards.length - 1; t >= 0; t--) {
      if (!mask[t]) {
        pendingReward += rewards[t]!;
        continue;
      }
      running = rewards[t]! + pendingReward + gamma * running;
      pendingReward = 0;
      out[t] = running;
    }
    return out;
  });
  return { advantages: whitenMasked(returns, batch.masks), returns };
}

/** verl's variance floor inside the square root when whitening. */
export const WHITEN_EPS = 1e-8;

/**
 * (x - mean) / sqrt(var + 1e-8) with mean and sample variance over masked tokens only; unmasked tokens
 * become 0. With `shiftMean: false` the mean is added back, (x - mean) / sd + mean, as verl's
 * masked_whiten does: the spread is normalised and the level kept.
 */
export function whitenMasked(
  values: readonly Float32Array[],
  masks: readonly ArrayLike<number>[],
  options: { shiftMean?: boolean } = {},
): Float32Array[] {
  let count = 0;
  let total = 0;
  values.forEach((seq, i) => {
    const mask = masks[i]!;
    checkLengths("whitenMasked", seq, mask);
    for (let t = 0; t < seq.length; t++) {
      if (mask[t]) {
        total += seq[t]!;
        count++;
      }
    }
  });
  const mean = count === 0 ? 0 : total / count;
  let squares = 0;
  values.forEach((seq, i) => {
    const mask = masks[i]!;
    for (let t = 0; t < seq.length; t++) if (mask[t]) squares += (seq[t]! - mean) ** 2;
  });
  // Bessel-corrected like verl's masked_var; one token has no variance to remove.
  const variance = count > 1 ? squares / (count - 1) : 0;
  const scaleBy = 1 / Math.sqrt(variance + WHITEN_EPS);
  const level = options.shiftMean === false ? mean : 0;
  return values.map((seq, i) => {
    const mask = masks[i]!;
    const out = new Float32Array(seq.length);
    for (let t = 0; t < seq.length; t++) if (mask[t]) out[t] = (seq[t]! - mean) * scaleBy + level;
    return out;
  });
}

/**
 * whitenMasked within each key's sequences separately (a key per sequence, e.g. its env tag): in a
 * batch that mixes tasks of different reward scales, whitening over the whole batch measures each
 * task's returns against the others' mean, so a low-paying task's every response looks bad. With
 * `scale: "batch"` each key is only centred on its own mean and one scale is taken over the whole
 * centred batch, so a task with a small reward spread keeps small advantages (and small steps). With
 * `scale: "none"` each key is only centred: advantages stay in reward units, so a batch whose rewards
 * barely differ makes a small step instead of being scaled up to the size of one with real signal.
 */
export function whitenMaskedByKey(
  values: readonly Float32Array[],
  masks: readonly ArrayLike<number>[],
  keys: ArrayLike<string>,
  options: { scale?: "key" | "batch" | "none" } = {},
): Float32Array[] {
  if (keys.length !== values.length)
    throw new RangeError(`whitenMaskedByKey: ${values.length} sequences but ${keys.length} keys`);
  const scale = options.scale ?? "key";
  const perKeyScale = scale === "key";
  const out: Float32Array[] = new Array(values.length);
  for (const members of groupIndices(keys).values()) {
    const seqs = members.map((i) => values[i]!);
    const keyMasks = members.map((i) => masks[i]!);
    const done = perKeyScale ? whitenMasked(seqs, keyMasks) : centreMasked(seqs, keyMasks);
    members.forEach((i, k) => {
      out[i] = done[k]!;
    });
  }
  return scale === "batch" ? whitenMasked(out, masks) : out;
}

/** x - mean over masked tokens; unmasked tokens become 0. */
function centreMasked(values: readonly Float32Array[], masks: readonly ArrayLike<number>[]): Float32Array[] {
  let total = 0;
  let count = 0;
  values.forEach((seq, i) => {
    const mask = masks[i]!;
    checkLengths("centreMasked", seq, mask);
    for (let t = 0; t < seq.length; t++)
      if (mask[t]) {
        total += seq[t]!;
        count++;
      }
  });
  const mean = count === 0 ? 0 : total / count;
  return values.map((seq, i) => {
    const mask = masks[i]!;
    const out = new Float32Array(seq.length);
    for (let t = 0; t < seq.length; t++) if (mask[t]) out[t] = seq[t]! - mean;
    return out;
  });
}

/** Sum of token rewards per sequence: the trajectory score outcome estimators compare. */
export function trajectoryScores(batch: TokenBatch): Float64Array {
  return Float64Array.from(batch.tokenRewards, (rewards) => {
    let total = 0;
    for (const r of rewards) total += r;
    return total;
  });
}

function broadcastToTokens(batch: TokenBatch, perTrajectory: Float64Array): AdvantageResult {
  const advantages = batch.masks.map((mask, i) => {
    const out = new Float32Array(mask.length);
    for (let t = 0; t < mask.length; t++) if (mask[t]) out[t] = perTrajectory[i]!;
    return out;
  });
  return { advantages, returns: advantages.map((a) => a.slice()) };
}

function groupsOf(groupIds: ArrayLike<number>, count: number): Map<number, number[]> {
  if (groupIds.length !== count) {
    throw new RangeError(`${count} trajectories but ${groupIds.length} group ids`);
  }
  return groupIndices(groupIds);
}

function checkLengths(where: string, ...arrays: ArrayLike<number>[]): void {
  const length = arrays[0]!.length;
  if (arrays.some((a) => a.length !== length)) {
    throw new RangeError(
      `${where}: per-token arrays differ in length (${arrays.map((a) => a.length).join(", ")})`,
    );
  }
}
