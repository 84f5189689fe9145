/**
 * What a warm-started model has learned to read, teacher-forced on held-out FrozenLake or Sokoban chats:
 * top-1 accuracy of the decision tokens of the templated thoughts (on FrozenLake the player's and goal's
 * cells, the first direction word, the moves and the answer; on Sokoban each comparison of the guide's),
 * split into the first turn and the later ones, and the model's probability of the guided template at
 * the first turn — the one choice RL has to move.
 *
 *   pnpm --filter @ragen/example-quest-frozenlake probe-reading <model dir> [--chats 32] [--oracle 0.5]
 *     [--actions-per-turn 2] [--random-actions-per-turn 1] [--env FrozenLakeGridCoord]
 */
import { parseArgs } from "node:util";
import { markdownTable } from "@ragen/logging";
import { generateSftConversations, sftFormat, tokenizeConversations } from "@ragen/sft";
import { argmax, asyncScope, noGrad, softmax, webGpuBackend } from "@ragen/tensor-webgpu";
import { loadPolicy } from "@ragen/trainer/node";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    chats: { type: "string", default: "32" },
    oracle: { type: "string", default: "0.5" },
    "actions-per-turn": { type: "string", default: "2" },
    "random-actions-per-turn": { type: "string", default: "1" },
    env: { type: "string", default: "FrozenLakeGridCoord" },
  },
});
const modelDir = positionals[0];
if (!modelDir) throw new Error("probe-reading: expected a model folder as the first argument");
const actionsPerTurn = Number(values["actions-per-turn"]);

/** The token a thought is about to write, named by the text before it (the thoughts' fixed wording). */
const FROZEN_LAKE_CATEGORIES: [string, RegExp][] = [
  ["player's cell", /I am at$/],
  ["goal's cell", /the goal is at$/],
  ["first direction word", /the goal is at \(\d+, \d+\), ?$/],
  // The first token after the reading only (the random template starts with a lone space token).
  ["template", /(of me|here)\.$/],
  ["first move", /(Moving| I try)$/],
  ["second move", /then$/],
  ["first answer action", /<answer>$/],
  ["second answer action", /\|\|$/],
];

/** Sokoban's guided thought, one comparison at a time (the Sokoban guide in @ragen/envs). */
const SOKOBAN_CATEGORIES: [string, RegExp][] = [
  ["player's row", /I am at row$/],
  ["player's column", /I am at row \d+, column$/],
  ["box's row", /a box at row$/],
  ["box's column", /a box at row \d+, column$/],
  ["target's row", /a target at row$/],
  ["target's column", /a target at row \d+, column$/],
  ["template", /a target at row \d+, column \d+\.$/],
  ["the box's way", /must go$/],
  ["push cell's row", /push it from row$/],
  ["push cell's column", /push it from row \d+, column$/],
  ["there or not", /push it from row \d+, column \d+$/],
  ["way to the push cell", /push it from row \d+, column \d+,$/],
  ["move", /(so I (move|step|push)| I try)$/],
  ["answer", /<answer>$/],
];

const sokoban = values.env!.includes("Sokoban");
const CATEGORIES = sokoban ? SOKOBAN_CATEGORIES : FROZEN_LAKE_CATEGORIES;
/** The first word of the guided template, which the random one ("I try ...") does not start with. */
const GUIDED_WORD = sokoban ? " The" : " Moving";

const { model, tokenizer } = await loadPolicy(modelDir, await webGpuBackend());
// Seeds away from the warm start's (100000+, 200000+) and the validation seeds (123+).
const chats = generateSftConversations({
  envTag: values.env!,
  seeds: Array.from({ length: Number(values.chats) }, (_, i) => 300_000 + i),
  oracleProbability: Number(values.oracle),
  actionsPerTurn,
  randomActionsPerTurn: Number(values["random-actions-per-turn"]),
  oracleChoice: "chat",
});
const guidedWord = tokenizer.encode(GUIDED_WORD)[0];
const counts = new Map<string, { right: number; total: number }>();
const count = (key: string, right: boolean) => {
  const c = counts.get(key) ?? { right: 0, total: 0 };
  c.right += right ? 1 : 0;
  c.total++;
  counts.set(key, c);
};
const guidedProbabilities: number[] = [];
const vocab = model.config.vocabSize;
for (const sequence of tokenizeConversations(tokenizer, chats, sftFormat(actionsPerTurn))) {
  const seqLen = sequence.tokens.length;
  // Per position: the model's top-1 next token and its next-token distribution.
  const [predicted, probabilities] = await asyncScope(async () => {
    const logits = noGrad(() => model.logits({ ids: Int32Array.from(sequence.tokens), batch: 1, seqLen }));
    return [await argmax(logits).data(), (await softmax(logits).data()) as Float32Array] as const;
  });
  let turn = -1;
  let responseStart = 0;
  for (let t = 1; t < seqLen; t++) {
    if (!sequence.lossMask[t]) continue;
    if (!sequence.lossMask[t - 1]) {
      turn++;
      responseStart = t;
    }
    const before = tokenizer.decode(Array.from(sequence.tokens.slice(responseStart, t)));
    const category = CATEGORIES.find(([, pattern]) => pattern.test(before))?.[0];
    if (!category) continue;
    count(`${category}|${turn === 0 ? "first" : "later"}`, predicted[t - 1] === sequence.tokens[t]);
    if (category === "template" && turn === 0 && guidedWord !== undefined)
      guidedProbabilities.push(probabilities[(t - 1) * vocab + guidedWord]!);
  }
}
const cell = (key: string) => {
  const c = counts.get(key);
  return c ? `${((100 * c.right) / c.total).toFixed(0)}% of ${c.total}` : "-";
};
console.log(`${modelDir}: teacher-forced top-1 on ${chats.length} held-out ${values.env} chats\n`);
console.log(
  markdownTable(
    ["token", "first turn", "later turns"],
    CATEGORIES.map(([name]) => [name, cell(`${name}|first`), cell(`${name}|later`)]),
  ),
);
const mean = guidedProbabilities.reduce((a, b) => a + b, 0) / Math.max(1, guidedProbabilities.length);
console.log(
  `\nfirst turn: probability of the guided template ("${GUIDED_WORD.trim()} ...") ${mean.toFixed(2)}, over ${guidedProbabilities.length} chats (share in the probe's chats: ${values.oracle})`,
);
