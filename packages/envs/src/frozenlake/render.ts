import { coordinateOf, gridCoordObservation } from "../observation-format.js";
import { type CellStyle, gridSvg } from "../svg.js";
import type { FrozenLakeObservationFormat } from "./config.js";
import { type FrozenLakeMap, frozenLakeTile } from "./map.js";

/** The grid symbols (RAGEN's grid_lookup) and what they mean (its grid_vocab). */
export const FROZEN_LAKE_SYMBOLS = {
  player: "P",
  frozen: "_",
  hole: "O",
  goal: "G",
  playerInHole: "X",
  playerOnGoal: "√",
} as const;

export const FROZEN_LAKE_SYMBOL_LEGEND: readonly (readonly [string, string])[] = [
  [FROZEN_LAKE_SYMBOLS.player, "player"],
  [FROZEN_LAKE_SYMBOLS.frozen, "frozen ice"],
  [FROZEN_LAKE_SYMBOLS.hole, "hole"],
  [FROZEN_LAKE_SYMBOLS.goal, "goal"],
  [FROZEN_LAKE_SYMBOLS.playerInHole, "player in a hole"],
  [FROZEN_LAKE_SYMBOLS.playerOnGoal, "player on the goal"],
];

type CellKind = keyof typeof FROZEN_LAKE_SYMBOLS;

function cellKind(map: FrozenLakeMap, cell: number, player: number): CellKind {
  const tile = frozenLakeTile(map, cell);
  if (cell === player) return tile === "H" ? "playerInHole" : tile === "G" ? "playerOnGoal" : "player";
  return tile === "H" ? "hole" : tile === "G" ? "goal" : "frozen";
}

function cellKinds(map: FrozenLakeMap, player: number): CellKind[][] {
  return Array.from({ length: map.size }, (_, r) =>
    Array.from({ length: map.size }, (_, c) => cellKind(map, r * map.size + c, player)),
  );
}

/** The map as rows of symbols, the start drawn as plain ice: e.g. "P___\n_O_O\n___O\nO__G". */
export function renderFrozenLakeGrid(map: FrozenLakeMap, player: number): string {
  return cellKinds(map, player)
    .map((row) => row.map((kind) => FROZEN_LAKE_SYMBOLS[kind]).join(""))
    .join("\n");
}

/**
 * RAGEN-2's coordinate description: the board size, then (row, col) coordinates of the start, goal,
 * player (or player on goal / in hole) and holes, one line each, lines without coordinates left out.
 */
export function renderFrozenLakeCoords(map: FrozenLakeMap, player: number): string {
  const at = (cell: number) => coordinateOf(cell, map.size);
  const holes: number[] = [];
  for (let cell = 0; cell < map.size * map.size; cell++)
    if (frozenLakeTile(map, cell) === "H") holes.push(cell);
  const playerTile = frozenLakeTile(map, player);
  const playerLabel =
    playerTile === "G" ? "Player on goal" : playerTile === "H" ? "Player in hole" : "Player";
  const lines = [
    `Board size: ${map.size} rows x ${map.size} cols (zero-indexed).`,
    `Start: ${at(map.start)}`,
    `Goal: ${at(map.goal)}`,
    `${playerLabel}: ${at(player)}`,
  ];
  if (holes.length > 0) lines.push(`Holes: ${holes.map(at).join(", ")}`);
  return lines.join("\n");
}

/** The observation text in one of RAGEN-2's three formats. */
export function renderFrozenLakeObservation(
  map: FrozenLakeMap,
  player: number,
  format: FrozenLakeObservationFormat,
): string {
  switch (format) {
    case "grid":
      return renderFrozenLakeGrid(map, player);
    case "coord":
      return renderFrozenLakeCoords(map, player);
    case "grid_coord":
      return gridCoordObservation(renderFrozenLakeCoords(map, player), renderFrozenLakeGrid(map, player));
  }
}

const CELL_STYLES: Record<CellKind, CellStyle> = {
  frozen: { fill: "#dff3fb", label: "frozen ice" },
  hole: { fill: "#1d3557", glyph: "○", glyphColor: "#a8c6e0", label: "hole" },
  goal: { fill: "#ffd166", glyph: "★", glyphColor: "#9c6b00", label: "goal" },
  player: { fill: "#dff3fb", glyph: "☺", glyphColor: "#c1121f", label: "player" },
  playerInHole: { fill: "#1d3557", glyph: "✖", glyphColor: "#ff6b6b", label: "player in a hole" },
  playerOnGoal: { fill: "#80ed99", glyph: "√", glyphColor: "#1b4332", label: "player on the goal" },
};

/** The lake as an SVG grid: one rect per cell, styled by what is on it. */
export function renderFrozenLakeSvg(map: FrozenLakeMap, player: number, caption?: string): string {
  return gridSvg(cellKinds(map, player), CELL_STYLES, caption === undefined ? {} : { caption });
}
