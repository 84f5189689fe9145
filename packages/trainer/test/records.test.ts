import { createEnv } from "@ragen/envs";
import type { Trajectory, TurnRecord } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { toTrajectoryRecord } from "../src/index.js";

/** A FrozenLake episode played with `actions`, as the rollout records it, with the SVG of every state. */
function play(seed: number, actions: string[]) {
  const env = createEnv("FrozenLake");
  env.reset(seed);
  const turns: TurnRecord[] = [];
  const svgs: string[] = [];
  for (const action of actions) {
    if (env.done) break;
    const observation = env.render();
    svgs.push(env.renderSvg());
    const { reward } = env.step(action);
    turns.push({
      observation,
      response: `<think>go ${action}</think><answer>${action}</answer>`,
      think: `go ${action}`,
      actions: [action],
      executed: [action],
      reward,
      formatPenalized: false,
      responseTokens: 5,
    });
  }
  const trajectory = {
    tag: "FrozenLake",
    seed,
    groupId: 2,
    turns,
    reward: turns.reduce((a, t) => a + t.reward, 0),
    success: env.done && turns.at(-1)!.reward > 0,
  } as Trajectory;
  return { trajectory, svgs };
}

describe("trajectory records", () => {
  it("replays the episode from its seed to draw the state the agent saw at every turn", () => {
    const { trajectory, svgs } = play(11, ["Down", "Right", "Right", "Down", "Left"]);
    const record = toTrajectoryRecord(trajectory, 4, "val");
    expect(record).toMatchObject({ step: 4, split: "val", envTag: "FrozenLake", seed: 11, group: 2 });
    expect(record.turns.map((t) => t.stateSvg)).toEqual(svgs);
    expect(record.turns.map((t) => t.answer)).toEqual(trajectory.turns.map((t) => t.actions[0]));
    expect(record.turns.every((t) => t.valid)).toBe(true);
  });

  it("draws no picture once the replay disagrees with what the agent saw", () => {
    const long = Array.from({ length: 50 }, (_, seed) => play(seed, ["Up", "Left", "Up", "Left"]));
    const { trajectory } = long.find((p) => p.trajectory.turns.length >= 3)!;
    trajectory.turns[1]!.observation = "not this state";
    const record = toTrajectoryRecord(trajectory, 0, "train");
    expect(record.turns[0]!.stateSvg).toMatch(/^<svg/);
    expect(record.turns[1]!.stateSvg).toBeUndefined();
    expect(record.turns[2]!.stateSvg).toBeUndefined();
    expect(record.turns[1]!.stateText).toBe("not this state");
  });
});
