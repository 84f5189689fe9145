/** RAGEN-2's observation formats of the grid envs (FrozenLake, Sokoban): its `observation_format`. */

/** grid: the board as symbols; coord: a coordinate description; grid_coord: both. */
export const OBSERVATION_FORMATS = ["grid", "coord", "grid_coord"] as const;
export type ObservationFormat = (typeof OBSERVATION_FORMATS)[number];

/** The grid_coord observation: RAGEN-2's headers, trailing spaces included, coordinates first. */
export function gridCoordObservation(coords: string, grid: string): string {
  return `Coordinates: \n${coords}\nGrid Map: \n${grid}`;
}

/** Zero-indexed "(row, col)" of a row-major cell on a board `cols` wide. */
export function coordinateOf(cell: number, cols: number): string {
  return `(${Math.floor(cell / cols)}, ${cell % cols})`;
}
