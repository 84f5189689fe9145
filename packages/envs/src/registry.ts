import { BUILTIN_ENVS } from "./builtins.js";
import { type ConfigSchema, validateConfig } from "./config.js";
import { Rng } from "./rng.js";
import type { ActionPolicy, Env, EnvPreset, EnvSpec, GuidePolicy, ThoughtTemplate } from "./types.js";

export interface RegisterOptions<C, E extends Env<C>> {
  description?: string;
  oracle?: ActionPolicy<E>;
  random?: ActionPolicy<E>;
  /** The warm start's teacher; without one, `guidePlan` plays the oracle's action. */
  guide?: GuidePolicy<E>;
  /** `guide` plans up to `count` actions a turn (see `EnvSpec.guidePlansAhead`). */
  guidePlansAhead?: boolean;
  /** The warm start's thoughts; without them `thoughtFor` gives "I choose X.". */
  thought?: ThoughtTemplate<E>;
  presets?: Record<string, Omit<EnvPreset, "env">>;
}

export class UnknownEnvError extends Error {
  constructor(readonly requested: string) {
    super(
      `Unknown env "${requested}". Registered envs: ${listEnvs().join(", ")}; presets: ${Object.keys(
        listPresets(),
      ).join(", ")}`,
    );
    this.name = "UnknownEnvError";
  }
}

const specs = new Map<string, EnvSpec>();
const presets = new Map<string, EnvPreset>();

function addSpec(spec: EnvSpec): void {
  if (!/^[a-z][a-z0-9_-]*$/.test(spec.name)) {
    throw new Error(`Env name "${spec.name}" must be lowercase letters, digits, "-" or "_"`);
  }
  if (specs.has(spec.name) || presets.has(spec.name)) {
    throw new Error(`Env "${spec.name}" is already registered`);
  }
  for (const [tag, preset] of Object.entries(spec.presets ?? {})) {
    if (presets.has(tag) || specs.has(tag)) throw new Error(`Preset "${tag}" is already registered`);
    // Validate now, so a broken preset fails at registration rather than at first use.
    validateConfig(spec.name, spec.schema, preset.config);
    presets.set(tag, { ...preset, env: spec.name });
  }
  specs.set(spec.name, spec);
}

for (const spec of BUILTIN_ENVS) addSpec(spec);

/** Make an env available to `createEnv` (and to everything built on the registry) under `name`. */
export function registerEnv<C, E extends Env<C>>(
  name: string,
  factory: (config: C) => E,
  schema: ConfigSchema,
  options: RegisterOptions<C, E> = {},
): void {
  addSpec({ name, create: factory, schema, description: options.description ?? name, ...options } as EnvSpec);
}

/** Register a complete spec (what the built-in envs use). */
export function registerEnvSpec<C, E extends Env<C>>(spec: EnvSpec<C, E>): void {
  addSpec(spec as unknown as EnvSpec);
}

/** Remove an env and its presets (mainly for tests of other projects' envs). */
export function unregisterEnv(name: string): boolean {
  for (const [tag, preset] of presets) if (preset.env === name) presets.delete(tag);
  return specs.delete(name);
}

/** Names of the registered envs. */
export function listEnvs(): string[] {
  return [...specs.keys()];
}

/** Presets by tag (`SimpleSokoban`, `BanditTest`, ...). */
export function listPresets(): Record<string, EnvPreset> {
  return Object.fromEntries(presets);
}

/** The spec of an env, by env name or preset tag. */
export function getEnvSpec(nameOrPreset: string): EnvSpec {
  const spec = specs.get(nameOrPreset) ?? specs.get(presets.get(nameOrPreset)?.env ?? "");
  if (!spec) throw new UnknownEnvError(nameOrPreset);
  return spec;
}

/**
 * Resolve an env name or preset tag plus overrides into a validated config (defaults filled in).
 * Throws EnvConfigError naming every bad field.
 */
export function resolveEnvConfig<C = Record<string, unknown>>(nameOrPreset: string, config?: object): C {
  const spec = getEnvSpec(nameOrPreset);
  const preset = presets.get(nameOrPreset);
  const merged = preset ? { ...preset.config, ...(config ?? {}) } : config;
  return validateConfig<C>(spec.name, spec.schema, merged);
}

/**
 * Create an env by registry name (`frozenlake`, `bandit`, `sokoban`, `countdown`, `webshop`) or
 * preset tag (`SimpleSokoban`, `BanditTest`, ...). `config` overrides the defaults (and the preset's).
 */
export function createEnv<E extends Env = Env>(nameOrPreset: string, config?: object): E {
  const spec = getEnvSpec(nameOrPreset);
  return spec.create(resolveEnvConfig(nameOrPreset, config)) as E;
}

/** The oracle's next action for `env` in its current state. */
export function oracleAction(env: Env, rng: Rng = new Rng(0, "oracle")): string {
  const spec = getEnvSpec(env.name);
  if (!spec.oracle) throw new Error(`Env "${env.name}" has no oracle policy`);
  return spec.oracle(env, rng);
}

/** A random action for `env` (the env's own random policy, else uniform over available actions). */
export function randomAction(env: Env, rng: Rng): string {
  const spec = getEnvSpec(env.name);
  if (spec.random) return spec.random(env, rng);
  return rng.choice(env.availableActions());
}

/**
 * The guide's actions for one turn of `env` in its current state: the env's guide (`EnvSpec.guide`),
 * which plans up to `count` of them where it plans blind (FrozenLake) and gives one action elsewhere,
 * since a blind plan there would need the env's hidden dynamics; without a guide, the oracle's action.
 */
export function guidePlan(env: Env, rng: Rng, count: number): string[] {
  const spec = getEnvSpec(env.name);
  return spec.guide ? spec.guide(env, rng, count) : [oracleAction(env, rng)];
}

/** The guide's next action for `env` in its current state (the first of a one-action plan). */
export function guideAction(env: Env, rng: Rng): string {
  return guidePlan(env, rng, 1)[0]!;
}

/**
 * Does the env's guide plan several actions a turn (`EnvSpec.guidePlansAhead`)? Then a warm-start
 * chat's random turns try several too; otherwise every turn holds one action.
 */
export function guidePlansAhead(nameOrPreset: string): boolean {
  return getEnvSpec(nameOrPreset).guidePlansAhead === true;
}

/**
 * The thought of a warm-start chat's turn: a short reason for `actions` — one action or a turn's
 * several (`fromGuide`: the guide chose them) — in `env`'s current state, from the env's template
 * (`EnvSpec.thought`), else "I choose X." for the first action. Only a guide that plans ahead has
 * thoughts that name more than the first action.
 */
export function thoughtFor(env: Env, actions: string | readonly string[], fromGuide = false): string {
  const list = typeof actions === "string" ? [actions] : actions;
  return getEnvSpec(env.name).thought?.(env, list, fromGuide) ?? `I choose ${list[0] ?? ""}.`;
}

/** Has the env an oracle policy? */
export function hasOracle(nameOrPreset: string): boolean {
  return getEnvSpec(nameOrPreset).oracle !== undefined;
}
