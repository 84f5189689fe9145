import { type AsyncEnv, createEnv, type Env, type StepResult } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { EnvManager, EnvManagerConfigError } from "../src/env-manager.js";
import { runRollout, type Trajectory } from "../src/rollout.js";
import { envTokenizer, ScriptedPolicy, scripted } from "./fixtures.js";

const tokenizer = envTokenizer();
const MOVES = ["Left", "Down", "Right", "Up"];

/** An in-process env behind promises that settle after `delayMs`, counting the calls in flight. */
class DelayedEnv implements AsyncEnv {
  static inFlight = 0;
  static mostInFlight = 0;
  constructor(
    private readonly env: Env,
    private readonly delayMs: number,
  ) {}
  get name() {
    return this.env.name;
  }
  get config() {
    return this.env.config;
  }
  get actions() {
    return this.env.actions;
  }
  get instructions() {
    return this.env.instructions;
  }
  get done() {
    return this.env.done;
  }
  reset(seed: number): Promise<string> {
    return this.later(() => this.env.reset(seed));
  }
  step(action: string): Promise<StepResult> {
    return this.later(() => this.env.step(action));
  }
  render(): Promise<string> {
    return this.later(() => this.env.render());
  }
  private async later<T>(run: () => T): Promise<T> {
    DelayedEnv.inFlight++;
    DelayedEnv.mostInFlight = Math.max(DelayedEnv.mostInFlight, DelayedEnv.inFlight);
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    DelayedEnv.inFlight--;
    return run();
  }
}

function manager(asyncSlots: boolean): EnvManager {
  const result = new EnvManager({
    envGroups: 3,
    groupSize: 2,
    tags: [
      { tag: "FrozenLake", nGroups: 2 },
      { tag: "FrozenLakeDeterministic", nGroups: 1 },
    ],
  });
  if (asyncSlots) {
    // Later slots answer sooner, so replies arrive in the reverse of slot order.
    for (const slot of result.slots)
      if (slot.index % 3 !== 1) slot.env = new DelayedEnv(createEnv(slot.tag), 5 * (6 - slot.index));
  }
  return result;
}

async function rollout(asyncSlots: boolean): Promise<Trajectory[]> {
  const policy = new ScriptedPolicy((call, prompt) => {
    const first = MOVES[(call + prompt) % 4]!;
    const second = MOVES[(call * 3 + prompt * 5) % 4]!;
    return scripted(tokenizer, ` go </think> <answer> ${first} || ${second} </answer>`, true);
  });
  const batch = await runRollout(manager(asyncSlots), policy, tokenizer, {
    maxNewTokens: 32,
    maxTurns: 4,
    maxActionsPerTurn: 2,
    seed: 1,
  });
  return batch.trajectories;
}

describe("EnvManager with async envs", () => {
  it("gives the same trajectories as in-process envs, whatever order the replies come in", async () => {
    const local = await rollout(false);
    DelayedEnv.mostInFlight = 0;
    const mixed = await rollout(true);
    // The envs of a turn were stepped side by side, not one after another.
    expect(DelayedEnv.mostInFlight).toBeGreaterThan(1);
    expect(mixed.length).toBe(6);
    expect(mixed.map((t) => t.turns.length).reduce((a, b) => a + b)).toBeGreaterThan(6);
    expect(mixed).toEqual(local);
    expect(new Set(local.map((t) => t.reward)).size).toBeGreaterThan(1);
  });

  it("refuses a turn that names one env twice", async () => {
    const envs = manager(false);
    const [slot] = await envs.reset("train");
    await expect(
      envs.stepAll([
        { slot: slot!, actions: ["Left"] },
        { slot: slot!, actions: ["Right"] },
      ]),
    ).rejects.toThrow(EnvManagerConfigError);
  });
});
