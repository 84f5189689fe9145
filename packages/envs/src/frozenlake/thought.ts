/** FrozenLake's warm-start thoughts: the grid read out loud, then the reason for the turn's moves. */
import { actionWord, cellName, DIRECTION_WORDS, thoughtOrder } from "../grid-moves.js";
import type { FrozenLakeEnv } from "./env.js";
import { frozenLakeMovesTowardsGoal } from "./guide.js";

/**
 * The thought for a turn's `actions` (all of them named: a turn may plan several moves). It first reads
 * the grid out loud — where the player and the goal are — so that a small model learns the reading one
 * step at a time instead of jumping from grid to direction. Nothing before the first reset.
 */
export function frozenLakeThought(
  env: FrozenLakeEnv,
  actions: readonly string[],
  fromGuide: boolean,
): string | undefined {
  if (!(env.map && env.position)) return undefined;
  const moves = actions.map(actionWord).join(", then ");
  const size = env.map.size;
  const goalRow = Math.floor(env.map.goal / size);
  const goalCol = env.map.goal % size;
  const { row, col } = env.position;
  // Vertical before horizontal, as a person says it: "down and left of me".
  const closer = frozenLakeMovesTowardsGoal(env);
  const wanted = thoughtOrder(closer).map((m) => DIRECTION_WORDS[m]);
  const where = wanted.length > 0 ? `${wanted.join(" and ")} of me` : "here";
  // With coordinates in the observation the reading is a copy of them; from the grid alone it counts.
  const coordinates = env.config.observationFormat !== "grid";
  const player = coordinates ? `(${row}, ${col})` : cellName(row * size + col, size);
  const goal = coordinates ? `(${goalRow}, ${goalCol})` : cellName(env.map.goal, size);
  const reading = `I am at ${player}; the goal is at ${goal}, ${where}.`;
  // The template RL can promote names the guide's move: one that brings the player closer. The other
  // shares no words with the rules text: worded "The ice is slippery, so I try up.", it echoed the
  // rules' "The ice is slippery: ...", and a warm-started model then chose it at the first turn four
  // times in five whatever share of the chats it had (0.25 or 0.5), leaving RL too few guided tries.
  return fromGuide
    ? `${reading} Moving ${moves} brings me closer to the goal.`
    : `${reading} Without a plan, I try ${moves}.`;
}
