/** Bandit's warm-start thought: why the pulled arm (the turn's one action) looks like the better one. */
import type { Env } from "../types.js";

/**
 * The thought for a pull. No word pair in common with FrozenLake's thoughts: worded "..., so I choose
 * Dragon.", a tiny model trained on both envs let FrozenLake's updates leak in ("Dragon sounds like, so
 * I try down.").
 */
export function banditThought(_env: Env, actions: readonly string[], _fromGuide = false): string {
  const action = actions[0] ?? "";
  return `${action} sounds like the arm with the bigger payoff: pick ${action}.`;
}
