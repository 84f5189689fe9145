/**
 * The update half of a training step, per algorithm: StarPO (PPO with a GAE critic, or GRPO) or A*-PO
 * (stage 1 estimates V* from the frozen start model for the start states training visits, cached with
 * the run; stage 2 regresses the policy's log-ratio onto r − V*, no critic). The settings' sections are
 * the algorithms' own option objects, passed on as they are.
 */
import { AStarPO, estimateVStarForStates, type VStarEstimates, vstarLookup } from "@ragen/algos-apo";
import { StarPO, usesCritic } from "@ragen/algos-ppo";
import type { ProgressStream } from "@ragen/logging";
import { Qwen2ValueModel } from "@ragen/models";
import { LocalModelPolicy, type TrajectoryBatch } from "@ragen/rollout";
import type { AdamW, Backend } from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";
import { createLoraCritic, usesLora } from "./lora.js";
import type { LoadedPolicy, PolicyLoader } from "./policy.js";
import { progressBar } from "./progress.js";
import type { RunStorage, StoredCheckpoint } from "./storage.js";
import { localPolicyOptions, rolloutOptions, trainingGroups } from "./validation.js";

export interface PolicyUpdater {
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
  /** What a checkpoint keeps of the algorithm besides weights and moments (StarPO's schedule clock and KL coefficient). */
  state?(): Record<string, number>;
  dispose(): void;
}

export interface UpdaterContext {
  settings: TrainingSettings;
  /** The policy being trained (the start model, or a checkpoint's actor). */
  policy: LoadedPolicy;
  backend: Backend;
  /** Loads the start model again, as the frozen reference of the KL term and of A*-PO. */
  loadPolicy: PolicyLoader;
  storage: RunStorage;
  /** The checkpoint the run resumes from, if any. */
  checkpoint: StoredCheckpoint | undefined;
  progress?: ProgressStream;
}

/**
 * StarPO's options from the settings: its section, the rollout's temperature, the run's seed, and its
 * steps (one update each), which a cosine schedule or a warm-up ratio measures the run by.
 */
export function starpoConfig(settings: TrainingSettings) {
  const { criticHeadInit: _init, ...starpo } = settings.starpo;
  return {
    ...starpo,
    temperature: settings.rollout.temperature,
    shuffleSeed: settings.seed,
    totalUpdates: settings.steps,
  };
}

/** A*-PO's stage-2 options from the settings. */
export function astarpoConfig(settings: TrainingSettings) {
  const { samples: _n, beta1: _b, dropAllZero: _d, ...stage2 } = settings.apo;
  return { ...stage2, temperature: settings.rollout.temperature, shuffleSeed: settings.seed };
}

export async function createUpdater(context: UpdaterContext): Promise<PolicyUpdater> {
  return context.settings.algorithm === "apo" ? createAStarPOUpdater(context) : createStarPOUpdater(context);
}

async function createStarPOUpdater({ settings, policy, backend, loadPolicy, checkpoint }: UpdaterContext) {
  const lora = usesLora(settings);
  let critic: Qwen2ValueModel | undefined;
  if (usesCritic(settings.starpo.advantageEstimator))
    if (lora && settings.lora.critic) critic = await createLoraCritic(policy.model, settings, checkpoint);
    else
      critic = checkpoint
        ? (await checkpoint.loadCritic(policy.config, backend)).toDtype(settings.precision)
        : await Qwen2ValueModel.fromPolicy(policy.model, settings.seed, settings.starpo.criticHeadInit);
  // The KL's reference is the start model (settings.model), also when the run resumes from a checkpoint:
  // with LoRA the actor itself with its adapters switched off, else a second copy loaded from it.
  const needsReference = settings.starpo.klCoeff > 0 || settings.starpo.klInReward;
  const reference = needsReference && !lora ? await loadPolicy(settings.model, backend) : undefined;
  // In the actor's precision, so that the KL to the reference starts at exactly 0.
  reference?.model.toDtype(settings.precision);
  const starpo = new StarPO({
    actor: policy.model,
    critic,
    reference: needsReference && lora ? policy.model : reference?.model,
    config: starpoConfig(settings),
  });
  // A checkpoint of an older run has no StarPO state: its steps are the updates it made.
  if (checkpoint) starpo.loadState({ updates: checkpoint.state.step, ...checkpoint.state.algorithm });
  return {
    critic,
    optimizers: { actor: starpo.actorOptimizer, critic: starpo.criticOptimizer },
    beforeStep: async () => ({}),
    update: (rollout: TrajectoryBatch) => starpo.update(rollout),
    state: () => ({ ...starpo.state() }),
    dispose: () => {
      starpo.dispose();
      reference?.model.dispose();
    },
  } satisfies PolicyUpdater;
}

async function createAStarPOUpdater({
  settings,
  policy,
  backend,
  loadPolicy,
  storage,
  progress,
}: UpdaterContext) {
  // The reference is always the start model, also when the run resumes from a checkpoint: with LoRA the
  // actor itself with its adapters switched off (stage 1 samples from it so too), else a second copy.
  const lora = usesLora(settings);
  const reference = lora ? policy : await loadPolicy(settings.model, backend);
  reference.model.toDtype(settings.precision);
  const asReference = <T>(fn: () => Promise<T>): Promise<T> =>
    lora ? reference.model.withoutAdapters(fn) : fn();
  const apo = new AStarPO({
    actor: policy.model,
    reference: reference.model,
    config: astarpoConfig(settings),
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
      const resets = settings.train.tokenBudget > 0 ? 1 : Math.max(settings.steps - resetsDone, 1);
      const cache = storage.openVStarCache();
      const bar = progressBar(
        progress,
        "A*-PO stage 1: V* of start states",
        resets * settings.train.envGroups,
      );
      try {
        const { mode: _mode, temperature: _t, seed: _s, ...rollout } = rolloutOptions(settings, "train", 0);
        const referenceModel = await reference.identity();
        const estimates = await asReference(() =>
          estimateVStarForStates({
            policy: new LocalModelPolicy(
              reference.model,
              reference.tokenizer,
              localPolicyOptions(settings.rollout),
            ),
            tokenizer: reference.tokenizer,
            envs: { envGroups: settings.train.envGroups, tags: trainingGroups(settings) },
            resets,
            startReset: resetsDone,
            referenceModel,
            samples: settings.apo.samples,
            beta1: settings.apo.beta1,
            dropAllZero: settings.apo.dropAllZero,
            rollout,
            seed: settings.seed * 1_000_003 + 500_000,
            cache,
            onProgress: (done) => bar.update(done),
          }),
        );
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
      if (!lora) reference.model.dispose();
    },
  } satisfies PolicyUpdater;
}
