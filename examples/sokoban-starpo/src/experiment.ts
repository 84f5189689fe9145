/**
 * StarPO-S against plain PPO on SimpleSokoban (6x6, one box), both PPO with a GAE critic from the same
 * start model. StarPO-S is RAGEN's stabilised recipe: keep only the half of the groups whose episodes
 * disagree most (uncertainty filtering), clip-higher (0.28 above 1) and no KL term. Plain PPO trains on
 * every group, clips symmetrically at 0.2 and pulls towards the start model with a KL loss.
 */
import { fileURLToPath } from "node:url";
import { type ArmExperiment, type ArmRun, resolveArmSettings } from "@ragen/trainer/node";

/** The tiny Sokoban model of this example, built by the Quest warm-start script (see the README). */
export const SOKOBAN_MODEL_DIR = fileURLToPath(new URL("../model", import.meta.url));

export const SOKOBAN_STARPO_EXPERIMENT: ArmExperiment = {
  common: [
    "envs=SimpleSokoban",
    `model=${SOKOBAN_MODEL_DIR}`,
    "steps=20",
    "train.envGroups=8",
    "train.groupSize=4",
    "validation.groupsPerEnv=32",
    "validation.every=10",
    "rollout.maxTurns=5",
    // The model answers one action per turn (the Quest default allows two).
    "rollout.maxActionsPerTurn=1",
    // Sokoban's guided thoughts read the player, the box and the target, then reason to the move: up to
    // 69 tokens with the answer and the end token, past the Quest default of 48.
    "rollout.maxNewTokens=80",
    "starpo.advantageEstimator=gae",
    // The tiny model's learning rates (the small-model profile's), kept whatever model=... names: with
    // a pretrained model, pass its own (see the README).
    "starpo.actorLr=5e-4",
    "starpo.criticLr=1e-3",
  ],
  arms: {
    "starpo-s": [
      "starpo.uncertaintyFilter=true",
      "starpo.rolloutFilterRatio=0.5",
      "starpo.clipRatioHigh=0.28",
      "starpo.klCoeff=0",
    ],
    ppo: ["starpo.uncertaintyFilter=false", "starpo.clipRatioHigh=0.2", "starpo.klCoeff=0.001"],
  },
  outDir: "runs/sokoban-starpo",
};

/**
 * The settings of the arms to run: common settings, then the arm's, then the user's `args` (which win);
 * relative paths mean `cwd`. `outDir=...` names the experiment's folder, each arm running in a subfolder
 * named after it, and `arms=ppo` runs one arm only. Throws ConfigError naming an unknown arm or a bad
 * setting.
 */
export function armSettings(args: readonly string[], cwd: string): Promise<ArmRun[]> {
  return resolveArmSettings(args, SOKOBAN_STARPO_EXPERIMENT, cwd);
}
