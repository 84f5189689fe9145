import { evaluatePolicy, listPresets, type PolicyEvaluation } from "@ragen/envs";

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

const score = ({ successRate, meanReward }: PolicyEvaluation): PolicyScore => ({ successRate, meanReward });

/**
 * The oracle and a random policy on seeds 0..seeds-1 of each preset, within the preset's action budget.
 * `evaluatePolicy` plays each episode with `runEpisode`, the loop any agent plugs into: reset from a
 * seed, then step until the env is done or the budget runs out.
 */
export function successTable(presets: readonly string[], seeds: number): SuccessRow[] {
  const known = listPresets();
  return presets.map((preset) => {
    const spec = known[preset];
    if (spec === undefined)
      throw new Error(`unknown preset "${preset}"; known presets: ${Object.keys(known).join(", ")}`);
    const options = {
      seeds: Array.from({ length: seeds }, (_, seed) => seed),
      maxActions: spec.maxActionsPerTraj,
    };
    return {
      preset,
      env: spec.env,
      maxActions: spec.maxActionsPerTraj,
      seeds,
      oracle: score(evaluatePolicy(preset, "oracle", options)),
      random: score(evaluatePolicy(preset, "random", options)),
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
