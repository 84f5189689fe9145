/**
 * Rollout trajectories as the records the run report reads. The state of each turn is drawn as an SVG by
 * replaying the episode: an env's randomness comes only from its seed, so the same seed and the same
 * executed actions reproduce every state the agent saw.
 */
import { createEnv } from "@ragen/envs";
import type { TrajectoryRecord } from "@ragen/logging";
import type { Trajectory } from "@ragen/rollout";

const ANSWER = /<answer>([\s\S]*?)<\/answer>/;

export function toTrajectoryRecord(
  trajectory: Trajectory,
  step: number,
  split: "train" | "val",
): TrajectoryRecord {
  const env = createEnv(trajectory.tag);
  env.reset(trajectory.seed);
  let inStep = true;
  const turns = trajectory.turns.map((turn) => {
    // A picture of another state would mislead: once the replay disagrees with what the agent saw, stop.
    inStep &&= env.render() === turn.observation;
    const stateSvg = inStep ? env.renderSvg() : undefined;
    for (const action of turn.executed) if (!env.done) env.step(action);
    return {
      ...(stateSvg === undefined ? {} : { stateSvg }),
      stateText: turn.observation,
      think: turn.think,
      answer: ANSWER.exec(turn.response)?.[1]?.trim() ?? "",
      actions: turn.executed,
      reward: turn.reward,
      valid: !turn.formatPenalized,
    };
  });
  return {
    step,
    split,
    envTag: trajectory.tag,
    seed: trajectory.seed,
    group: trajectory.groupId,
    turns,
    totalReward: trajectory.reward,
    success: trajectory.success,
    ...(trajectory.policyVersion === undefined ? {} : { policyVersion: trajectory.policyVersion }),
  };
}
