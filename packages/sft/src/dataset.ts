/** An SFT data set over several envs: per env tag, how many chats and how often the oracle acts. */
import { generateSftConversations, type SftConversation } from "./sft-data.js";

export interface SftDatasetOptions {
  /** Chats per env tag. */
  chats: Readonly<Record<string, number>>;
  /** Per env tag, the probability that a turn's action is the oracle's (else random). */
  oracle: Readonly<Record<string, number>>;
  /** Seeds firstSeed, firstSeed + 1, ... per env (keep them away from the validation seeds 123, 124, ...). */
  firstSeed: number;
  maxTurns: number;
  /** FrozenLake moves per turn (default 1); other envs answer one action a turn. */
  actionsPerTurn?: number;
  /** FrozenLake moves a random turn tries (default actionsPerTurn). */
  randomActionsPerTurn?: number;
  /** Whether the oracle-or-random choice is made every turn (default) or once per chat. */
  oracleChoice?: "turn" | "chat";
}

export function generateSftDataset(options: SftDatasetOptions): SftConversation[] {
  return Object.entries(options.chats).flatMap(([envTag, count]) => {
    const oracleProbability = options.oracle[envTag];
    if (oracleProbability === undefined) throw new Error(`no oracle share given for ${envTag}`);
    return generateSftConversations({
      envTag,
      seeds: Array.from({ length: count }, (_, i) => options.firstSeed + i),
      oracleProbability,
      maxTurns: options.maxTurns,
      actionsPerTurn: options.actionsPerTurn ?? 1,
      randomActionsPerTurn: options.randomActionsPerTurn,
      oracleChoice: options.oracleChoice ?? "turn",
    });
  });
}
