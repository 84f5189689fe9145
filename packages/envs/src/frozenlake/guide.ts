/**
 * FrozenLake's warm-start guide: it moves towards the goal (at random among the moves that bring the
 * player closer). The slippery-ice oracle plans around holes in ways a small model does not learn from
 * a few thousand examples (its teacher-forced choice of the oracle's move stayed at chance); moving
 * closer is learnable from the coordinates, and over 2000 seeds with 5 actions it succeeds 25.7% of the
 * time against 16.1% for random moves and 29.8% for the oracle.
 */
import { GRID_MOVES, type GridMove, thoughtOrder } from "../grid-moves.js";
import type { Rng } from "../rng.js";
import type { FrozenLakeCell } from "./dynamics.js";
import type { FrozenLakeEnv } from "./env.js";
import { frozenLakeOracle } from "./oracle.js";

/** The moves that bring the player (or a player at `from`) closer to the goal, in Left, Down, Right, Up order. */
export function frozenLakeMovesTowardsGoal(
  env: FrozenLakeEnv,
  from: FrozenLakeCell | null = env.position,
): string[] {
  if (!env.map || !from) return [];
  const size = env.map.size;
  const goal = { row: Math.floor(env.map.goal / size), col: env.map.goal % size };
  const { row, col } = from;
  const distance = (r: number, c: number) => Math.abs(goal.row - r) + Math.abs(goal.col - c);
  return Object.entries(GRID_MOVES)
    .filter(([, [dr, dc]]) => distance(row + dr, col + dc) < distance(row, col))
    .map(([name]) => name);
}

/**
 * Up to `count` moves for one turn. Each move brings the player closer to the goal from the cell the
 * moves before it lead to if the ice holds (so a plan can be made blind), and the plan stops on the goal.
 * With a choice of closer moves, the plan takes them in turn in the order the thought names them
 * (vertical first): "down and left of me" plans "Down || Left", so the answer copies the thought's words.
 * (Picking one of them at random left the second move of a pair to a guess: a model this small got it
 * right a third of the time.) `rng` only breaks the tie on the goal's own cell. Before the first reset
 * it plays the oracle's move.
 */
export function frozenLakeGuide(env: FrozenLakeEnv, rng: Rng, count: number): string[] {
  if (!(env.map && env.position)) return [frozenLakeOracle(env, rng)];
  const size = env.map.size;
  let { row, col } = env.position;
  const plan: string[] = [];
  // The plan ends early on the goal: no move from there brings the player closer.
  for (let i = 0; i < count && (i === 0 || row * size + col !== env.map.goal); i++) {
    const closer = frozenLakeMovesTowardsGoal(env, { row, col });
    const move =
      closer.length > 0 ? thoughtOrder(closer)[i % closer.length]! : rng.choice(Object.keys(GRID_MOVES));
    plan.push(move);
    const [dr, dc] = GRID_MOVES[move as GridMove];
    // A move into the border leaves the player where it is.
    row = Math.min(size - 1, Math.max(0, row + dr));
    col = Math.min(size - 1, Math.max(0, col + dc));
  }
  return plan;
}
