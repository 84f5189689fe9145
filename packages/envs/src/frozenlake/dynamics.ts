/**
 * How the player moves on the lake: the four actions, the border rule, and the slippery-ice outcome
 * distribution (gymnasium's: the chosen direction with probability `slipSuccessRate`, each of the two
 * perpendicular directions with half of the rest). The env samples from `frozenLakeOutcomes` and the
 * value iteration sums over it, so both always agree.
 */
import { readAction } from "../action.js";

/** Action names in RAGEN's order: its action ids 1..4 are Left, Down, Right, Up. */
export const FROZEN_LAKE_ACTIONS = ["Left", "Down", "Right", "Up"] as const;
export type FrozenLakeAction = (typeof FROZEN_LAKE_ACTIONS)[number];

/** A cell of the lake, zero-indexed from the top-left corner. */
export interface FrozenLakeCell {
  row: number;
  col: number;
}

export interface FrozenLakeDynamics {
  isSlippery: boolean;
  /** On slippery ice, the probability of moving in the chosen direction (gymnasium's success_rate). */
  slipSuccessRate: number;
}

/** One possible result of an action. */
export interface FrozenLakeOutcome {
  /** Index into FROZEN_LAKE_ACTIONS of the direction the player actually moves in. */
  direction: number;
  probability: number;
  /** Cell index (row * size + col) after the move. */
  cell: number;
}

// Indexed like FROZEN_LAKE_ACTIONS: Left, Down, Right, Up.
const ROW_STEP = [0, 1, 0, -1] as const;
const COL_STEP = [-1, 0, 1, 0] as const;

/** The cell reached by moving one step in `direction` from `cell`; a move into the border stays put. */
export function frozenLakeMove(size: number, cell: number, direction: number): number {
  const row = Math.floor(cell / size) + ROW_STEP[direction]!;
  const col = (cell % size) + COL_STEP[direction]!;
  if (row < 0 || row >= size || col < 0 || col >= size) return cell;
  return row * size + col;
}

/**
 * The outcomes of taking `action` (an index into FROZEN_LAKE_ACTIONS) at `cell`. Slippery ice gives
 * three outcomes in gymnasium's order (counter-clockwise neighbour, intended, clockwise neighbour);
 * two of them may land on the same cell at a border.
 */
export function frozenLakeOutcomes(
  size: number,
  cell: number,
  action: number,
  dynamics: FrozenLakeDynamics,
): FrozenLakeOutcome[] {
  if (!dynamics.isSlippery)
    return [{ direction: action, probability: 1, cell: frozenLakeMove(size, cell, action) }];
  const sideways = (1 - dynamics.slipSuccessRate) / 2;
  return [
    { direction: (action + 3) % 4, probability: sideways },
    { direction: action, probability: dynamics.slipSuccessRate },
    { direction: (action + 1) % 4, probability: sideways },
  ].map((o) => ({ ...o, cell: frozenLakeMove(size, cell, o.direction) }));
}

/** The action index named by `action` (trimmed, any case), or null when it names no action or is no readable action. */
export function parseFrozenLakeAction(action: unknown): number | null {
  const text = readAction(action);
  if (text === null) return null;
  const wanted = text.trim().toLowerCase();
  const index = FROZEN_LAKE_ACTIONS.findIndex((name) => name.toLowerCase() === wanted);
  return index === -1 ? null : index;
}
