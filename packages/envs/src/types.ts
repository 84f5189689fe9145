import type { ConfigSchema } from "./config.js";
import type { Rng } from "./rng.js";

/** What every env reports about a step, beyond the reward. Envs add their own keys. */
export interface StepInfo {
  /** The task is solved (FrozenLake goal reached, Sokoban boxes on targets, WebShop reward 1, ...). */
  success: boolean;
  /** The action parsed and named something this env can do in its current state. */
  actionIsValid: boolean;
  /** The action changed the state (moving into a wall is valid but not effective). */
  actionIsEffective: boolean;
  [key: string]: unknown;
}

export interface StepResult<Info extends StepInfo = StepInfo> {
  observation: string;
  reward: number;
  done: boolean;
  info: Info;
}

/**
 * The contract every environment keeps. Text in, text out: an LLM agent reads `observation` and
 * writes `action`. Every random choice comes from `reset(seed)`, so the same seed and the same
 * actions always give the same trajectory. `step` never throws on any string: a malformed or unknown
 * action is an invalid no-op (`info.actionIsValid === false`). Stepping after `done` is an invalid
 * no-op too. The built-in envs also treat an action longer than MAX_ACTION_LENGTH, or one that is not
 * a string at all, as invalid (`readAction`), so hostile input never hangs or throws.
 */
export interface Env<Config = unknown, Info extends StepInfo = StepInfo> {
  /** The registry name this env was created under (`frozenlake`, `sokoban`, ...). */
  readonly name: string;
  /** The validated config, defaults filled in. */
  readonly config: Readonly<Config>;
  /** Fixed action names (matched case-insensitively by `step`), or null when actions are free-form. */
  readonly actions: readonly string[] | null;
  /** The rules and symbols, written for an agent. */
  readonly instructions: string;
  /** True once the episode has ended. */
  readonly done: boolean;
  /** Start a new episode from `seed`; returns the first observation. */
  reset(seed: number): string;
  step(action: string): StepResult<Info>;
  /** The current state as text (the same text an observation shows). */
  render(): string;
  /** The current state as a standalone SVG document. */
  renderSvg(): string;
  /** The actions that make sense right now (for free-form envs a list of examples or the clickables). */
  availableActions(): string[];
}

/**
 * An env whose episodes run elsewhere (an env server over HTTP, a worker): `Env`'s contract with
 * `reset`, `step` and `render` returning promises. `step` still never rejects because of the action
 * text — a malformed action is an invalid no-op the server reports — but it does reject when the env
 * cannot be reached (the clients throw a `RemoteEnvError` once their retries are spent).
 */
export interface AsyncEnv<Config = unknown, Info extends StepInfo = StepInfo> {
  /** The registry name of the env it plays, or the name its client was given. */
  readonly name: string;
  readonly config: Readonly<Config>;
  /** Fixed action names, or null when actions are free-form. */
  readonly actions: readonly string[] | null;
  /** The rules and symbols, written for an agent. */
  readonly instructions: string;
  /** True once the episode has ended. */
  readonly done: boolean;
  /** Start a new episode from `seed`; resolves to the first observation. */
  reset(seed: number): Promise<string>;
  step(action: string): Promise<StepResult<Info>>;
  /** The current state as text. */
  render(): Promise<string>;
  /** Frees what the env holds elsewhere (a server-side session); the env is unusable afterwards. */
  close?(): Promise<void>;
}

/** Chooses actions for an env; used for oracle baselines, random baselines and SFT data. */
export type ActionPolicy<E extends Env = Env> = (env: E, rng: Rng) => string;

/**
 * The scripted teacher of warm-start (SFT) chats: the actions of one turn for `env` in its current
 * state, at least one and at most `count`. A guide plays what a small model can learn from what it sees,
 * which is not always the oracle's best play (FrozenLake's moves towards the goal, WebShop's search for
 * the instruction's own words). Most guides give one action whatever `count` is; a guide that plans
 * several moves blind says so with the spec's `guidePlansAhead`.
 */
export type GuidePolicy<E extends Env = Env> = (env: E, rng: Rng, count: number) => string[];

/**
 * The thought of a warm-start chat's turn: a short reason for `actions` in `env`'s current state
 * (`fromGuide`: the guide chose them, else they were random), written so that thinking and acting agree.
 * Undefined where the env has nothing to say in this state; the turn then thinks "I choose X.".
 */
export type ThoughtTemplate<E extends Env = Env> = (
  env: E,
  actions: readonly string[],
  fromGuide: boolean,
) => string | undefined;

/** A named configuration of an env, as in RAGEN's env tags (`SimpleSokoban`, `BanditTest`, ...). */
export interface EnvPreset {
  /** The registered env this preset configures. */
  env: string;
  /** Config values that override the env's defaults. */
  config: Record<string, unknown>;
  /** The most actions an agent may take in one trajectory (RAGEN's max_actions_per_traj). */
  maxActionsPerTraj: number;
  /** A short description for listings. */
  description: string;
}

/** Everything the registry knows about one env. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds specs of every config type
export interface EnvSpec<C = any, E extends Env<C> = Env<C>> {
  name: string;
  /** One line for listings. */
  description: string;
  /** JSON Schema of the config; its `default`s are RAGEN's defaults. */
  schema: ConfigSchema;
  /** Build an env from a validated config. */
  create(config: C): E;
  /** The best policy we know (optimal or solver-based); for baselines, ceilings and SFT data. */
  // Declared as methods so a spec typed for its own env class fits where any spec is expected.
  oracle?(env: E, rng: Rng): string;
  /** A random policy; defaults to a uniform choice among `availableActions()`. */
  random?(env: E, rng: Rng): string;
  /** The warm start's teacher (`GuidePolicy`); without one, the oracle's action is the guide's. */
  guide?(env: E, rng: Rng, count: number): string[];
  /**
   * The guide plans up to `count` actions a turn (blind, as on FrozenLake), and a warm-start chat's
   * random turns try as many. Otherwise a turn holds one action, guided or random.
   */
  guidePlansAhead?: boolean;
  /** The warm start's thoughts (`ThoughtTemplate`); without them a turn thinks "I choose X.". */
  thought?(env: E, actions: readonly string[], fromGuide: boolean): string | undefined;
  /** Named configurations (RAGEN's env tags). */
  presets?: Record<string, Omit<EnvPreset, "env">>;
}
