/**
 * The trained checkpoints the page can watch play: the tiny models the other examples ship, one per
 * env, each with the rollout settings it was trained and validated with. vite.config.ts copies each
 * `source` folder into the build under `models/<folder>/` (nothing is committed twice).
 */

export interface AgentCheckpoint {
  /** Folder name under the page's `models/` URL. */
  folder: string;
  /** The Hugging Face folder in this repository, relative to examples/browser (read at build time). */
  source: string;
  /** The preset the checkpoint was trained on. */
  trainedOn: string;
  /** The example that trained it, for the page's caption. */
  example: string;
  /** Turns per episode (RAGEN's max_turn). */
  maxTurns: number;
  maxActionsPerTurn: number;
  /** Token budget of each response. */
  maxNewTokens: number;
  /** The validation temperature of its example. */
  temperature: number;
  /** What to expect of it, shown under the panel's title. */
  note: string;
}

/** The files of a checkpoint folder the page fetches. */
export const CHECKPOINT_FILES = [
  "config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
];

/** By env name (`frozenlake`, `sokoban`, `webshop`). */
export const AGENT_CHECKPOINTS: Readonly<Record<string, AgentCheckpoint>> = {
  frozenlake: {
    folder: "frozenlake",
    source: "../../packages/trainer/embedded-model",
    trainedOn: "FrozenLakeGridCoord",
    example: "quest-frozenlake",
    maxTurns: 5,
    maxActionsPerTurn: 2,
    maxNewTokens: 48,
    temperature: 0.5,
    note: "On 128 validation seeds of FrozenLakeGridCoord its example measured 37.5% success after RL (23.4% before, random moves 19.5%, the oracle 60.2%).",
  },
  sokoban: {
    folder: "sokoban",
    source: "../sokoban-starpo/model",
    trainedOn: "SimpleSokoban",
    example: "sokoban-starpo",
    maxTurns: 5,
    maxActionsPerTurn: 1,
    maxNewTokens: 80,
    temperature: 0.5,
    note: "A warm start that imitates a coordinate guide: at temperature 1, its episodes that open with the guide's reasoning solve 26% of levels, the others 4%.",
  },
  webshop: {
    folder: "webshop",
    source: "../webshop-apo/model",
    trainedOn: "WebShopCompact",
    example: "webshop-apo",
    maxTurns: 5,
    maxActionsPerTurn: 1,
    maxNewTokens: 48,
    temperature: 0.5,
    note: "It searches with the instruction's words, but mostly fails to copy a product id: 1 of 32 validation goals bought (3.1%, as random actions).",
  },
};
