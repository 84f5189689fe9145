import { readAction } from "../action.js";
import { makeSokobanRoom, type SokobanRoom } from "./room.js";

/** The four moves, in RAGEN's order (action ids 1..4). */
export const SOKOBAN_ACTIONS = ["Up", "Down", "Left", "Right"] as const;
export type SokobanAction = (typeof SOKOBAN_ACTIONS)[number];

/** Row and column change of each move, indexed like SOKOBAN_ACTIONS. */
export const SOKOBAN_MOVE_DELTAS: readonly (readonly [number, number])[] = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];

/** The action named by `action` (trimmed, any case), or null (also for no readable action: see readAction). */
export function parseSokobanAction(action: string): SokobanAction | null {
  const text = readAction(action);
  if (text === null) return null;
  const wanted = text.trim().toLowerCase();
  return SOKOBAN_ACTIONS.find((a) => a.toLowerCase() === wanted) ?? null;
}

/** The cell one step from `cell` in direction `action`, or -1 outside the grid. */
export function sokobanNeighbour(room: SokobanRoom, cell: number, action: SokobanAction): number {
  const [dr, dc] = SOKOBAN_MOVE_DELTAS[SOKOBAN_ACTIONS.indexOf(action)]!;
  const r = Math.floor(cell / room.cols) + dr;
  const c = (cell % room.cols) + dc;
  if (r < 0 || r >= room.rows || c < 0 || c >= room.cols) return -1;
  return r * room.cols + c;
}

export interface SokobanMoveResult {
  /** The room after the move (the same object when nothing moved). */
  room: SokobanRoom;
  /** The player changed cell. */
  moved: boolean;
  /** A box was pushed. */
  pushed: boolean;
}

/**
 * Move the player one cell. Walking onto a box pushes it one cell further when that cell is floor or
 * a target without a box; otherwise, and against a wall, nothing moves.
 */
export function applySokobanMove(room: SokobanRoom, action: SokobanAction): SokobanMoveResult {
  const unchanged = { room, moved: false, pushed: false };
  const next = sokobanNeighbour(room, room.player, action);
  if (next < 0 || room.tiles[next] === "wall") return unchanged;
  if (!room.boxes.includes(next)) {
    return {
      room: makeSokobanRoom(room.rows, room.cols, room.tiles, next, room.boxes),
      moved: true,
      pushed: false,
    };
  }
  const beyond = sokobanNeighbour(room, next, action);
  if (beyond < 0 || room.tiles[beyond] === "wall" || room.boxes.includes(beyond)) return unchanged;
  const boxes = room.boxes.map((b) => (b === next ? beyond : b));
  return { room: makeSokobanRoom(room.rows, room.cols, room.tiles, next, boxes), moved: true, pushed: true };
}
