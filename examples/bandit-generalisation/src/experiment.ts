/**
 * RAGEN's Bandit generalisation study: train on one pair of arm names (Phoenix pays 0.1 every time,
 * Dragon 1 with probability 0.25), then validate on the training pair, on an unseen pair (Trader /
 * Librarian) and on the training names with the payoffs swapped. An agent that learned what the names
 * suggest keeps choosing well on the unseen pair; one that memorised "Dragon" fails the reversed test.
 */
import type { ResolvedSettings } from "@ragen/trainer";
import { type RunArguments, resolveRunSettings } from "@ragen/trainer/node";

export const BANDIT_GENERALISATION_DEFAULTS = [
  "envs=Bandit",
  "validation.envs=Bandit,BanditTest,BanditReversed",
  "outDir=runs/bandit-generalisation",
  // Below the small-model default (2.5e-4, set for the Quest's mix, where FrozenLake's many tokens share
  // each Adam step): with Bandit's short answers alone, 5e-4 broke the embedded model's text in one step.
  "starpo.actorLr=2e-4",
] as const;

/** Where the experiment's settings come from in the run's config.json and `--print-config`. */
export const BANDIT_GENERALISATION_SOURCE = "experiment bandit-generalisation";

/**
 * The run's settings: the experiment's defaults, then the user's config file, then their `key=value`
 * overrides (which win); relative paths mean `cwd`. Throws ConfigError naming a bad setting.
 */
export function banditGeneralisationSettings(
  parsed: Pick<RunArguments, "configFile" | "overrides"> & { sizeModel?: boolean | "if-available" },
  cwd: string,
): Promise<ResolvedSettings> {
  return resolveRunSettings({
    ...parsed,
    cwd,
    experiment: [{ source: BANDIT_GENERALISATION_SOURCE, overrides: BANDIT_GENERALISATION_DEFAULTS }],
  });
}
