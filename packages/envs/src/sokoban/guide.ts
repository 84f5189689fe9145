/**
 * The warm start's good policy on Sokoban with one box. The env's oracle plays the solver's shortest
 * solution, whose next move a small model cannot predict from the board: warm-started on it, the model
 * only guessed (its thought's move was a target no state explained). This guide works from three
 * coordinates, as FrozenLake's guide does from two: push the box towards the target along the rows
 * first, then the columns, and until the player stands behind the box, walk towards that cell. Every
 * step is a comparison of row and column numbers the thought has just read, so a small model can learn
 * it. It ignores walls except to step around the box, and still solves 61% of 2000 SimpleSokoban
 * rooms within 5 actions, against 75% for the solver and 10% for random moves.
 */
import { directionsTowards, GRID_MOVES, type GridCell, type GridMove, THOUGHT_ORDER } from "../grid-moves.js";
import type { Rng } from "../rng.js";
import type { SokobanEnv } from "./env.js";
import { sokobanOracle } from "./oracle.js";
import type { SokobanRoom } from "./room.js";

export type SokobanMove = GridMove;

/** One step of the guide, with the reasoning its thought spells out. */
export interface SokobanGuideStep {
  /** The way the box must go next: towards the target's row first, then its column. */
  push: SokobanMove;
  /** Where the player must stand to push that way: the cell behind the box. */
  pushFrom: GridCell;
  /** The directions from the player to `pushFrom`, vertical first; empty when the player is there. */
  towards: SokobanMove[];
  /** The move: `push` from `pushFrom`, otherwise the first of `towards` that does not walk into the box. */
  move: SokobanMove;
  /** The player had to step around the box: every way towards `pushFrom` was the box's cell. */
  around: boolean;
}

function cellOf(room: SokobanRoom, cell: number): GridCell {
  return { row: Math.floor(cell / room.cols), col: cell % room.cols };
}

/**
 * The guide's step in `room` (one box, not yet on its target). Throws on a room with several boxes,
 * where "the box" means nothing, or with the box already on the target, where there is nothing to do.
 */
export function sokobanGuideStep(room: SokobanRoom): SokobanGuideStep {
  if (room.boxes.length !== 1)
    throw new Error(`the Sokoban guide plays one box, the room has ${room.boxes.length}`);
  const boxCell = room.boxes[0]!;
  const targetCell = room.tiles.indexOf("target");
  if (boxCell === targetCell) throw new Error("the Sokoban guide has no move: the box is on the target");
  const box = cellOf(room, boxCell);
  const push = directionsTowards(box, cellOf(room, targetCell))[0]!;
  const [dr, dc] = GRID_MOVES[push];
  const pushFrom = { row: box.row - dr, col: box.col - dc };
  const player = cellOf(room, room.player);
  const towards = directionsTowards(player, pushFrom);
  if (towards.length === 0) return { push, pushFrom, towards, move: push, around: false };
  const intoBox = (move: SokobanMove) => {
    const [r, c] = GRID_MOVES[move];
    return player.row + r === box.row && player.col + c === box.col;
  };
  const free = towards.find((move) => !intoBox(move));
  if (free !== undefined) return { push, pushFrom, towards, move: free, around: false };
  // The box stands in line between the player and `pushFrom`: step sideways (across that line) onto
  // open floor.
  const alongRows = GRID_MOVES[towards[0]!][0] !== 0;
  const sideways = THOUGHT_ORDER.find((move) => {
    const [r, c] = GRID_MOVES[move];
    const row = player.row + r;
    const col = player.col + c;
    const inside = row >= 0 && col >= 0 && row < room.rows && col < room.cols;
    return (r !== 0) !== alongRows && inside && room.tiles[row * room.cols + col] !== "wall";
  });
  return { push, pushFrom, towards, move: sideways ?? towards[0]!, around: true };
}

/**
 * Sokoban's warm-start guide: `sokobanGuideStep`'s move in a room with one box; with several boxes,
 * where "the box" means nothing, the oracle's (the solver's) move. One action a turn.
 */
export function sokobanGuide(env: SokobanEnv, rng: Rng, _count: number): string[] {
  const room = env.room;
  if (room?.boxes.length === 1) return [sokobanGuideStep(room).move];
  return [sokobanOracle(env, rng)];
}
