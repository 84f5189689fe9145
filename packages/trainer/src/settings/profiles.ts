/**
 * Named sets of defaults laid over the library defaults. A profile says where a job wants other values
 * than the libraries, and why; it is chosen by name (`profile=ragen`), by the model's size, or by the
 * algorithm, and a config file and the command line still win over it.
 */
import { EMBEDDED_MODEL, type SettingsLayer, type TrainingSettings } from "./fields.js";
import { RAGEN_BASE_VALUES, RAGEN_LORA_VALUES, ragen2Values, settingsLayerOf } from "./ragen-configs.js";

export interface Profile {
  description: string;
  settings: SettingsLayer;
}

/** The profiles chosen by name. */
export const PROFILES = {
  auto: {
    description:
      "embedded for models under 50M parameters (the embedded one, its checkpoints), ragen for the others",
    settings: {},
  },
  embedded: {
    description:
      "The Quest homework on the embedded tiny model, sized for 2 CPU cores (about 15 minutes): fewer, shorter responses, smaller batches, StarPO-S filtering per env",
    settings: {
      steps: 18,
      outDir: "runs/quest",
      checkpointEvery: 5,
      // 8 groups of 4 rather than 16: a step's rollouts stay affordable on a CPU.
      train: { groupSize: 4 },
      // Two validations besides the first (steps 9 and 18), each on 64 seeds per env.
      validation: { groupsPerEnv: 64, every: 9 },
      // The tiny model's answers are short; RAGEN's 5 actions and 400 tokens would mostly pad.
      rollout: { maxActionsPerTurn: 2, maxNewTokens: 48 },
      // 32 trajectories a step make 4 optimiser steps of 8; the filter keeps half the groups, the ones
      // whose rewards differ (a group that all failed or all won teaches nothing).
      starpo: {
        ppoMiniBatchSize: 8,
        microBatchSize: 8,
        uncertaintyFilter: true,
        rolloutFilterRatio: 0.5,
        // Two envs share one small model. Ranked together, FrozenLake's groups (rewards 0 or 1) crowd
        // Bandit's (0 or 0.1) out of the batch, and whitened together every Bandit answer scores below
        // the batch's mean: FrozenLake's updates then wear Bandit's text away with nothing to hold it.
        filterPerEnv: true,
        whitenPerEnv: true,
        // A fresh critic's random head adds noise of the size of the rewards to the first advantages,
        // and Adam's first steps move every weight by about the learning rate: one such step was
        // enough to turn Bandit's answers into FrozenLake moves. Values start at 0, and the rate rises
        // over the moment estimates' horizon (1 / (1 - beta1) = 10 optimiser steps).
        criticHeadInit: "zero",
        lrWarmupSteps: 10,
        // Whitened each on its own, Bandit's small reward spread is scaled up to FrozenLake's, and its
        // answers move with steps that large (on seeds 0 and 4 it ended below its start). Centred per env
        // with one scale for the batch, it ended above its start on every seed measured (the Quest README).
        whitenScale: "batch",
      },
      apo: { miniBatchSize: 8, microBatchSize: 8 },
    },
  },
  ragen: {
    description:
      "RAGEN's base config with StarPO-S (8x16 rollouts, 400 tokens a turn, 200 steps, the top quarter of groups by reward spread): for a pretrained model on a GPU",
    settings: settingsLayerOf(RAGEN_BASE_VALUES),
  },
  ragen2: {
    description: "RAGEN-2's base config: RAGEN's, with 2 actions a turn and 512 validation seeds per env",
    settings: settingsLayerOf(ragen2Values()),
  },
} as const satisfies Record<string, Profile>;

export type ProfileName = keyof typeof PROFILES;

/** Older names still accepted in config files and on the command line. */
export const PROFILE_ALIASES: Readonly<Record<string, ProfileName>> = { quest: "embedded" };

/** The profile `auto` picks for a model of this many parameters (unknown: by the model's name). */
export function autoProfile(parameterCount: number | undefined, model: string): "embedded" | "ragen" {
  if (parameterCount === undefined) return model === EMBEDDED_MODEL ? "embedded" : "ragen";
  return parameterCount < SMALL_MODEL_PARAMETERS ? "embedded" : "ragen";
}

/**
 * Below this many parameters a model gets the small-model profile: the embedded model and any model of
 * its size — its checkpoints, its fine-tunes — wherever it is loaded from. (Choosing by name would give
 * a checkpoint of the embedded model RAGEN's 1e-6, and it would not move in a short run.)
 */
export const SMALL_MODEL_PARAMETERS = 50_000_000;

/**
 * Small models get bigger steps, since their few parameters must move within a short run, and a KL term
 * to the start model: without it, those steps let one env's updates wear away the other's text.
 *
 * The actor's rate is 2.5e-4, not 5e-4: Adam moves every weight by about the rate whatever the gradient's
 * size, and at 5e-4 one update of the embedded model, once warmed up, could move it far enough to break
 * Bandit's answers (seed 3 of the Quest: KL to the start model 0.01 -> 0.23 in two steps, valid Bandit
 * answers 100% -> 6%, validation 56% -> 3%). At 2.5e-4 the KL stayed under 0.06 on those seeds and the
 * answers held (examples/quest-frozenlake/README.md, "Measured: five seeds").
 */
export const SMALL_MODEL_PROFILE: Profile = {
  description: `Models under ${SMALL_MODEL_PARAMETERS / 1e6}M parameters: larger learning rates and a KL term to the start model`,
  settings: {
    starpo: { actorLr: 2.5e-4, criticLr: 1e-3, klCoeff: 0.03 },
    apo: { lr: 5e-4 },
  },
};

/**
 * LoRA runs (lora.rank above 0): RAGEN's learning rates with LoRA, ten times its full fine-tune's,
 * since only the small adapters move. The small-model profile, laid over it, keeps its own rates.
 */
export const LORA_PROFILE: Profile = {
  description: "LoRA runs (lora.rank above 0): RAGEN's learning rates with LoRA, actor 1e-5 and critic 1e-4",
  settings: settingsLayerOf(RAGEN_LORA_VALUES),
};

/** Defaults that depend on the algorithm: A*-PO samples one response per start state (stage 2). */
export const ALGORITHM_PROFILES: Record<TrainingSettings["algorithm"], Profile | undefined> = {
  starpo: undefined,
  apo: {
    description: "A*-PO: one response per start state, as the method specifies",
    settings: { train: { groupSize: 1 } },
  },
};

export function isProfileName(name: unknown): name is ProfileName {
  return typeof name === "string" && Object.hasOwn(PROFILES, name);
}

/** A profile name or alias as the profile it names, or undefined for an unknown name. */
export function canonicalProfile(name: unknown): ProfileName | undefined {
  if (isProfileName(name)) return name;
  return typeof name === "string" && Object.hasOwn(PROFILE_ALIASES, name) ? PROFILE_ALIASES[name] : undefined;
}
