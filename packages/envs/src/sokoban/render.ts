import { coordinateOf, gridCoordObservation } from "../observation-format.js";
import { type CellStyle, gridSvg } from "../svg.js";
import type { SokobanCellKind, SokobanObservationFormat, SokobanSymbols } from "./config.js";
import { formatSokobanRoom, type SokobanRoom, sokobanCellKinds } from "./room.js";

/** One look per cell kind: floor is pale, targets are rose, boxes are wood, the player is blue. */
export const SOKOBAN_CELL_STYLES: Readonly<Record<SokobanCellKind, CellStyle>> = Object.freeze({
  wall: { fill: "#4a4a4a", label: "wall" },
  empty: { fill: "#f4f1e8", label: "empty floor" },
  target: { fill: "#f7dada", glyph: "◎", glyphColor: "#c62828", label: "target" },
  box: { fill: "#c8964b", glyph: "▦", glyphColor: "#5a3b12", label: "box" },
  boxOnTarget: { fill: "#6fb36f", glyph: "▦", glyphColor: "#1b4d1b", label: "box on a target" },
  player: { fill: "#dbe8fb", glyph: "●", glyphColor: "#1f5fbf", label: "player" },
  playerOnTarget: { fill: "#e9d7f5", glyph: "●", glyphColor: "#6a1b9a", label: "player on a target" },
});

/** The room as a standalone SVG document, with an optional caption under it. */
export function sokobanRoomSvg(room: SokobanRoom, caption?: string): string {
  return gridSvg(sokobanCellKinds(room), SOKOBAN_CELL_STYLES, caption ? { caption } : {});
}

/**
 * The walls in a few words. Generated rooms are closed by an outer wall of 2 * (rows + cols) - 4
 * cells that never changes; listing it cell by cell would bury the few walls that matter inside, so a
 * closed outer wall is named by its rows and columns and only the inner walls are listed. A room
 * without a closed outer wall (a hand-written one may leave it out) lists every wall.
 */
function describeSokobanWalls(room: SokobanRoom): string | null {
  const { rows, cols } = room;
  const walls = room.tiles.flatMap((tile, cell) => (tile === "wall" ? [cell] : []));
  if (walls.length === 0) return null;
  const onBorder = (cell: number) => {
    const row = Math.floor(cell / cols);
    const col = cell % cols;
    return row === 0 || row === rows - 1 || col === 0 || col === cols - 1;
  };
  const closed = room.tiles.every((tile, cell) => tile === "wall" || !onBorder(cell));
  if (!closed) return walls.map((cell) => coordinateOf(cell, cols)).join(", ");
  const border = `the border (rows 0 and ${rows - 1}, cols 0 and ${cols - 1})`;
  const inner = walls.filter((cell) => !onBorder(cell)).map((cell) => coordinateOf(cell, cols));
  return inner.length > 0 ? `${border}, plus ${inner.join(", ")}` : border;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/**
 * RAGEN-2's coordinate description, in FrozenLake's style: the board size, then zero-indexed
 * (row, col) coordinates of the player (or player on target), boxes off targets, boxes on targets,
 * every target (covered or not: the layout), and the walls (see describeSokobanWalls), one line each;
 * lines without coordinates are left out.
 */
export function renderSokobanCoords(room: SokobanRoom): string {
  const at = (cell: number) => coordinateOf(cell, room.cols);
  const onTarget = (cell: number) => room.tiles[cell] === "target";
  const targets = room.tiles.flatMap((tile, cell) => (tile === "target" ? [cell] : []));
  const looseBoxes = room.boxes.filter((cell) => !onTarget(cell));
  const placedBoxes = room.boxes.filter(onTarget);
  const lines = [
    `Board size: ${count(room.rows, "row")} x ${count(room.cols, "col")} (zero-indexed).`,
    `${onTarget(room.player) ? "Player on target" : "Player"}: ${at(room.player)}`,
  ];
  if (looseBoxes.length > 0) lines.push(`Boxes: ${looseBoxes.map(at).join(", ")}`);
  if (placedBoxes.length > 0) lines.push(`Boxes on targets: ${placedBoxes.map(at).join(", ")}`);
  lines.push(`Targets: ${targets.map(at).join(", ")}`);
  const walls = describeSokobanWalls(room);
  if (walls) lines.push(`Walls: ${walls}`);
  return lines.join("\n");
}

/** The observation text in one of RAGEN-2's three formats; the grid is drawn with `symbols`. */
export function renderSokobanObservation(
  room: SokobanRoom,
  symbols: SokobanSymbols,
  format: SokobanObservationFormat,
): string {
  switch (format) {
    case "grid":
      return formatSokobanRoom(room, symbols);
    case "coord":
      return renderSokobanCoords(room);
    case "grid_coord":
      return gridCoordObservation(renderSokobanCoords(room), formatSokobanRoom(room, symbols));
  }
}
