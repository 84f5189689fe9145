import type { Trajectory } from "@ragen/rollout";

/** A trajectory with only the fields packing reads set from the arguments; the rest are placeholders. */
export function trajectory(
  fields: Pick<Trajectory, "tokens" | "lossMask"> & Partial<Trajectory>,
): Trajectory {
  const length = fields.tokens.length;
  return {
    index: 0,
    groupId: 0,
    tag: "Test",
    seed: 0,
    oldLogProbs: new Float32Array(length),
    tokenRewards: new Float32Array(length),
    reward: 0,
    turns: [],
    success: false,
    numActions: 1,
    actionIsValid: 1,
    actionIsEffective: 1,
    responseLength: fields.lossMask.reduce((a, b) => a + b, 0),
    finishReason: "done",
    ...fields,
  };
}

/** Eight trajectories of 4 to 12 tokens with uneven sampled-token counts (token 0 never sampled). */
export function unevenTrajectories(vocabSize: number): Trajectory[] {
  return Array.from({ length: 8 }, (_, i) => {
    const length = 4 + ((i * 5) % 9);
    return trajectory({
      index: i,
      tokens: Int32Array.from({ length }, (_, t) => (i * 7 + t * 3) % vocabSize),
      lossMask: Uint8Array.from({ length }, (_, t) => (t >= 2 && (t + i) % 3 !== 0 ? 1 : 0)),
    });
  });
}
