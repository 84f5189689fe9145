import { describe, expect, it } from "vitest";
import { EnvManager, EnvManagerConfigError } from "../src/env-manager.js";

describe("EnvManager", () => {
  it("splits groups over tags; a group shares its seed and start state", async () => {
    const manager = new EnvManager({
      envGroups: 3,
      groupSize: 2,
      tags: [
        { tag: "FrozenLake", nGroups: 2 },
        { tag: "Bandit", nGroups: 1 },
      ],
    });
    const slots = await manager.reset("train");
    expect(slots.map((s) => [s.tag, s.groupId, s.seed])).toEqual([
      ["FrozenLake", 0, 10000],
      ["FrozenLake", 0, 10000],
      ["FrozenLake", 1, 10001],
      ["FrozenLake", 1, 10001],
      ["Bandit", 2, 10002],
      ["Bandit", 2, 10002],
    ]);
    expect(slots[0]!.observation).toBe(slots[1]!.observation);
    expect(slots[0]!.maxActionsPerTraj).toBe(10);
  });

  it("moves training seeds on by envGroups per reset and keeps validation at 123", async () => {
    const manager = new EnvManager({ envGroups: 2, groupSize: 1, tags: [{ tag: "FrozenLake", nGroups: 2 }] });
    const seeds = async (mode: "train" | "val") => (await manager.reset(mode)).map((s) => s.seed);
    expect(await seeds("train")).toEqual([10000, 10001]);
    expect(await seeds("val")).toEqual([123, 124]);
    expect(await seeds("train")).toEqual([10002, 10003]);
    expect(await seeds("val")).toEqual([123, 124]);
  });

  it("executes actions in order until the trajectory budget is used", async () => {
    const manager = new EnvManager({
      envGroups: 1,
      groupSize: 1,
      tags: [{ tag: "FrozenLakeDeterministic", nGroups: 1, maxActionsPerTraj: 3 }],
    });
    const [slot] = await manager.reset("train");
    const outcome = await manager.step(slot!, ["Up", "Left", "Right", "Down"]);
    expect(outcome.executed).toEqual(["Up", "Left", "Right"]);
    expect(manager.actionsLeft(slot!)).toBe(0);
    expect((await manager.step(slot!, ["Down"])).executed).toEqual([]);
    expect(slot!.validActions).toBe(3);
    expect(slot!.effectiveActions).toBe(2); // Up into the edge is valid but changes nothing
  });

  it("stops executing when the episode ends", async () => {
    const manager = new EnvManager({
      envGroups: 1,
      groupSize: 1,
      tags: [{ tag: "FrozenLakeDeterministic", nGroups: 1 }],
    });
    const [slot] = await manager.reset("train"); // seed 10000: P at (0,1), goal at (2,3), holes at (2,1), (2,2)
    const outcome = await manager.step(slot!, ["Right", "Right", "Down", "Down", "Left"]);
    expect(outcome).toMatchObject({ executed: ["Right", "Right", "Down", "Down"], reward: 1, done: true });
    expect(slot!.success).toBe(true);
  });

  it("rejects group counts that do not add up", () => {
    expect(
      () => new EnvManager({ envGroups: 3, groupSize: 2, tags: [{ tag: "Bandit", nGroups: 2 }] }),
    ).toThrow(EnvManagerConfigError);
    expect(
      () => new EnvManager({ envGroups: 1, groupSize: 0, tags: [{ tag: "Bandit", nGroups: 1 }] }),
    ).toThrow(/groupSize/);
  });
});
