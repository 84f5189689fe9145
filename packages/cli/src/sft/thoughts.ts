/**
 * The templated thoughts of the warm-start chats: a short reason for each action, written so that the
 * thought always explains the action actually taken (thinking and acting agree).
 */
import { BanditEnv, type Env, FrozenLakeEnv, SokobanEnv, WebShopEnv } from "@ragen/envs";
import { thoughtOrder } from "./grid-moves.js";
import { movesTowardsGoal } from "./guide.js";
import { sokobanGuideStep } from "./sokoban-guide.js";

const DIRECTION_WORDS: Record<string, string> = { Left: "left", Right: "right", Up: "up", Down: "down" };

/** "row 2, column 3": a cell of a grid `width` wide, counted from 1 as a person reads the grid. */
function cellName(cell: number, width: number): string {
  return `row ${Math.floor(cell / width) + 1}, column ${(cell % width) + 1}`;
}

/**
 * A short reason for `actions` — one action or a turn's several (`fromOracle`: the guide chose them) —
 * in the env's current state. On grid envs it first reads the grid out loud — where the player and the
 * goal (or box and target) are — so that a small model learns the reading one step at a time instead of
 * jumping from grid to direction. Only FrozenLake's thoughts name more than the first action.
 */
export function thoughtFor(env: Env, actions: string | readonly string[], fromOracle = false): string {
  const list = typeof actions === "string" ? [actions] : actions;
  const word = (a: string) => DIRECTION_WORDS[a] ?? a.toLowerCase();
  const action = list[0] ?? "";
  const move = word(action);
  if (env instanceof FrozenLakeEnv && env.map && env.position) {
    const moves = list.map(word).join(", then ");
    const size = env.map.size;
    const goalRow = Math.floor(env.map.goal / size);
    const goalCol = env.map.goal % size;
    const { row, col } = env.position;
    // Vertical before horizontal, as a person says it: "down and left of me".
    const closer = movesTowardsGoal(env);
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
    return fromOracle
      ? `${reading} Moving ${moves} brings me closer to the goal.`
      : `${reading} Without a plan, I try ${moves}.`;
  }
  if (env instanceof SokobanEnv && env.room) {
    const room = env.room;
    const targets = room.tiles.flatMap((tile, cell) => (tile === "target" ? [cell] : []));
    const boxes = room.boxes.map((cell) => `a box at ${cellName(cell, room.cols)}`).join(", ");
    const goals = targets.map((cell) => `a target at ${cellName(cell, room.cols)}`).join(", ");
    const reading = `I am at ${cellName(room.player, room.cols)}; ${boxes}; ${goals}.`;
    if (!fromOracle) return `${reading} I try ${move}.`;
    // Several boxes: the guide is the solver (guide.ts), whose reasoning the thought cannot spell out.
    if (room.boxes.length !== 1)
      return `${reading} Moving ${move} is on my way to push the boxes onto the targets.`;
    // The guide's reasoning, one comparison at a time (sokoban-guide.ts): the box's way, the cell to
    // push it from, where that cell is from the player, and the move.
    const step = sokobanGuideStep(room);
    const from = cellName(step.pushFrom.row * room.cols + step.pushFrom.col, room.cols);
    const plan = `${reading} The box must go ${word(step.push)}, so I push it from ${from}`;
    if (step.towards.length === 0) return `${plan}; I am there, so I push ${word(step.push)}.`;
    const where = step.towards.map(word).join(" and ");
    return step.around
      ? `${plan}, ${where} of me past the box, so I step ${word(step.move)}.`
      : `${plan}, ${where} of me, so I move ${word(step.move)}.`;
  }
  if (env instanceof WebShopEnv) return webShopThought(action, fromOracle);
  if (env instanceof BanditEnv) {
    // No word pair in common with FrozenLake's thoughts: worded "..., so I choose Dragon.", a tiny model
    // trained on both envs let FrozenLake's updates leak in ("Dragon sounds like, so I try down.").
    return `${action} sounds like the arm with the bigger payoff: pick ${action}.`;
  }
  return `I choose ${action}.`;
}

const NAVIGATION_BUTTONS = new Set([
  "next >",
  "< prev",
  "back to search",
  "description",
  "features",
  "reviews",
]);

/** WebShop: what the guide's action is for (webshop-guide.ts); a plain try for a random one. */
function webShopThought(action: string, fromOracle: boolean): string {
  if (!fromOracle) return `I try ${action}.`;
  const argument = /^\w+\[(.*)\]$/.exec(action)?.[1] ?? "";
  if (action.startsWith("search[")) return "I search for the product the instruction describes.";
  if (argument === "buy now") return "Every option the instruction names is selected, so I buy it.";
  if (/^b0[a-z0-9]{8}$/.test(argument)) return "The first result matches my search best, so I open it.";
  if (NAVIGATION_BUTTONS.has(argument)) return `The product is not here yet, so I click ${argument}.`;
  return `The instruction asks for ${argument}, so I select it.`;
}
