import type { VStarSummary } from "./vstar.js";

/**
 * Everything a V̂* estimate depends on. A cached entry is reused only when every field matches, so a
 * different reference model, sample count, beta1, env config or rollout setting is estimated afresh.
 */
export interface VStarKey {
  /** Env tag of the start state (`Bandit`, `FrozenLake`, ...). */
  tag: string;
  /** Canonical JSON of the env's resolved config and its action budget. */
  envConfig: string;
  /** Canonical JSON of the rollout settings that shape the rewards (turns, token budget, penalties). */
  rollout: string;
  seed: number;
  /** Identity of the frozen reference model: a checkpoint path with a hash, a Hub revision, ... */
  referenceModel: string;
  /** N, the reference samples per start state. */
  samples: number;
  beta1: number;
}

export interface VStarEntry extends VStarKey, VStarSummary {
  /**
   * Response tokens its N samples generated: what the estimate cost, so that a run reusing it from the
   * cache still counts it. Absent in entries written before the count was kept.
   */
  generatedTokens?: number;
}

/** Where stage 1 keeps its estimates; `put` should persist before it returns so a killed run resumes. */
export interface VStarCache {
  get(key: VStarKey): VStarEntry | undefined | Promise<VStarEntry | undefined>;
  put(entry: VStarEntry): void | Promise<void>;
}

/** The key of a start state in stage 1's results and in `AStarPO.update` look-ups. */
export const stateKey = (tag: string, seed: number): string => `${tag}:${seed}`;

/** JSON with object keys sorted at every level, so equal configs give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** One string per distinct key (the fields in a fixed order). */
export function vstarKeyId(key: VStarKey): string {
  return JSON.stringify([
    key.tag,
    key.envConfig,
    key.rollout,
    key.seed,
    key.referenceModel,
    key.samples,
    key.beta1,
  ]);
}

/** Checks a decoded record field by field; anything malformed is not an entry. */
export function parseVStarEntry(value: unknown): VStarEntry | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const v = value as Record<string, unknown>;
  const isNumber = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
  const isString = (x: unknown): x is string => typeof x === "string";
  if (
    !(
      isString(v.tag) &&
      isString(v.envConfig) &&
      isString(v.rollout) &&
      isString(v.referenceModel) &&
      isNumber(v.seed) &&
      isNumber(v.samples) &&
      isNumber(v.beta1) &&
      isNumber(v.vstar) &&
      typeof v.pass === "boolean" &&
      typeof v.allZero === "boolean" &&
      Array.isArray(v.rewards) &&
      v.rewards.length === v.samples &&
      v.rewards.every(isNumber) &&
      (v.generatedTokens === undefined ||
        (Number.isInteger(v.generatedTokens) && Number(v.generatedTokens) >= 0))
    )
  )
    return undefined;
  return {
    tag: v.tag,
    envConfig: v.envConfig,
    rollout: v.rollout,
    seed: v.seed,
    referenceModel: v.referenceModel,
    samples: v.samples,
    beta1: v.beta1,
    rewards: v.rewards as number[],
    vstar: v.vstar,
    pass: v.pass,
    allZero: v.allZero,
    ...(v.generatedTokens === undefined ? {} : { generatedTokens: v.generatedTokens as number }),
  };
}

/** A cache that lives as long as the process (tests, browsers, one-off runs). */
export class MemoryVStarCache implements VStarCache {
  private readonly entries = new Map<string, VStarEntry>();

  get size(): number {
    return this.entries.size;
  }

  get(key: VStarKey): VStarEntry | undefined {
    return this.entries.get(vstarKeyId(key));
  }

  put(entry: VStarEntry): void {
    this.entries.set(vstarKeyId(entry), entry);
  }
}
