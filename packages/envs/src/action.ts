/**
 * What every built-in env accepts as an action before it parses it. An agent's answer is text of
 * unbounded length from an untrusted model (or a caller passing anything at all); capping it up front
 * keeps every step's work bounded, whatever its parser does.
 */

/**
 * The longest action (in UTF-16 code units) an env reads. Far beyond any real action (arm names,
 * moves, a Countdown expression, a WebShop search); a longer one is an invalid action.
 */
export const MAX_ACTION_LENGTH = 4096;

/**
 * Joins several actions in one answer ("Up || Left"). The rollout splits answers on it, so no fixed
 * action name may contain it.
 */
export const ACTION_SEPARATOR = "||";

/**
 * The action as text, or null when an env should treat it as invalid: not a string (nothing is
 * coerced, so a hostile `toString` never runs) or longer than MAX_ACTION_LENGTH.
 */
export function readAction(action: unknown): string | null {
  if (typeof action !== "string" || action.length > MAX_ACTION_LENGTH) return null;
  return action;
}
