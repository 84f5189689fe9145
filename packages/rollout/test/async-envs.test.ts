import { createEnv, type Env, InProcessAsyncEnv, RemoteEnvError, type StepResult } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { EnvManager, EnvManagerConfigError } from "../src/env-manager.js";
import { RolloutError, runRollout, type Trajectory } from "../src/rollout.js";
import { envTokenizer, ScriptedPolicy, scripted } from "./fixtures.js";

const tokenizer = envTokenizer();
const MOVES = ["Left", "Down", "Right", "Up"];

/** An in-process env behind promises that settle after `delayMs`, counting the calls in flight. */
class DelayedEnv extends InProcessAsyncEnv {
  static inFlight = 0;
  static mostInFlight = 0;
  constructor(
    env: Env,
    private readonly delayMs: number,
  ) {
    super(env);
  }
  override reset(seed: number): Promise<string> {
    return this.later(() => super.reset(seed));
  }
  override step(action: string): Promise<StepResult> {
    return this.later(() => super.step(action));
  }
  override render(): Promise<string> {
    return this.later(() => super.render());
  }
  private async later<T>(run: () => Promise<T>): Promise<T> {
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

/** An env whose server goes away: its `failOn`th call (resets and steps counted together) and every later one fail. */
class DyingEnv extends DelayedEnv {
  private calls = 0;
  constructor(
    env: Env,
    private readonly failOn: number,
    private readonly failure: () => Error = () =>
      new RemoteEnvError(
        "POST /step to http://127.0.0.1:9/step failed after 4 tries: connect ECONNREFUSED",
        "network",
        "http://127.0.0.1:9/step",
        "POST /step",
      ),
  ) {
    super(env, 1);
  }
  override reset(seed: number): Promise<string> {
    return this.maybeFail() ?? super.reset(seed);
  }
  override step(action: string): Promise<StepResult> {
    return this.maybeFail() ?? super.step(action);
  }
  private maybeFail(): Promise<never> | undefined {
    this.calls++;
    return this.calls >= this.failOn ? Promise.reject(this.failure()) : undefined;
  }
}

function dyingRollout(envs: EnvManager) {
  const policy = new ScriptedPolicy((call, prompt) =>
    scripted(tokenizer, ` go </think> <answer> ${MOVES[(call + prompt) % 4]} </answer>`, true),
  );
  return runRollout(envs, policy, tokenizer, {
    maxNewTokens: 32,
    maxTurns: 4,
    maxActionsPerTurn: 1,
    seed: 1,
  });
}

describe("an env server failing mid-episode", () => {
  it("ends that episode, leaves its whole group out of the batch and says why; the others play on", async () => {
    const envs = manager(false);
    // Slot 3 (group 1) dies at its second step; slot 4 (group 2) at its reset.
    envs.slots[3]!.env = new DyingEnv(createEnv(envs.slots[3]!.tag), 3);
    envs.slots[4]!.env = new DyingEnv(createEnv(envs.slots[4]!.tag), 1);
    const batch = await dyingRollout(envs);
    expect(batch.trajectories.map((t) => t.index)).toEqual([0, 1]);
    expect(batch.trajectories.every((t) => t.finishReason !== "env-lost")).toBe(true);
    expect(batch.lost?.map((e) => [e.index, e.groupId])).toEqual([
      [3, 1],
      [4, 2],
    ]);
    expect(batch.lost?.[0]?.reason).toMatch(
      /^FrozenLake env \(seed 10001\) lost during step 2: POST \/step to http:\/\/127\.0\.0\.1:9\/step failed/,
    );
    expect(batch.lost?.[1]?.reason).toMatch(
      /^FrozenLakeDeterministic env \(seed 10002\) lost during reset: /,
    );
    expect(batch.metrics["train/env_lost"]).toBe(2);
    expect(batch.metrics["train/env_lost_dropped"]).toBe(4);
    // The kept groups are played as they would be with every server up.
    const intact = await dyingRollout(manager(false));
    expect(batch.trajectories).toEqual(intact.trajectories.slice(0, 2));
    expect(intact.lost).toBeUndefined();
    // The next batch starts every slot afresh: slot 3's server is back, slot 4's is still down.
    envs.slots[3]!.env = createEnv(envs.slots[3]!.tag);
    const next = await dyingRollout(envs);
    expect(next.lost?.map((e) => e.index)).toEqual([4]);
    expect(next.trajectories.map((t) => t.index)).toEqual([0, 1, 2, 3]);
    await envs.close();
  });

  it("stops the batch with the first failure when every group lost its server", async () => {
    const envs = manager(false);
    for (const slot of envs.slots.filter((s) => s.index % 2 === 0))
      slot.env = new DyingEnv(createEnv(slot.tag), 2);
    await expect(dyingRollout(envs)).rejects.toThrow(
      /every episode group of this train batch lost an env server, so there is nothing to train on; the first failure: FrozenLake env \(seed 10000\) lost during step 1/,
    );
  });

  it("still throws an error that is not a remote env's: a bug is not a lost server", async () => {
    const envs = manager(false);
    envs.slots[0]!.env = new DyingEnv(
      createEnv(envs.slots[0]!.tag),
      2,
      () => new TypeError("bug in the env"),
    );
    await expect(dyingRollout(envs)).rejects.toThrow(TypeError);
    await expect(dyingRollout(envs)).rejects.not.toThrow(RolloutError);
  });
});
