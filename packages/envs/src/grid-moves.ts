/**
 * The four moves of the grid envs (FrozenLake, Sokoban), the order the warm start's thoughts name them
 * in, and the words those thoughts use for moves and cells.
 */

export type GridMove = "Left" | "Down" | "Right" | "Up";

/** A cell as row and column, counted from 0. */
export interface GridCell {
  row: number;
  col: number;
}

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

/** The directions from `from` to `to`, in thought order. */
export function directionsTowards(from: GridCell, to: GridCell): GridMove[] {
  return THOUGHT_ORDER.filter((move) => {
    const [dr, dc] = GRID_MOVES[move];
    return (
      (dr !== 0 && Math.sign(to.row - from.row) === dr) || (dc !== 0 && Math.sign(to.col - from.col) === dc)
    );
  });
}

export const DIRECTION_WORDS: Readonly<Record<string, string>> = {
  Left: "left",
  Right: "right",
  Up: "up",
  Down: "down",
};

/** An action as a thought words it: a move in lower case ("left"), anything else lower-cased too. */
export function actionWord(action: string): string {
  return DIRECTION_WORDS[action] ?? action.toLowerCase();
}

/** "row 2, column 3": a cell of a grid `width` wide, counted from 1 as a person reads the grid. */
export function cellName(cell: number, width: number): string {
  return `row ${Math.floor(cell / width) + 1}, column ${(cell % width) + 1}`;
}
