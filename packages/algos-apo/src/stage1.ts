import {
  EnvManager,
  type EnvTagGroups,
  type Policy,
  type RolloutOptions,
  runRollout,
  type Trajectory,
} from "@ragen/rollout";
import type { Tokenizer } from "@ragen/tokenizer";
import { canonicalJson, stateKey, type VStarCache, type VStarEntry, type VStarKey } from "./cache.js";
import { DEFAULT_BETA1, estimateVStar, summarizeSamples } from "./vstar.js";

/** The paper's N: reference samples per start state. */
export const DEFAULT_VSTAR_SAMPLES = 8;

/** Stage 1's settings as the paper gives them: N samples, the V* temperature β1, every state kept. */
export const VSTAR_DEFAULTS = {
  samples: DEFAULT_VSTAR_SAMPLES,
  beta1: DEFAULT_BETA1,
  dropAllZero: false,
} as const;

/** Stage 1 always samples at temperature 1 (the reference distribution itself) and moves its own seeds. */
export type Stage1RolloutOptions = Omit<RolloutOptions, "mode" | "temperature" | "seed" | "onTurn">;

export interface VStarEstimationOptions {
  /** The frozen reference policy, e.g. `new LocalModelPolicy(reference, tokenizer)`. */
  policy: Policy;
  tokenizer: Tokenizer;
  /** The stage-2 manager's env groups and tags; its group size is replaced by N here. */
  envs: { envGroups: number; tags: readonly EnvTagGroups[] };
  /** Training resets to cover: one per stage-2 step. */
  resets: number;
  /** The first reset to cover (a resumed run's `manager.trainResets`). Default 0. */
  startReset?: number;
  /** Identity of the reference model; part of every cache key. */
  referenceModel: string;
  /** N, default 8. */
  samples?: number;
  /** Default 0.5; 0 means the plain mean of the rewards. */
  beta1?: number;
  /** Leave out start states where no sample scored above 0. Default false. */
  dropAllZero?: boolean;
  /** The same rollout settings stage 2 uses (turns, token budget, format penalty, ...). */
  rollout: Stage1RolloutOptions;
  /** Sampling seed; reset r samples with seed + r, so a state's samples do not depend on caching. Default 0. */
  seed?: number;
  cache?: VStarCache;
  /** Start states done (sampled or found in the cache) out of all requested, after each reset. */
  onProgress?: (done: number, total: number) => void;
}

export interface VStarEstimates {
  /** By `stateKey(tag, seed)`, in the order stage 2 visits them; dropped states left out. */
  entries: Map<string, VStarEntry>;
  /** State keys left out by `dropAllZero`. */
  dropped: Set<string>;
  /** `vstar/*` over every covered state (dropped ones included) and `timing_s/vstar`. */
  metrics: Record<string, number>;
}

/**
 * A*-PO's stage 1: for every start state the stage-2 manager will visit in `resets` training resets,
 * sample N trajectories from the reference and estimate V̂*. A manager with the same groups and group
 * size N gives each group one start state N times, with exactly the seeds of the stage-2 resets.
 * States found in the cache are not sampled again; a reset is rolled out only if one of its states is
 * missing, and only the missing ones are stored.
 */
export async function estimateVStarForStates(options: VStarEstimationOptions): Promise<VStarEstimates> {
  const start = performance.now();
  const samples = options.samples ?? DEFAULT_VSTAR_SAMPLES;
  const beta1 = options.beta1 ?? DEFAULT_BETA1;
  const startReset = options.startReset ?? 0;
  const seed = options.seed ?? 0;
  for (const [name, value, min] of [
    ["samples", samples, 1],
    ["resets", options.resets, 0],
    ["startReset", startReset, 0],
  ] as const) {
    if (!(Number.isInteger(value) && value >= min))
      throw new RangeError(`estimateVStarForStates: ${name} must be an integer >= ${min}, got ${value}`);
  }
  // Fails on a bad beta1 before any sampling.
  estimateVStar([0], beta1);

  const manager = new EnvManager({
    envGroups: options.envs.envGroups,
    groupSize: samples,
    tags: options.envs.tags,
  });
  const { envGroups } = manager.config;
  const groups = Array.from({ length: envGroups }, (_, g) => {
    const slot = manager.slots[g * samples]!;
    const envConfig = canonicalJson({
      env: slot.env.name,
      config: slot.env.config,
      maxActionsPerTraj: slot.maxActionsPerTraj,
    });
    return { tag: slot.tag, envConfig };
  });
  // rewardPlacement moves rewards between tokens but not their sum, so it does not split the cache.
  const { rewardPlacement: _, ...rewardShaping } = options.rollout;
  const rollout = canonicalJson(rewardShaping);
  const keyOf = (g: number, base: number): VStarKey => ({
    tag: groups[g]!.tag,
    envConfig: groups[g]!.envConfig,
    rollout,
    seed: base + g,
    referenceModel: options.referenceModel,
    samples,
    beta1,
  });

  const covered: VStarEntry[] = [];
  let sampledStates = 0;
  // Everything this call generated, groups sampled again beside a missing one included.
  let sampledTokens = 0;
  const total = options.resets * envGroups;
  options.onProgress?.(0, total);
  for (let reset = startReset; reset < startReset + options.resets; reset++) {
    manager.restoreTrainResets(reset);
    const keys = groups.map((_, g) => keyOf(g, manager.nextSeedBase("train")));
    const found = await Promise.all(keys.map((key) => options.cache?.get(key)));
    if (found.some((entry) => entry === undefined)) {
      const batch = await runRollout(manager, options.policy, options.tokenizer, {
        ...options.rollout,
        mode: "train",
        temperature: 1,
        seed: seed + reset,
      });
      sampledTokens += batch.trajectories.reduce((sum, t) => sum + t.responseLength, 0);
      const byGroup = groupTrajectories(batch.trajectories, envGroups);
      for (const [g, key] of keys.entries()) {
        if (found[g]) continue;
        const lost = batch.lost?.find((episode) => episode.groupId === g);
        if (lost)
          throw new Error(
            `estimateVStarForStates: group ${g} of reset ${reset} (${stateKey(key.tag, key.seed)}) has no estimate, as its env server failed: ${lost.reason}; a rerun samples it again, and the states already estimated are kept in the cache`,
          );
        const trajectories = byGroup[g]!;
        const stray = trajectories.find((t) => t.tag !== key.tag || t.seed !== key.seed);
        if (stray || trajectories.length !== samples)
          throw new Error(
            `estimateVStarForStates: group ${g} of reset ${reset} did not play ${samples} times ${stateKey(key.tag, key.seed)}`,
          );
        const summary = summarizeSamples(
          trajectories.map((t) => t.reward),
          trajectories.map((t) => t.success),
          beta1,
        );
        const generatedTokens = trajectories.reduce((sum, t) => sum + t.responseLength, 0);
        const entry: VStarEntry = { ...key, ...summary, generatedTokens };
        await options.cache?.put(entry);
        found[g] = entry;
        sampledStates++;
      }
    }
    for (const entry of found) covered.push(entry!);
    options.onProgress?.((reset - startReset + 1) * envGroups, total);
  }

  const entries = new Map<string, VStarEntry>();
  const dropped = new Set<string>();
  for (const entry of covered) {
    const key = stateKey(entry.tag, entry.seed);
    if (options.dropAllZero && entry.allZero) dropped.add(key);
    else entries.set(key, entry);
  }
  const metrics = stage1Metrics(covered, samples);
  metrics["vstar/sampled_states"] = sampledStates;
  metrics["vstar/dropped_states"] = dropped.size;
  // What the estimates cost in generation, reused ones included, to compare algorithms on the same
  // budget of generated tokens; a killed and restarted run counts each estimate once.
  metrics["vstar/generated_tokens"] = covered.reduce((sum, e) => sum + (e.generatedTokens ?? 0), 0);
  metrics["vstar/sampled_tokens"] = sampledTokens;
  const uncounted = covered.filter((e) => e.generatedTokens === undefined).length;
  if (uncounted > 0) metrics["vstar/uncounted_states"] = uncounted;
  metrics["timing_s/vstar"] = (performance.now() - start) / 1000;
  return { entries, dropped, metrics };
}

/** V̂* of a trajectory's start state, or undefined where stage 1 did not cover it (or dropped it). */
export function vstarLookup(
  estimates: Pick<VStarEstimates, "entries">,
): (t: Trajectory) => number | undefined {
  return (t) => estimates.entries.get(stateKey(t.tag, t.seed))?.vstar;
}

function groupTrajectories(trajectories: readonly Trajectory[], envGroups: number): Trajectory[][] {
  const out: Trajectory[][] = Array.from({ length: envGroups }, () => []);
  for (const t of trajectories) out[t.groupId]!.push(t);
  return out;
}

/** Mean V̂*, pass@N (A*-PO's ceiling: it can only sharpen what the reference already finds) per tag and overall. */
function stage1Metrics(entries: readonly VStarEntry[], samples: number): Record<string, number> {
  const metrics: Record<string, number> = { "vstar/states": entries.length };
  const summarize = (prefix: string, of: readonly VStarEntry[]) => {
    if (of.length === 0) return;
    const mean = (pick: (e: VStarEntry) => number) => of.reduce((a, e) => a + pick(e), 0) / of.length;
    metrics[`${prefix}/mean`] = mean((e) => e.vstar);
    metrics[`${prefix}/pass@${samples}`] = mean((e) => Number(e.pass));
    metrics[`${prefix}/all_zero_fraction`] = mean((e) => Number(e.allZero));
  };
  summarize("vstar", entries);
  for (const tag of new Set(entries.map((e) => e.tag))) {
    summarize(
      `vstar/${tag}`,
      entries.filter((e) => e.tag === tag),
    );
  }
  return metrics;
}
