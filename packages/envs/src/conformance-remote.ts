import { MAX_ACTION_LENGTH } from "./action.js";
import { type CheckEnvReport, Checker, DEFAULT_SEEDS, describe, HOSTILE_ACTIONS } from "./conformance.js";
import { Rng } from "./rng.js";
import type { AsyncEnv, StepResult } from "./types.js";

/**
 * The Env contract checked through a remote env's client (an `AsyncEnv`, e.g. `OpenEnvClient` on
 * `ragen serve-env`): everything `checkEnv` checks that a client can see. Renders as SVG, the
 * available-action list and the oracle need the env's state in process, so they are left out.
 */
export interface CheckRemoteEnvOptions {
  /** The name the env must report (default: whatever the first client reports). */
  name?: string;
  /** Seeds to reset with (default: checkEnv's spread, negatives and large ones included). */
  seeds?: readonly number[];
  /** Most steps per random episode. */
  maxSteps?: number;
  /**
   * Hostile actions longer than this are cut to it (default 16 KiB, four times MAX_ACTION_LENGTH, so
   * still too long to be read): a server may refuse larger request bodies outright, and no rollout
   * sends an action that long.
   */
  maxActionChars?: number;
}

/** Free-form envs have no action list; their random episodes pick from these. */
const FREE_FORM_ACTIONS = ["search[shoes]", "click[back to search]", "1 + 2", "(3 * 4) - 5", "Left", "x"];

/**
 * Checks the env behind `connect` (called once per client it needs, each a fresh session) against the
 * Env contract over its transport; returns a report listing every problem found. Every client it
 * opens is closed before it returns.
 */
export async function checkRemoteEnv(
  connect: () => AsyncEnv,
  options: CheckRemoteEnvOptions = {},
): Promise<CheckEnvReport> {
  const check = new Checker();
  const seeds = options.seeds ?? DEFAULT_SEEDS;
  const maxSteps = options.maxSteps ?? 30;
  const maxChars = options.maxActionChars ?? 4 * MAX_ACTION_LENGTH;
  const hostile = HOSTILE_ACTIONS.map((action) => action.slice(0, maxChars));
  const opened: AsyncEnv[] = [];
  const open = (): AsyncEnv | undefined => {
    const env = check.attempt("connect", connect);
    if (env) opened.push(env);
    return env;
  };

  const first = open();
  const name = options.name ?? first?.name ?? "(unconnected)";
  const report = (): CheckEnvReport => ({
    env: name,
    ok: check.problems.length === 0,
    problems: check.problems,
    steps: check.steps,
  });
  try {
    if (first) await checkSessions(first);
  } finally {
    const closed = await Promise.allSettled(opened.map((env) => env.close?.()));
    for (const outcome of closed)
      if (outcome.status === "rejected")
        check.expect(false, `close() threw: ${(outcome.reason as Error).message ?? String(outcome.reason)}`);
  }
  return report();

  async function checkSessions(first: AsyncEnv): Promise<void> {
    check.checkSurface(first, name);
    const pool = first.actions ?? FREE_FORM_ACTIONS;
    const play = async (env: AsyncEnv, seed: number, steps: number, rng: Rng): Promise<StepResult[]> => {
      const results: StepResult[] = [];
      await check.attemptAsync(`reset(${seed})`, () => env.reset(seed));
      for (let i = 0; i < steps && !env.done; i++) {
        const action = pool[rng.int(pool.length)]!;
        const result = await check.attemptAsync(`step(${describe(action)})`, () => env.step(action));
        check.checkStep(result, action);
        if (!result) break;
        results.push(result);
      }
      return results;
    };

    for (const seed of seeds) {
      const fresh = open();
      if (!fresh) break;
      const observation = await check.attemptAsync(`reset(${seed})`, () => fresh.reset(seed));
      check.expect(
        typeof observation === "string" && observation.length > 0,
        `reset(${seed}) returned an empty observation`,
      );
      if (observation === undefined) continue;
      check.expect(!fresh.done, `done is true right after reset(${seed})`);
      const rendered = await check.attemptAsync("render()", () => fresh.render());
      check.expect(typeof rendered === "string", "render() did not return a string");

      // Hostile actions are steps the env refuses, never errors; in fixed-action envs they change nothing.
      for (const action of hostile) {
        if (fresh.done) await check.attemptAsync(`reset(${seed})`, () => fresh.reset(seed));
        const before = await check.attemptAsync("render()", () => fresh.render());
        const result = await check.attemptAsync(`step(${describe(action)})`, () => fresh.step(action));
        check.checkStep(result, action);
        if (result && !result.info.actionIsValid && fresh.actions !== null) {
          const after = await check.attemptAsync("render()", () => fresh.render());
          check.expect(after === before, `invalid action ${describe(action)} changed the state`);
          check.expect(
            result.reward === 0,
            `invalid action ${describe(action)} was rewarded ${result.reward}`,
          );
        }
      }

      // Determinism: two sessions given the same seed and actions agree, and a reused one replays.
      const a = open();
      const b = open();
      if (!a || !b) break;
      const trajectoryA = await play(a, seed, maxSteps, new Rng(seed, "actions"));
      await check.attemptAsync(`reset(${seed + 1})`, () => a.reset(seed + 1));
      const trajectoryB = await play(b, seed, maxSteps, new Rng(seed, "actions"));
      check.expect(
        JSON.stringify(trajectoryA) === JSON.stringify(trajectoryB),
        `seed ${seed}: two sessions given the same seed and actions diverged`,
      );
      const replay = await play(a, seed, maxSteps, new Rng(seed, "actions"));
      check.expect(
        JSON.stringify(trajectoryA) === JSON.stringify(replay),
        `seed ${seed}: resetting a used session to the same seed did not reproduce the trajectory`,
      );

      // Play to the end, then a step after done must be an invalid no-op.
      const episode = open();
      if (!episode) break;
      await play(episode, seed, 500, new Rng(seed, "to-the-end"));
      if (episode.done) {
        const action = pool[0]!;
        const after = await check.attemptAsync("step after done", () => episode.step(action));
        check.checkStep(after, "(after done)");
        if (after)
          check.expect(
            after.done && after.reward === 0 && !after.info.actionIsValid,
            "step after done is not an invalid no-op",
          );
      }
    }
  }
}
