/** The action budget of a trajectory: one rule for rollouts, validation, baselines and warm-start data. */
import { listPresets } from "./registry.js";

/**
 * RAGEN's max_actions_per_traj (10): the action budget of an env tag whose preset does not set its own,
 * or of a plain env name.
 */
export const DEFAULT_MAX_ACTIONS_PER_TRAJ = 10;

/** The turn limits of a rollout: together they cap the actions an episode can take. */
export interface TurnLimits {
  maxTurns: number;
  maxActionsPerTurn: number;
}

/**
 * The actions an episode of `nameOrPreset` may take: the preset's `maxActionsPerTraj` (RAGEN's
 * max_actions_per_traj), else `DEFAULT_MAX_ACTIONS_PER_TRAJ`; with `limits`, no more than its turns can
 * hold (maxTurns × maxActionsPerTurn).
 */
export function actionBudget(nameOrPreset: string, limits?: TurnLimits): number {
  const budget = listPresets()[nameOrPreset]?.maxActionsPerTraj ?? DEFAULT_MAX_ACTIONS_PER_TRAJ;
  return limits ? Math.min(budget, limits.maxTurns * limits.maxActionsPerTurn) : budget;
}
