/**
 * Builds the embedded default model of the Quest job, reproducibly: SFT chats on FrozenLake and Bandit
 * (oracle/random mix), a small BPE vocabulary trained on them, a tiny Qwen2-architecture model
 * warm-started on the chats, then validation on fixed seeds; the result is saved as a Hugging Face
 * folder (config.json, model.safetensors, tokenizer files).
 *
 *   pnpm --filter @ragen/example-quest-frozenlake warm-start [--out ../../packages/trainer/embedded-model] [--steps 100] [--batch 8]
 *     [--lr 2e-3] [--decay none|linear] [--max-turns 5] [--chats FrozenLakeGridCoord=400,Bandit=400]
 *     [--oracle FrozenLakeGridCoord=0.35,Bandit=0.2] [--drills FrozenLakeGridCoord=8000] [--drill-steps 1000]
 *     [--drill-batch 16] [--drill-oracle FrozenLakeGridCoord=0.5] [--drill-turns 2] [--actions-per-turn 2]
 *     [--random-actions-per-turn 1] [--oracle-choice chat|turn] [--drill-start first|random]
 *     [--answer-weight 1] [--tie-embeddings true|false] [--from <model dir>]
 *
 * `--from` continues training a model this script saved (its weights and vocabulary) instead of starting
 * from a new vocabulary and random weights, so a recipe can run in stages; `--steps 0` skips the chats.
 */
import { parseArgs } from "node:util";
import { FROZEN_LAKE_SYMBOLS, SOKOBAN_DEFAULT_SYMBOLS } from "@ragen/envs";
import { ProgressBar } from "@ragen/logging";
import { parseQwen2Config, Qwen2Model, type Qwen2Shape } from "@ragen/models";
import { saveQwen2 } from "@ragen/models/node";
import { LocalModelPolicy } from "@ragen/rollout";
import {
  answerTokenWeights,
  generateReadingDrills,
  generateSftConversations,
  type SftConversation,
  sftCorpus,
  sftFormat,
  tokenizeConversations,
  warmStart,
} from "@ragen/sft";
import { webGpuBackend } from "@ragen/tensor-webgpu";
import { QWEN2_SPLIT_PATTERN, trainBpeTokenizer } from "@ragen/tokenizer";
import { type LoadedPolicy, resolveSettings, validate, validationManager } from "@ragen/trainer";
import { loadPolicy } from "@ragen/trainer/node";

const { values } = parseArgs({
  options: {
    out: { type: "string", default: "../../packages/trainer/embedded-model" },
    steps: { type: "string", default: "100" },
    chats: { type: "string", default: "FrozenLakeGridCoord=400,Bandit=400" },
    vocab: { type: "string", default: "1024" },
    seed: { type: "string", default: "0" },
    "val-groups": { type: "string", default: "16" },
    batch: { type: "string", default: "8" },
    lr: { type: "string", default: "2e-3" },
    // "none" (constant) or "linear" (down to a tenth by the last step).
    decay: { type: "string", default: "none" },
    // Turns per chat: fewer turns make cheaper samples; the model still sees every kind of state.
    "max-turns": { type: "string", default: "5" },
    // Per env, the probability that a warm-start action is the oracle's; low enough that RL has room.
    oracle: { type: "string", default: "FrozenLakeGridCoord=0.35,Bandit=0.2" },
    // First phase: one-turn chats without the rules (see generateReadingDrills); "none" skips it.
    drills: { type: "string", default: "FrozenLakeGridCoord=8000" },
    "drill-steps": { type: "string", default: "1000" },
    "drill-batch": { type: "string", default: "16" },
    // The drills' oracle share: higher than the chats', since drills are where the model learns which
    // move the oracle picks on a map; the chats that follow set the share RL starts from.
    "drill-oracle": { type: "string", default: "FrozenLakeGridCoord=0.5" },
    // Turns per drill: several teach the later turns' lookup of the latest state in the history.
    "drill-turns": { type: "string", default: "2" },
    // "random": drills cut from any point of a chat, not only its start (see generateReadingDrills).
    "drill-start": { type: "string", default: "first" },
    // FrozenLake moves per turn (the Quest job's rollout.maxActionsPerTurn); other envs answer one action.
    "actions-per-turn": { type: "string", default: "2" },
    // Moves a random FrozenLake turn tries: fewer than the guide's makes the mediocre template a hesitant one.
    "random-actions-per-turn": { type: "string", default: "1" },
    // "chat": each chat (and drill) draws oracle-or-random once, and every turn follows the first.
    "oracle-choice": { type: "string", default: "chat" },
    // "false": a separate output head. Tied, the embeddings of answers no state predicts (Sokoban's
    // moves: the solver's move is beyond a tiny model) converge to one vector, and the answer cannot
    // copy the thought's move because the four move words look alike (cosine 0.94-0.98).
    "tie-embeddings": { type: "string", default: "true" },
    // Loss weight of the answer's tokens against 1 for the rest of a response (see answerTokenWeights).
    "answer-weight": { type: "string", default: "1" },
    from: { type: "string" },
  },
});
const steps = Number(values.steps);
/**
 * A coordinate line of the coord observations with its label ("Player: (2, 2)"), or a bare coordinate as
 * the thoughts write it (" (2, 2)"): each becomes one token, so that reading the player's cell is a
 * lookup by content alone ("the Player token") rather than "the token after the token Player:".
 */
const COORDINATE_PATTERN = "(?:Start|Goal|Player): \\(\\d+, \\d+\\)| ?\\(\\d+, \\d+\\)";
/**
 * Square brackets as tokens of their own. Merged with what follows ("[w", "[b"), the first word of a
 * WebShop answer ("search[wrinkle ...", "click[b09i...") is a token the page never shows, and copying it
 * from the page is a lookup the model has to learn word by word.
 */
const BRACKET_PATTERN = "[\\[\\]]";
const seed = Number(values.seed);
const tieEmbeddings = values["tie-embeddings"];
if (tieEmbeddings !== "true" && tieEmbeddings !== "false")
  throw new Error(`--tie-embeddings: expected true or false, got "${tieEmbeddings}"`);
const tieWordEmbeddings = tieEmbeddings === "true";

/** "Tag=value,Tag=value" into a map, each value checked by `valid`. */
function perEnv(option: string, text: string, valid: (x: number) => boolean): Map<string, number> {
  return new Map(
    text.split(",").map((pair) => {
      const [tag, raw] = pair.split("=");
      const value = Number(raw);
      if (!tag || !valid(value)) throw new Error(`--${option}: expected Tag=value pairs, got "${pair}"`);
      return [tag.trim(), value] as const;
    }),
  );
}
if (values.decay !== "none" && values.decay !== "linear")
  throw new Error(`--decay: expected none or linear, got "${values.decay}"`);
const oracleChoice = values["oracle-choice"];
if (oracleChoice !== "turn" && oracleChoice !== "chat")
  throw new Error(`--oracle-choice: expected turn or chat, got "${oracleChoice}"`);
const drillStart = values["drill-start"];
if (drillStart !== "first" && drillStart !== "random")
  throw new Error(`--drill-start: expected first or random, got "${drillStart}"`);
const oracleMix = perEnv("oracle", values.oracle!, (p) => p >= 0 && p <= 1);
const actionsPerTurn = Number(values["actions-per-turn"]);
if (!Number.isInteger(actionsPerTurn) || actionsPerTurn < 1)
  throw new Error(`--actions-per-turn: expected a whole number from 1, got "${values["actions-per-turn"]}"`);
const randomActionsPerTurn = Number(values["random-actions-per-turn"]);
if (
  !Number.isInteger(randomActionsPerTurn) ||
  randomActionsPerTurn < 1 ||
  randomActionsPerTurn > actionsPerTurn
)
  throw new Error(
    `--random-actions-per-turn: expected a whole number from 1 to --actions-per-turn, got "${values["random-actions-per-turn"]}"`,
  );
// Chats and drills are written and tokenised with the prompt the Quest job will show.
const format = sftFormat(actionsPerTurn);
const drillOracleMix = perEnv("drill-oracle", values["drill-oracle"]!, (p) => p >= 0 && p <= 1);
const chatCounts = perEnv("chats", values.chats!, (n) => Number.isInteger(n) && n > 0);
const chats = [...chatCounts].flatMap(([envTag, count]) =>
  generateSftConversations({
    envTag,
    // Training chats use seeds far from the validation seeds (RAGEN validates at 123 + group).
    seeds: Array.from({ length: count }, (_, i) => 100_000 + i),
    oracleProbability: oracleMix.get(envTag) ?? 0,
    maxTurns: Number(values["max-turns"]),
    actionsPerTurn,
    randomActionsPerTurn,
    oracleChoice,
  }),
);
const drillCounts =
  values.drills === "none"
    ? new Map<string, number>()
    : perEnv("drills", values.drills!, (n) => Number.isInteger(n) && n > 0);
const drills = [...drillCounts].flatMap(([envTag, count]) =>
  generateReadingDrills({
    envTag,
    seeds: Array.from({ length: count }, (_, i) => 200_000 + i),
    oracleProbability: drillOracleMix.get(envTag) ?? oracleMix.get(envTag) ?? 0,
    maxTurns: Number(values["drill-turns"]),
    start: drillStart,
    chatTurns: Number(values["max-turns"]),
    actionsPerTurn,
    randomActionsPerTurn,
    oracleChoice,
  }),
);
console.log(`${chats.length} warm-start chats, ${drills.length} reading drills`);
const backend = await webGpuBackend();
const { model, tokenizer, config, tokenizerFiles } =
  values.from === undefined ? newModel() : await loadPolicy(values.from, backend);
console.log(`tokenizer: ${tokenizer.vocabSize} tokens${values.from ? ` (from ${values.from})` : ""}`);

/** A vocabulary trained on this run's chats and drills, and a tiny Qwen2 model with random weights. */
function newModel(): Pick<LoadedPolicy, "model" | "config" | "tokenizer" | "tokenizerFiles"> {
  const trained = trainBpeTokenizer(sftCorpus([...chats, ...drills]), {
    vocabSize: Number(values.vocab),
    addedTokens: ["<think>", "</think>", "<answer>", "</answer>"],
    // One token per grid cell: with cells merged ("__", "_O") the column of P is hidden in token widths.
    separateCharacters: [
      ...Object.values(FROZEN_LAKE_SYMBOLS),
      ...Object.values(SOKOBAN_DEFAULT_SYMBOLS),
    ].join(""),
    // One token per (labelled) coordinate pair. With digits as tokens of their own the second number of
    // a pair follows ", " — as in every other pair — and a model this small kept guessing it (26% right
    // against 85% for the first); with bare pairs as tokens it copied the player's pair 35% of the time.
    splitPattern: `${COORDINATE_PATTERN}|${BRACKET_PATTERN}|${QWEN2_SPLIT_PATTERN}`,
  });
  const shape: Qwen2Shape = {
    vocabSize: trained.tokenizer.vocabSize,
    hiddenSize: 128,
    intermediateSize: 344,
    numHiddenLayers: 4,
    numAttentionHeads: 4,
    numKeyValueHeads: 2,
    rmsNormEps: 1e-6,
    ropeTheta: 10000,
    tieWordEmbeddings,
  };
  const config = parseQwen2Config({
    architectures: ["Qwen2ForCausalLM"],
    model_type: "qwen2",
    vocab_size: shape.vocabSize,
    hidden_size: shape.hiddenSize,
    intermediate_size: shape.intermediateSize,
    num_hidden_layers: shape.numHiddenLayers,
    num_attention_heads: shape.numAttentionHeads,
    num_key_value_heads: shape.numKeyValueHeads,
    rms_norm_eps: shape.rmsNormEps,
    rope_theta: shape.ropeTheta,
    tie_word_embeddings: tieWordEmbeddings,
    max_position_embeddings: 4096,
    torch_dtype: "float32",
    hidden_act: "silu",
    bos_token_id: null,
    eos_token_id: trained.tokenizer.imEndId,
  });
  return {
    model: Qwen2Model.random(shape, seed, backend),
    config,
    tokenizer: trained.tokenizer,
    tokenizerFiles: {
      tokenizer: trained.tokenizerJson,
      tokenizerConfig: trained.tokenizerConfig as unknown as Record<string, unknown>,
    },
  };
}
const pad = tokenizer.padTokenId ?? 0;
const answerWeight = Number(values["answer-weight"]);
if (!(answerWeight > 0))
  throw new Error(`--answer-weight: expected a positive number, got "${values["answer-weight"]}"`);
/** The sequences of `conversations` and, with an answer weight other than 1, their token weights. */
function trainingData(conversations: readonly SftConversation[]) {
  const sequences = tokenizeConversations(tokenizer, conversations, format);
  if (answerWeight === 1) return { sequences };
  return { sequences, tokenWeights: sequences.map((s) => answerTokenWeights(tokenizer, s, answerWeight)) };
}
const drillSteps = drills.length > 0 ? Number(values["drill-steps"]) : 0;
if (drillSteps > 0) {
  const drillBar = new ProgressBar({ label: "reading drills", total: drillSteps, stream: process.stderr });
  const { sequences, tokenWeights } = trainingData(drills);
  const drillLosses = await warmStart(model, sequences, pad, {
    ...(tokenWeights ? { tokenWeights } : {}),
    steps: drillSteps,
    batchSize: Number(values["drill-batch"]),
    lr: Number(values.lr),
    seed: seed + 1,
    onStep: (_, loss) => drillBar.tick(1, `loss ${loss.toFixed(3)}`),
  });
  drillBar.finish();
  console.log(`drill loss: first ${drillLosses[0]!.toFixed(3)}, last ${drillLosses.at(-1)!.toFixed(3)}`);
}
if (steps > 0) {
  const bar = new ProgressBar({ label: "warm start", total: steps, stream: process.stderr });
  const { sequences, tokenWeights } = trainingData(chats);
  const losses = await warmStart(model, sequences, pad, {
    ...(tokenWeights ? { tokenWeights } : {}),
    steps,
    batchSize: Number(values.batch),
    lr: Number(values.lr),
    decay: values.decay === "linear" ? "linear" : "none",
    seed,
    onStep: (_, loss) => bar.tick(1, `loss ${loss.toFixed(3)}`),
  });
  bar.finish();
  console.log(`loss: first ${losses[0]!.toFixed(3)}, last ${losses.at(-1)!.toFixed(3)}`);
}

// Validation exactly as the Quest job validates, on the same fixed seeds, so its "start" matches this;
// the response budget grows to fit the longest response the model was taught (Sokoban's guided
// thoughts run past the Quest default), since a cut thought is an unparsed answer.
const longestResponse = Math.max(
  0,
  ...chats.flatMap((chat) => chat.turns.map((turn) => tokenizer.encode(turn.response ?? "").length + 1)),
);
const questDefaults = (await resolveSettings()).settings;
const { settings: questConfig } = await resolveSettings({
  overrides: [
    `envs=${[...chatCounts.keys()].join(",")}`,
    `validation.groupsPerEnv=${values["val-groups"]}`,
    `seed=${seed}`,
    `rollout.maxActionsPerTurn=${actionsPerTurn}`,
    `rollout.maxNewTokens=${Math.max(questDefaults.rollout.maxNewTokens, longestResponse)}`,
  ],
});
const validation = await validate(
  validationManager(questConfig),
  new LocalModelPolicy(model, tokenizer),
  tokenizer,
  questConfig,
  0,
);
for (const tag of questConfig.envs) {
  const success = validation.metrics[`val-env/${tag}/success`] ?? Number.NaN;
  console.log(
    `validation ${tag}: success ${(100 * success).toFixed(1)}% over ${questConfig.validation.groupsPerEnv} seeds`,
  );
}

await saveQwen2(model, config, values.out!, {
  tokenizer: tokenizerFiles.tokenizer,
  ...(tokenizerFiles.tokenizerConfig ? { tokenizerConfig: tokenizerFiles.tokenizerConfig } : {}),
  overwrite: true,
});
console.log(`saved ${values.out}`);
