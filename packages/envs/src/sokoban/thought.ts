/** Sokoban's warm-start thoughts: the room read out loud, then the guide's reasoning or a plain try. */
import { actionWord, cellName } from "../grid-moves.js";
import { coordinateOf } from "../observation-format.js";
import type { SokobanEnv } from "./env.js";
import { sokobanGuideStep } from "./guide.js";

/**
 * The thought for a turn's move (one a turn). It first reads the room out loud — where the player, the
 * boxes and the targets are — so that a small model learns the reading one step at a time. Nothing
 * before a room is loaded.
 */
export function sokobanThought(
  env: SokobanEnv,
  actions: readonly string[],
  fromGuide: boolean,
): string | undefined {
  const room = env.room;
  if (!room) return undefined;
  const move = actionWord(actions[0] ?? "");
  // With coordinates in the observation the reading copies them; from the grid alone it counts cells.
  const coordinates = env.config.observationFormat !== "grid";
  const at = (cell: number) => (coordinates ? coordinateOf(cell, room.cols) : cellName(cell, room.cols));
  const targets = room.tiles.flatMap((tile, cell) => (tile === "target" ? [cell] : []));
  const boxes = room.boxes.map((cell) => `a box at ${at(cell)}`).join(", ");
  const goals = targets.map((cell) => `a target at ${at(cell)}`).join(", ");
  const reading = `I am at ${at(room.player)}; ${boxes}; ${goals}.`;
  if (!fromGuide) return `${reading} I try ${move}.`;
  // Several boxes: the guide is the solver (guide.ts), whose reasoning the thought cannot spell out.
  if (room.boxes.length !== 1)
    return `${reading} Moving ${move} is on my way to push the boxes onto the targets.`;
  // The guide's reasoning, one comparison at a time (guide.ts): the box's way, the cell to push it
  // from, where that cell is from the player, and the move.
  const step = sokobanGuideStep(room);
  const { row, col } = step.pushFrom;
  const from = coordinates ? `(${row}, ${col})` : cellName(row * room.cols + col, room.cols);
  const plan = `${reading} The box must go ${actionWord(step.push)}, so I push it from ${from}`;
  if (step.towards.length === 0) return `${plan}; I am there, so I push ${actionWord(step.push)}.`;
  const where = step.towards.map(actionWord).join(" and ");
  return step.around
    ? `${plan}, ${where} of me past the box, so I step ${actionWord(step.move)}.`
    : `${plan}, ${where} of me, so I move ${actionWord(step.move)}.`;
}
