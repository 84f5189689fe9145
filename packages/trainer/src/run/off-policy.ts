/**
 * Off-policy control for rollouts another engine sampled (remote rollouts). Each trajectory carries the
 * adapter version v that sampled it and the server's log-probs μ of its sampled tokens. The learner
 * keeps trajectories at most k versions old, recomputes the behaviour log-probs π_v with its own
 * kernels under version v's adapter, trains PPO against π_v as the old policy, and weighs each token's
 * policy-gradient term by min(π_v / μ, C): the truncated importance weight (TIS) that corrects for the
 * engine computing other probabilities than the trainer from the same weights.
 */
import type { LoraAdapters, Qwen2Model } from "@ragen/models";
import { forwardRows, sampledTokenLogProbs } from "@ragen/rl-core";
import { type Trajectory, trainingRows } from "@ragen/rollout";

/** The trajectories sampled at most `maxStaleness` versions before `learnerVersion`, and how many were not. */
export function freshTrajectories(
  trajectories: readonly Trajectory[],
  learnerVersion: number,
  maxStaleness: number,
): { kept: Trajectory[]; dropped: number } {
  // A trajectory without a version was sampled by the weights being trained.
  const kept = trajectories.filter(
    (t) => learnerVersion - (t.policyVersion ?? learnerVersion) <= maxStaleness,
  );
  return { kept, dropped: trajectories.length - kept.length };
}

/** Sums over sampled tokens, added up across rows into a step's metrics. */
export interface MismatchTally {
  /** Sampled tokens with a server log-prob. */
  tokens: number;
  absSum: number;
  absMax: number;
  weightSum: number;
  /** Tokens whose weight was cut to the cap. */
  capped: number;
}

export function emptyTally(): MismatchTally {
  return { tokens: 0, absSum: 0, absMax: 0, weightSum: 0, capped: 0 };
}

/**
 * Per token of a row (aligned to its tokens): min(exp(behaviour − sampler), cap) on sampled tokens, 1
 * elsewhere and where the sampler reported no log-prob (NaN: a stop id the server left out of its
 * reply). Adds |behaviour − sampler| and the weights of the sampled tokens to `tally`.
 */
export function truncatedImportanceWeights(
  lossMask: Uint8Array,
  behaviour: Float32Array,
  sampler: Float32Array,
  cap: number,
  tally: MismatchTally = emptyTally(),
): Float32Array {
  const weights = new Float32Array(lossMask.length).fill(1);
  for (let t = 0; t < lossMask.length; t++) {
    if (!lossMask[t]) continue;
    const mu = sampler[t]!;
    if (!Number.isFinite(mu)) continue;
    const gap = behaviour[t]! - mu;
    const ratio = Math.exp(gap);
    const weight = Math.min(ratio, cap);
    weights[t] = weight;
    tally.tokens++;
    tally.absSum += Math.abs(gap);
    tally.absMax = Math.max(tally.absMax, Math.abs(gap));
    tally.weightSum += weight;
    if (ratio > cap) tally.capped++;
  }
  return weights;
}

export interface SamplerCorrection {
  /** The rows to train on: fresh trajectories' training rows with π_v as old log-probs and TIS weights. */
  rows: Trajectory[];
  metrics: Record<string, number>;
}

export interface SamplerCorrectionOptions {
  /** The adapter version the learner's weights are at now. */
  learnerVersion: number;
  maxStaleness: number;
  importanceCap: number;
  /**
   * The learner's log-probs of each row's targets (tokens 1 ..) under adapter `version`, at the rollout
   * temperature: what the engine should have computed.
   */
  behaviourLogProbs(version: number, rows: readonly Trajectory[]): Promise<Float32Array[]>;
}

/**
 * What an update trains on when another engine sampled `trajectories`: the fresh ones' rows, their old
 * log-probs the learner's π_v (the sampler's μ are kept only for the weights), and each sampled token's
 * truncated importance weight. Rows of the same version are recomputed together.
 */
export async function correctForSampler(
  trajectories: readonly Trajectory[],
  options: SamplerCorrectionOptions,
): Promise<SamplerCorrection> {
  const { kept, dropped } = freshTrajectories(trajectories, options.learnerVersion, options.maxStaleness);
  const rows = trainingRows(kept);
  const byVersion = new Map<number, number[]>();
  rows.forEach((row, i) => {
    const version = row.policyVersion ?? options.learnerVersion;
    byVersion.set(version, [...(byVersion.get(version) ?? []), i]);
  });
  const tally = emptyTally();
  const corrected: Trajectory[] = [...rows];
  for (const [version, indices] of [...byVersion].sort(([a], [b]) => a - b)) {
    const group = indices.map((i) => rows[i]!);
    const recomputed = await options.behaviourLogProbs(version, group);
    indices.forEach((rowIndex, j) => {
      const row = rows[rowIndex]!;
      // π_v on the sampled tokens, aligned to the row's tokens like the sampler's; 0 where unsampled.
      const behaviour = sampledTokenLogProbs(row, recomputed[j]!);
      corrected[rowIndex] = {
        ...row,
        oldLogProbs: behaviour,
        importanceWeights: truncatedImportanceWeights(
          row.lossMask,
          behaviour,
          row.oldLogProbs,
          options.importanceCap,
          tally,
        ),
      };
    });
  }
  const staleness = kept.map((t) => options.learnerVersion - (t.policyVersion ?? options.learnerVersion));
  return {
    rows: corrected,
    metrics: {
      "rollout/stale_dropped": dropped,
      "rollout/staleness":
        staleness.length === 0 ? 0 : staleness.reduce((a, b) => a + b, 0) / staleness.length,
      "rollout/logprob_mismatch_mean": tally.tokens === 0 ? 0 : tally.absSum / tally.tokens,
      "rollout/logprob_mismatch_max": tally.absMax,
      "rollout/importance_weight_mean": tally.tokens === 0 ? 1 : tally.weightSum / tally.tokens,
      "rollout/importance_weight_capped": tally.tokens === 0 ? 0 : tally.capped / tally.tokens,
    },
  };
}

/**
 * The actor's adapter weights of the last few versions, so that the behaviour log-probs of a trajectory
 * are computed under the version that sampled it. The live adapters hold the newest version; an older
 * one is written into them for the call and the newest written back (exact f32 copies), which leaves
 * the optimiser's state alone.
 */
export class AdapterVersions {
  private readonly weights = new Map<number, Map<string, Float32Array>>();
  private newest = -1;

  constructor(private readonly adapters: LoraAdapters) {}

  /** The newest version recorded. */
  get current(): number {
    return this.newest;
  }

  /** The versions kept, oldest first. */
  versions(): number[] {
    return [...this.weights.keys()].sort((a, b) => a - b);
  }

  /** Records the live adapters' weights as `version` (the newest) and forgets versions before `oldestKept`. */
  async record(version: number, oldestKept: number): Promise<void> {
    this.weights.set(version, await this.adapters.stateDict());
    this.newest = version;
    for (const kept of this.weights.keys()) if (kept < oldestKept) this.weights.delete(kept);
  }

  /** Keeps `weights` as `version`, older than the newest (a resumed run's earlier versions). */
  keep(version: number, weights: Map<string, Float32Array>): void {
    this.weights.set(version, weights);
  }

  /** Runs `fn` with the adapters at `version`; throws if that version is no longer kept. */
  async withVersion<T>(version: number, fn: () => Promise<T>): Promise<T> {
    if (version === this.newest) return fn();
    const values = this.weights.get(version);
    if (!values)
      throw new Error(
        `adapter version ${version} is not kept (versions ${this.versions().join(", ")}): a trajectory older than rollout.maxStaleness reached the update`,
      );
    this.adapters.load(values, `adapter version ${version}`);
    try {
      return await fn();
    } finally {
      this.adapters.load(this.weights.get(this.newest)!, `adapter version ${this.newest}`);
    }
  }
}

/**
 * `model`'s log-probs of each row's sampled targets (tokens 1 .., 0 where unsampled) at `temperature`,
 * without gradients, in micro-batches of similar length as the update packs them; one array per row, of
 * length tokens − 1.
 */
export function targetLogProbs(
  model: Qwen2Model,
  rows: readonly Trajectory[],
  microBatchSize: number,
  temperature: number,
): Promise<Float32Array[]> {
  return forwardRows(
    rows,
    microBatchSize,
    (input, targets, packed) => model.sequenceLogProbs(input, targets, temperature, packed.mask).logProbs,
  );
}
