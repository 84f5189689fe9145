/**
 * The update half of a training step, per algorithm: StarPO (PPO with a GAE critic, or GRPO) or A*-PO
 * (stage 1 estimates V* from the frozen start model for the start states training visits, cached on
 * disk in the run folder; stage 2 regresses the policy's log-ratio onto r − V*, no critic).
 */
import { createHash } from "node:crypto";
import { createReadStream, readdirSync } from "node:fs";
import { join } from "node:path";
import { AStarPO, estimateVStarForStates, type VStarEstimates, vstarLookup } from "@ragen/algos-apo";
import { VStarFileCache } from "@ragen/algos-apo/node";
import { StarPO } from "@ragen/algos-ppo";
import { ProgressBar } from "@ragen/logging";
import { Qwen2ValueModel } from "@ragen/models";
import { LocalModelPolicy, type TrajectoryBatch } from "@ragen/rollout";
import type { AdamW, Backend } from "@ragen/tensor-webgpu";
import { loadCheckpointCritic } from "./checkpoint.js";
import { type QuestConfig, type SizeDependentSettings, trainingGroups } from "./config.js";
import { type LoadedPolicy, loadPolicy } from "./model.js";
import { rolloutOptions } from "./validate.js";

/** Where A*-PO's stage 1 keeps its estimates, inside the run folder. */
export const VSTAR_CACHE_FILE = "vstar.jsonl";

export interface QuestTrainer {
  /** The critic a checkpoint saves (PPO with GAE only). */
  readonly critic: Qwen2ValueModel | undefined;
  /** The optimisers a checkpoint saves, by name. */
  readonly optimizers: Record<string, AdamW | undefined>;
  /**
   * Work before the training step whose rollout is reset number `resetsDone` (A*-PO's stage 1 for the
   * start states not estimated yet); returns its metrics, empty when there was nothing to do.
   */
  beforeStep(resetsDone: number): Promise<Record<string, number>>;
  update(rollout: TrajectoryBatch): Promise<Record<string, number>>;
  dispose(): void;
}

export interface TrainerContext {
  config: QuestConfig;
  /** The policy being trained (the start model, or a checkpoint's actor). */
  policy: LoadedPolicy;
  backend: Backend;
  /** The checkpoint the run resumes from, if any. */
  checkpointDir: string | undefined;
  /** The learning rates and KL coefficient to train with (`sizeDependentSettings`: the config's, or the defaults for the model's size). */
  rates: SizeDependentSettings;
}

export async function createTrainer(context: TrainerContext): Promise<QuestTrainer> {
  return context.config.algorithm === "apo" ? createAStarPOTrainer(context) : createStarPOTrainer(context);
}

async function createStarPOTrainer({ config, policy, backend, checkpointDir, rates }: TrainerContext) {
  const s = config.starpo;
  let critic: Qwen2ValueModel | undefined;
  if (s.advantageEstimator === "gae")
    critic = checkpointDir
      ? loadCheckpointCritic(checkpointDir, policy.config, backend)
      : await Qwen2ValueModel.fromPolicy(policy.model, config.seed);
  const { actorLr, criticLr, klCoeff } = rates;
  // The KL term's reference is the start model (config.model), also when the run resumes from a checkpoint.
  const reference = klCoeff > 0 ? await loadPolicy(config.model, backend) : undefined;
  const starpo = new StarPO({
    actor: policy.model,
    critic,
    reference: reference?.model,
    config: {
      advantageEstimator: s.advantageEstimator,
      actorLr,
      criticLr,
      ppoMiniBatchSize: s.ppoMiniBatchSize,
      microBatchSize: s.microBatchSize,
      ppoEpochs: s.ppoEpochs,
      entropyCoeff: s.entropyCoeff,
      klCoeff,
      clipRatioLow: s.clipRatioLow,
      clipRatioHigh: s.clipRatioHigh,
      maxGradNorm: s.maxGradNorm,
      gamma: s.gamma,
      lambda: s.lambda,
      uncertaintyFilter: s.uncertaintyFilter,
      rolloutFilterRatio: s.rolloutFilterRatio,
      temperature: config.rollout.temperature,
      shuffleSeed: config.seed,
    },
  });
  return {
    critic,
    optimizers: { actor: starpo.actorOptimizer, critic: starpo.criticOptimizer },
    beforeStep: async () => ({}),
    update: (rollout: TrajectoryBatch) => starpo.update(rollout),
    dispose: () => {
      starpo.dispose();
      reference?.model.dispose();
    },
  } satisfies QuestTrainer;
}

async function createAStarPOTrainer({ config, policy, backend, rates }: TrainerContext) {
  // The reference is always the start model, also when the run resumes from a checkpoint.
  const reference = await loadPolicy(config.model, backend);
  const a = config.apo;
  const apo = new AStarPO({
    actor: policy.model,
    reference: reference.model,
    config: {
      beta2: a.beta2,
      entropyCoeff: a.entropyCoeff,
      lr: rates.apoLr,
      maxGradNorm: config.starpo.maxGradNorm,
      miniBatchSize: a.miniBatchSize,
      microBatchSize: a.microBatchSize,
      temperature: config.rollout.temperature,
      shuffleSeed: config.seed,
    },
  });
  // V* of every start state estimated so far, and the first reset not covered yet.
  const entries: VStarEstimates["entries"] = new Map();
  let coveredUntil = -1;
  return {
    critic: undefined,
    optimizers: { actor: apo.optimizer },
    async beforeStep(resetsDone: number) {
      if (resetsDone < coveredUntil) return {};
      // Stage 1 covers every step to come at once, with one progress bar and ETA — unless a token budget
      // ends the run, whose number of steps is unknown: then it covers one step at a time, so that no
      // state the run never reaches is sampled (the reference is frozen, so the estimates are the same).
      const resets = config.train.tokenBudget > 0 ? 1 : Math.max(config.steps - resetsDone, 1);
      const cache = VStarFileCache.open(join(config.outDir, VSTAR_CACHE_FILE));
      const bar = new ProgressBar({
        label: "A*-PO stage 1: V* of start states",
        total: resets * config.train.envGroups,
        stream: process.stderr,
      });
      try {
        const { mode: _mode, temperature: _t, seed: _s, ...rollout } = rolloutOptions(config, "train", 0);
        const estimates = await estimateVStarForStates({
          policy: new LocalModelPolicy(reference.model, reference.tokenizer, {
            prefixCaching: config.rollout.prefixCaching,
          }),
          tokenizer: reference.tokenizer,
          envs: {
            envGroups: config.train.envGroups,
            tags: trainingGroups(config),
          },
          resets,
          startReset: resetsDone,
          referenceModel: await modelIdentity(config.model, reference.path),
          samples: a.samples,
          beta1: a.beta1,
          dropAllZero: a.dropAllZero,
          rollout,
          seed: config.seed * 1_000_003 + 500_000,
          cache,
          onProgress: (done) => bar.update(done),
        });
        bar.finish();
        for (const [key, entry] of estimates.entries) entries.set(key, entry);
        coveredUntil = resetsDone + resets;
        return estimates.metrics;
      } finally {
        cache.close();
      }
    },
    async update(rollout: TrajectoryBatch) {
      if (coveredUntil < 0) throw new Error("A*-PO: stage 1 has not run (call beforeStep first)");
      const lookup = vstarLookup({ entries });
      // States stage 1 dropped (all samples failed) are played but not trained on.
      const kept = rollout.trajectories.filter((t) => lookup(t) !== undefined);
      const metrics: Record<string, number> = {
        "apo/dropped_trajectories": rollout.trajectories.length - kept.length,
      };
      if (kept.length === 0) return metrics;
      return { ...metrics, ...(await apo.update({ ...rollout, trajectories: kept }, lookup)) };
    },
    dispose() {
      apo.dispose();
      reference.model.dispose();
    },
  } satisfies QuestTrainer;
}

/**
 * The reference model's identity in V* cache keys: its name and a hash of its weights, so estimates of
 * a rebuilt model (same folder, new weights) are never reused.
 */
async function modelIdentity(name: string, folder: string): Promise<string> {
  const hash = createHash("sha256");
  const files = readdirSync(folder)
    .filter((name) => name.endsWith(".safetensors"))
    .sort();
  for (const file of files) {
    hash.update(file);
    for await (const chunk of createReadStream(join(folder, file))) hash.update(chunk as Buffer);
  }
  return `${name}#sha256:${hash.digest("hex").slice(0, 16)}`;
}
