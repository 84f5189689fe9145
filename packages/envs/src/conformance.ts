import { createEnv, getEnvSpec, oracleAction, randomAction } from "./registry.js";
import { Rng } from "./rng.js";
import type { Env, StepResult } from "./types.js";

/**
 * An env-conformance checker, in the spirit of gymnasium's `check_env`: it plays an env with random
 * and hostile actions and reports every way it breaks the Env contract. Run it over your own env after
 * `registerEnv` to know it will work with the rollout and training packages.
 */
export interface CheckEnvOptions {
  /** Config overrides passed to `createEnv`. */
  config?: object;
  /** Seeds to reset with (default: a spread including 0, negatives and large ones). */
  seeds?: readonly number[];
  /** Most steps per random episode. */
  maxSteps?: number;
  /** Also play the oracle policy (when the env has one). */
  checkOracle?: boolean;
}

export interface CheckEnvReport {
  env: string;
  ok: boolean;
  problems: string[];
  /** Steps taken in total, for a sense of coverage. */
  steps: number;
}

export class EnvConformanceError extends Error {
  constructor(readonly report: CheckEnvReport) {
    super(
      `Env "${report.env}" breaks the Env contract:\n${report.problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "EnvConformanceError";
  }
}

/** Strings no env should choke on. */
export const HOSTILE_ACTIONS: readonly string[] = [
  "",
  " ",
  "\n\t",
  "\u0000",
  "💥🧊",
  "x".repeat(10_000),
  // Over MAX_ACTION_LENGTH, shaped to make backtracking parsers quadratic.
  `search[${"a".repeat(100_000)}`,
  "[".repeat(100_000),
  "<think>hmm</think><answer>Up</answer>",
  "null",
  "undefined",
  "NaN",
  "__proto__",
  "constructor",
  "toString",
  "-1",
  "0",
  "99999999999999999999",
  "Left || Right",
  '{"action": "Up"}',
  "search[]",
  "click[]",
  "click[[[",
  "]]]",
  "1/0",
  "eval(1)",
];

export const DEFAULT_SEEDS = [0, 1, 2, 7, 42, 123, 10_000, -5, 2 ** 40];

export function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A minimal XML well-formedness check for SVG output: balanced tags and a single <svg> root. */
export function svgProblems(svg: string): string[] {
  const problems: string[] = [];
  if (!/^\s*<svg[\s>]/.test(svg)) problems.push("does not start with <svg");
  if (!/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/.test(svg)) problems.push("has no SVG xmlns");
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(svg); m !== null; m = tag.exec(svg)) {
    const between = svg.slice(last, m.index);
    if (/[<>]/.test(between)) problems.push(`stray "<" or ">" near ${describe(between)}`);
    last = m.index + m[0].length;
    const [, closing, name, , selfClosing] = m;
    if (selfClosing) continue;
    if (closing) {
      if (stack.pop() !== name) problems.push(`unbalanced </${name}>`);
    } else {
      stack.push(name!);
    }
  }
  if (/[<>]/.test(svg.slice(last))) problems.push("stray markup after the last tag");
  if (stack.length > 0) problems.push(`unclosed <${stack.join("> <")}>`);
  if (/&(?!(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(svg)) problems.push("unescaped &");
  return problems;
}

/** Collects the problems a check finds; shared by the in-process and the remote checkers. */
export class Checker {
  readonly problems: string[] = [];
  steps = 0;

  expect(condition: boolean, message: string): void {
    if (!condition && !this.problems.includes(message)) this.problems.push(message);
  }

  /** Calls `fn`, recording a problem instead of throwing. */
  attempt<T>(what: string, fn: () => T): T | undefined {
    try {
      return fn();
    } catch (error) {
      this.expect(false, `${what} threw: ${(error as Error).message ?? String(error)}`);
      return undefined;
    }
  }

  /** `attempt` for a promise: a rejection is a problem, not a throw. */
  async attemptAsync<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      this.expect(false, `${what} threw: ${(error as Error).message ?? String(error)}`);
      return undefined;
    }
  }

  /** The static surface every env shows before its first reset. */
  checkSurface(env: Pick<Env, "name" | "instructions" | "config" | "actions">, registeredName: string): void {
    this.expect(env.name === registeredName, `env.name is "${env.name}", registered as "${registeredName}"`);
    this.expect(
      typeof env.instructions === "string" && env.instructions.trim().length > 0,
      "instructions are empty",
    );
    this.expect(env.config !== null && typeof env.config === "object", "config is not an object");
    if (env.actions !== null) {
      this.expect(
        Array.isArray(env.actions) && env.actions.length > 0,
        "actions is neither null nor a non-empty list",
      );
      const lower = env.actions.map((a) => a.toLowerCase());
      this.expect(new Set(lower).size === lower.length, "action names are not unique (case-insensitively)");
    }
  }

  checkStep(result: StepResult | undefined, action: string): void {
    this.steps++;
    if (!result) return;
    const where = `step(${describe(action)})`;
    this.expect(typeof result.observation === "string", `${where}: observation is not a string`);
    this.expect(
      typeof result.reward === "number" && Number.isFinite(result.reward),
      `${where}: reward is not finite`,
    );
    this.expect(typeof result.done === "boolean", `${where}: done is not a boolean`);
    const info = result.info as unknown as Record<string, unknown> | undefined;
    this.expect(info !== null && typeof info === "object", `${where}: info is not an object`);
    if (info && typeof info === "object") {
      for (const key of ["success", "actionIsValid", "actionIsEffective"]) {
        this.expect(typeof info[key] === "boolean", `${where}: info.${key} is not a boolean`);
      }
    }
  }

  checkRenders(env: Env): void {
    const text = this.attempt("render()", () => env.render());
    this.expect(typeof text === "string", "render() did not return a string");
    const svg = this.attempt("renderSvg()", () => env.renderSvg());
    if (typeof svg !== "string") {
      this.expect(false, "renderSvg() did not return a string");
      return;
    }
    for (const p of svgProblems(svg)) this.expect(false, `renderSvg(): ${p}`);
    const available = this.attempt("availableActions()", () => env.availableActions());
    this.expect(
      Array.isArray(available) && available.every((a) => typeof a === "string"),
      "availableActions() is not an array of strings",
    );
  }
}

function playRandom(env: Env, seed: number, maxSteps: number, rng: Rng, check: Checker): StepResult[] {
  const results: StepResult[] = [];
  check.attempt(`reset(${seed})`, () => env.reset(seed));
  for (let i = 0; i < maxSteps && !env.done; i++) {
    const action = check.attempt("the random policy", () => randomAction(env, rng)) ?? "";
    const result = check.attempt(`step(${describe(action)})`, () => env.step(action));
    check.checkStep(result, action);
    if (!result) break;
    results.push(result);
  }
  return results;
}

/** Check `nameOrPreset` against the Env contract; returns a report listing every problem found. */
export function checkEnv(nameOrPreset: string, options: CheckEnvOptions = {}): CheckEnvReport {
  const check = new Checker();
  const seeds = options.seeds ?? DEFAULT_SEEDS;
  const maxSteps = options.maxSteps ?? 30;
  const make = () => createEnv(nameOrPreset, options.config);
  const spec = getEnvSpec(nameOrPreset);
  const env = check.attempt("createEnv", make);
  const report = (): CheckEnvReport => ({
    env: nameOrPreset,
    ok: check.problems.length === 0,
    problems: check.problems,
    steps: check.steps,
  });
  if (!env) return report();

  check.checkSurface(env, spec.name);

  // Before the first reset, step is an invalid no-op that reports done.
  const early = check.attempt("step before reset", () => env.step("anything"));
  check.checkStep(early, "anything (before reset)");
  if (early) {
    check.expect(
      early.done && !early.info.actionIsValid && early.reward === 0,
      "step before reset is not an invalid no-op with done",
    );
  }

  const rng = new Rng(0, "check-env");
  for (const seed of seeds) {
    const fresh = make();
    if (!fresh) break;
    const first = check.attempt(`reset(${seed})`, () => fresh.reset(seed));
    check.expect(
      typeof first === "string" && first.length > 0,
      `reset(${seed}) returned an empty observation`,
    );
    check.expect(!fresh.done, `done is true right after reset(${seed})`);
    check.checkRenders(fresh);

    // Hostile actions never throw; in fixed-action envs an invalid action changes nothing.
    for (const action of HOSTILE_ACTIONS) {
      if (fresh.done) fresh.reset(seed);
      const before = fresh.render();
      const result = check.attempt(`step(${describe(action)})`, () => fresh.step(action));
      check.checkStep(result, action);
      if (result && !result.info.actionIsValid && fresh.actions !== null) {
        check.expect(fresh.render() === before, `invalid action ${describe(action)} changed the state`);
        check.expect(result.reward === 0, `invalid action ${describe(action)} was rewarded ${result.reward}`);
      }
    }

    // Determinism: the same seed and actions give the same trajectory, also after re-use.
    const a = make();
    const b = make();
    const trajectoryA = playRandom(a, seed, maxSteps, new Rng(seed, "actions"), check);
    a.reset(seed + 1);
    const trajectoryB = playRandom(b, seed, maxSteps, new Rng(seed, "actions"), check);
    check.expect(
      JSON.stringify(trajectoryA) === JSON.stringify(trajectoryB),
      `seed ${seed}: two envs given the same seed and actions diverged`,
    );
    const replay = playRandom(a, seed, maxSteps, new Rng(seed, "actions"), check);
    check.expect(
      JSON.stringify(trajectoryA) === JSON.stringify(replay),
      `seed ${seed}: resetting a used env to the same seed did not reproduce the trajectory`,
    );

    // Play on with random actions until done, then check the after-done contract.
    const episode = make();
    playRandom(episode, seed, 500, rng, check);
    check.checkRenders(episode);
    if (episode.done) {
      const after = check.attempt("step after done", () =>
        episode.step(episode.availableActions()[0] ?? "x"),
      );
      check.checkStep(after, "(after done)");
      if (after) {
        check.expect(
          after.done && after.reward === 0 && !after.info.actionIsValid,
          "step after done is not an invalid no-op",
        );
      }
    }

    if (options.checkOracle !== false && spec.oracle) {
      const oracleEnv = make();
      check.attempt(`reset(${seed})`, () => oracleEnv.reset(seed));
      for (let i = 0; i < 200 && !oracleEnv.done; i++) {
        const action = check.attempt("oracle", () => oracleAction(oracleEnv));
        check.expect(typeof action === "string", "the oracle did not return a string");
        if (typeof action !== "string") break;
        const result = check.attempt(`step(${describe(action)})`, () => oracleEnv.step(action));
        check.checkStep(result, action);
        if (result)
          check.expect(result.info.actionIsValid, `the oracle chose an invalid action ${describe(action)}`);
      }
    }
  }
  return report();
}

/** Like checkEnv, but throws EnvConformanceError listing every problem. */
export function assertEnvConforms(nameOrPreset: string, options?: CheckEnvOptions): CheckEnvReport {
  const report = checkEnv(nameOrPreset, options);
  if (!report.ok) throw new EnvConformanceError(report);
  return report;
}
