/** The four moves of the grid envs (FrozenLake, Sokoban) and the order thoughts name them in. */

export type GridMove = "Left" | "Down" | "Right" | "Up";

/**
 * Each move's (row, column) step. The key order is the order FrozenLake's guide draws a random move
 * from, so it stays Left, Down, Right, Up (RAGEN's action order there).
 */
export const GRID_MOVES: Readonly<Record<GridMove, readonly [number, number]>> = {
  Left: [0, -1],
  Down: [1, 0],
  Right: [0, 1],
  Up: [-1, 0],
};

/** The order a thought names directions in: vertical before horizontal ("down and left of me"). */
export const THOUGHT_ORDER: readonly GridMove[] = ["Down", "Up", "Right", "Left"];

/** Moves in the order a thought names directions: vertical before horizontal ("down and left"). */
export function thoughtOrder(moves: readonly string[]): string[] {
  return THOUGHT_ORDER.filter((m) => moves.includes(m));
}
