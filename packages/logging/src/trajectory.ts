/**
 * The trajectory record the HTML report reads: one line of `trajectories.jsonl` per episode.
 * Rollout code writes these with `TrajectoryLog` (from "@ragen/logging/node").
 */

/** One agent turn: what the agent saw, what it thought and answered, and what it got. */
export interface TurnRecord {
  /** The state before the turn as an SVG document (`env.renderSvg()` from @ragen/envs); optional. */
  stateSvg?: string;
  /** The same state as text (`env.render()`). */
  stateText: string;
  /** The model's `<think>` content (untrusted model output; the report escapes it). */
  think: string;
  /** The model's `<answer>` content as generated. */
  answer: string;
  /** The actions parsed from the answer and executed (e.g. ["Left", "Up"] or ["Dragon"]). */
  actions: string[];
  /** Reward received for this turn, format penalty included. */
  reward: number;
  /** False when the response broke the `<think>...</think><answer>...</answer>` format. */
  valid: boolean;
}

export interface TrajectoryRecord {
  /** Training step the trajectory was collected at. */
  step: number;
  /** "train" rollouts or "val" (validation) rollouts; val seeds are compared across steps. */
  split: "train" | "val";
  /** RAGEN env tag, e.g. "FrozenLake" or "Bandit". */
  envTag: string;
  /** Env reset seed; the same seed means the same start state. */
  seed: number;
  /** Env group index: trajectories of one group share a seed (StarPO groups). */
  group: number;
  turns: TurnRecord[];
  totalReward: number;
  success: boolean;
  /** The version of the weights that sampled it, where the run numbers them (remote rollouts' adapter versions). */
  policyVersion?: number;
}

/**
 * Every complete, well-formed record of a trajectories JSONL text. Torn lines (a killed run) and records
 * whose fields have the wrong types are skipped: the report puts these fields into HTML, so a seed must
 * be a number and a think a string, whatever the file says.
 */
export function parseTrajectoriesJsonl(text: string): TrajectoryRecord[] {
  const records: TrajectoryRecord[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      // A torn last line from a killed run.
      continue;
    }
    if (isTrajectoryRecord(value)) records.push(value);
  }
  return records;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object";
const isNumber = (v: unknown): v is number => typeof v === "number" && !Number.isNaN(v);
const isInteger = (v: unknown): v is number => Number.isSafeInteger(v);

function isTurnRecord(v: unknown): v is TurnRecord {
  return (
    isObject(v) &&
    (v.stateSvg === undefined || typeof v.stateSvg === "string") &&
    typeof v.stateText === "string" &&
    typeof v.think === "string" &&
    typeof v.answer === "string" &&
    Array.isArray(v.actions) &&
    v.actions.every((a) => typeof a === "string") &&
    isNumber(v.reward) &&
    typeof v.valid === "boolean"
  );
}

/** A record whose every field has the type TrajectoryRecord says. */
export function isTrajectoryRecord(v: unknown): v is TrajectoryRecord {
  return (
    isObject(v) &&
    isInteger(v.step) &&
    (v.split === "train" || v.split === "val") &&
    typeof v.envTag === "string" &&
    isInteger(v.seed) &&
    isInteger(v.group) &&
    Array.isArray(v.turns) &&
    v.turns.every(isTurnRecord) &&
    isNumber(v.totalReward) &&
    typeof v.success === "boolean" &&
    (v.policyVersion === undefined || isInteger(v.policyVersion))
  );
}
