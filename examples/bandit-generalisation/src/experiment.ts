/**
 * RAGEN's Bandit generalisation study: train on one pair of arm names (Phoenix pays 0.1 every time,
 * Dragon 1 with probability 0.25), then validate on the training pair, on an unseen pair (Trader /
 * Librarian) and on the training names with the payoffs swapped. An agent that learned what the names
 * suggest keeps choosing well on the unseen pair; one that memorised "Dragon" fails the reversed test.
 */
export const BANDIT_GENERALISATION_DEFAULTS = [
  "envs=Bandit",
  "validation.envs=Bandit,BanditTest,BanditReversed",
  "outDir=runs/bandit-generalisation",
  // The small-model default (5e-4) is set for the Quest's mix, where FrozenLake's many tokens share each
  // Adam step; with Bandit's short answers alone it breaks the embedded model's text in one step.
  "starpo.actorLr=2e-4",
] as const;
