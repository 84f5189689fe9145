/**
 * How well a warm-started model writes the guide's answers, teacher-forced on held-out turns of any point
 * of an episode: per kind of answer, the top-1 accuracy of its tokens and the share of answers right in
 * every token. On WebShop this separates what the guide asks for (copying the product phrase into a
 * search, a product id from the results, an option value from the instruction) from the fixed answers.
 *
 * On the grid envs (FrozenLake, Sokoban) it also measures whether the answer follows the thought: each
 * random-template turn ("... I try down.") is replayed with each of the four moves written into the
 * thought, and the model's most likely first answer token is compared with that move. A model whose
 * answer ignores its thought scores about 25%, and RL then has no thought template to promote.
 *
 *   pnpm --filter @ragen/example-quest-frozenlake probe-answers <model dir>
 *     [--env WebShopCompact] [--turns 64] [--actions-per-turn 1]
 *
 * --actions-per-turn must be the one the model was warm-started with: it is part of the rules text.
 */
import { parseArgs } from "node:util";
import { markdownTable } from "@ragen/logging";
import { generateReadingDrills, sftFormat, tokenizeConversations } from "@ragen/sft";
import { argmax, asyncScope, noGrad, type Tensor, webGpuBackend } from "@ragen/tensor-webgpu";
import { loadPolicy } from "@ragen/trainer/node";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    env: { type: "string", default: "WebShopCompact" },
    turns: { type: "string", default: "64" },
    "actions-per-turn": { type: "string", default: "1" },
  },
});
const modelDir = positionals[0];
if (!modelDir) throw new Error("probe-answers: expected a model folder as the first argument");

/** The kind of a guide answer: the action, with WebShop's clicks told apart by what they click. */
function answerKind(answer: string): string {
  if (answer.startsWith("search[")) return "search (copy the product phrase)";
  if (/^click\[b0[a-z0-9]{8}\]$/.test(answer)) return "open a product (copy its id)";
  if (answer === "click[buy now]") return "buy now";
  if (answer.startsWith("click[")) return "click an option or button";
  return answer;
}

const { model, tokenizer } = await loadPolicy(modelDir, await webGpuBackend());
// Seeds away from the warm start's (100000+, 200000+) and the validation seeds (123+).
const turns = generateReadingDrills({
  envTag: values.env!,
  seeds: Array.from({ length: Number(values.turns) }, (_, i) => 300_000 + i),
  oracleProbability: 1,
  start: "random",
});
const format = sftFormat(Number(values["actions-per-turn"]));
const answerOpen = tokenizer.encode("<answer>");

/** The model's most likely token after each position of `tokens`. */
async function predictions(tokens: Int32Array): Promise<Int32Array> {
  return await asyncScope(async () => {
    const logits: Tensor = noGrad(() => model.logits({ ids: tokens, batch: 1, seqLen: tokens.length }));
    return (await argmax(logits).data()) as Int32Array;
  });
}

const stats = new Map<string, { tokens: number; right: number; whole: number; answers: number }>();
for (const [i, sequence] of tokenizeConversations(tokenizer, turns, format).entries()) {
  const answer = /<answer>(.*)<\/answer>/.exec(turns[i]!.turns[0]!.response ?? "")?.[1] ?? "";
  const predicted = await predictions(Int32Array.from(sequence.tokens));
  // The answer's tokens: from after "<answer>" to the end of the answer text.
  const at = sequence.tokens.findIndex(
    (_, t) => sequence.lossMask[t] === 1 && answerOpen.every((id, k) => sequence.tokens[t + k] === id),
  );
  const first = at + answerOpen.length;
  const count = tokenizer.encode(answer).length;
  let right = 0;
  for (let t = first; t < first + count; t++) if (predicted[t - 1] === sequence.tokens[t]) right++;
  const kind = answerKind(answer);
  const s = stats.get(kind) ?? { tokens: 0, right: 0, whole: 0, answers: 0 };
  s.tokens += count;
  s.right += right;
  s.whole += right === count ? 1 : 0;
  s.answers++;
  stats.set(kind, s);
}
console.log(
  `${modelDir}: the guide's answers, teacher-forced, on ${turns.length} held-out ${values.env} turns\n`,
);
console.log(
  markdownTable(
    ["answer", "turns", "tokens right", "whole answer right"],
    [...stats].map(([kind, s]) => [
      kind,
      String(s.answers),
      `${((100 * s.right) / s.tokens).toFixed(0)}%`,
      `${((100 * s.whole) / s.answers).toFixed(0)}%`,
    ]),
  ),
);

const MOVES = ["up", "down", "left", "right"] as const;
const TRIED_MOVE = /I try (up|down|left|right)\.<\/think><answer>\w+/;
const randomTurns = generateReadingDrills({
  envTag: values.env!,
  seeds: Array.from({ length: Number(values.turns) }, (_, i) => 400_000 + i),
  oracleProbability: 0,
  start: "random",
}).filter((drill) => TRIED_MOVE.test(drill.turns[0]!.response ?? ""));
if (randomTurns.length > 0) {
  let follows = 0;
  for (const drill of randomTurns) {
    for (const move of MOVES) {
      const answer = move[0]!.toUpperCase() + move.slice(1);
      const turn = drill.turns[0]!;
      const response = (turn.response ?? "").replace(TRIED_MOVE, `I try ${move}.</think><answer>${answer}`);
      const [sequence] = tokenizeConversations(
        tokenizer,
        [{ ...drill, turns: [{ ...turn, response }] }],
        format,
      );
      const tokens = sequence!.tokens;
      // The position of the answer's first token: right after the last "<answer>".
      const first = tokens.lastIndexOf(answerOpen.at(-1)!) + 1;
      const predicted = await predictions(Int32Array.from(tokens.subarray(0, first)));
      if (predicted[first - 1] === tokenizer.encode(answer)[0]) follows++;
    }
  }
  const share = (100 * follows) / (4 * randomTurns.length);
  console.log(
    `\nthe answer follows the thought's move (each of 4 moves written into ${randomTurns.length} random-template turns): ` +
      `${share.toFixed(0)}% (chance 25%)`,
  );
}
