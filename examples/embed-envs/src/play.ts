import { createEnv, type Env, listPresets, oracleAction, Rng, randomAction } from "@ragen/envs";

/** Anything that picks the next action: the built-in oracle, a random clicker, or your own agent. */
export type ChooseAction = (env: Env, rng: Rng) => string;

export interface EpisodeResult {
  seed: number;
  success: boolean;
  /** Sum of the step rewards. */
  reward: number;
  actions: number;
}

/**
 * The loop every agent plugs into: reset from a seed, then step until the env is done or the action
 * budget runs out. The same seed and the same actions always replay the same episode.
 */
export function playEpisode(env: Env, seed: number, choose: ChooseAction, maxActions: number): EpisodeResult {
  // A random stream of the policy's own, so a policy's draws never shift the env's.
  const rng = new Rng(seed, "policy");
  env.reset(seed);
  const result: EpisodeResult = { seed, success: false, reward: 0, actions: 0 };
  while (!env.done && result.actions < maxActions) {
    const { reward, info } = env.step(choose(env, rng));
    result.actions++;
    result.reward += reward;
    result.success = info.success;
  }
  return result;
}

export interface PolicyScore {
  successRate: number;
  meanReward: number;
}

export interface SuccessRow {
  preset: string;
  env: string;
  /** RAGEN's action budget per trajectory for the preset. */
  maxActions: number;
  seeds: number;
  oracle: PolicyScore;
  random: PolicyScore;
}

function score(episodes: readonly EpisodeResult[]): PolicyScore {
  const n = Math.max(episodes.length, 1);
  return {
    successRate: episodes.filter((e) => e.success).length / n,
    meanReward: episodes.reduce((sum, e) => sum + e.reward, 0) / n,
  };
}

/** The oracle and a random policy on seeds 0..seeds-1 of each preset, within the preset's action budget. */
export function successTable(presets: readonly string[], seeds: number): SuccessRow[] {
  const known = listPresets();
  return presets.map((preset) => {
    const spec = known[preset];
    if (spec === undefined)
      throw new Error(`unknown preset "${preset}"; known presets: ${Object.keys(known).join(", ")}`);
    const env = createEnv(preset);
    const play = (choose: ChooseAction) =>
      Array.from({ length: seeds }, (_, seed) => playEpisode(env, seed, choose, spec.maxActionsPerTraj));
    return {
      preset,
      env: spec.env,
      maxActions: spec.maxActionsPerTraj,
      seeds,
      oracle: score(play((e, rng) => oracleAction(e, rng))),
      random: score(play((e, rng) => randomAction(e, rng))),
    };
  });
}

const percent = (rate: number) => `${(rate * 100).toFixed(1)}%`;

/** A fixed-width text table, for a terminal. */
export function formatSuccessTable(rows: readonly SuccessRow[]): string {
  const header = ["preset", "env", "budget", "seeds", "oracle", "oracle reward", "random", "random reward"];
  const cells = rows.map((r) => [
    r.preset,
    r.env,
    String(r.maxActions),
    String(r.seeds),
    percent(r.oracle.successRate),
    r.oracle.meanReward.toFixed(3),
    percent(r.random.successRate),
    r.random.meanReward.toFixed(3),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  // Names left-aligned, numbers right-aligned.
  const line = (row: readonly string[]) =>
    row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...cells.map(line)].join("\n");
}
