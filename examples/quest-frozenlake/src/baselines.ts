import { createEnv, evaluatePolicy, oracleAction, type PolicyEvaluation } from "@ragen/envs";
import { ProgressBar } from "@ragen/logging";

export interface EnvBaselines {
  env: string;
  maxActions: number;
  oracle: PolicyEvaluation;
  random: PolicyEvaluation;
}

/** Oracle and random policies on one env tag over `seeds`, each episode limited to `maxActions`. */
export function measureBaselines(env: string, seeds: readonly number[], maxActions: number): EnvBaselines {
  const bar = new ProgressBar({
    label: `${env.padEnd(12)} baselines`,
    total: 2 * seeds.length,
    stream: process.stderr,
  });
  const onEpisode = () => bar.tick();
  const oracle = evaluatePolicy(env, "oracle", { seeds: [...seeds], maxActions, onEpisode });
  const random = evaluatePolicy(env, "random", { seeds: [...seeds], maxActions, onEpisode });
  bar.finish();
  return { env, maxActions: oracle.maxActions, oracle, random };
}

/** One oracle episode, turn by turn, as text. */
export function narrateOracleEpisode(env: string, seed: number, maxActions: number): string {
  const instance = createEnv(env);
  const lines = [`${env}, seed ${seed}:`, indent(instance.reset(seed))];
  for (let i = 0; i < maxActions && !instance.done; i++) {
    const action = oracleAction(instance);
    const result = instance.step(action);
    lines.push(
      `  action ${i + 1}: ${action} -> reward ${result.reward}${result.done ? (result.info.success ? " (success)" : " (done)") : ""}`,
    );
    lines.push(indent(result.observation));
  }
  return lines.join("\n");
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n");
}

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The summary table a person reads at the end of the job. */
export function formatSummary(rows: readonly EnvBaselines[]): string {
  const header = [
    "env",
    "budget",
    "oracle success",
    "oracle reward",
    "random success",
    "random reward",
    "random valid",
  ];
  const table = rows.map((r) => [
    r.env,
    String(r.maxActions),
    `${percent(r.oracle.successRate)} ± ${percent(r.oracle.successStderr)}`,
    r.oracle.meanReward.toFixed(3),
    `${percent(r.random.successRate)} ± ${percent(r.random.successStderr)}`,
    r.random.meanReward.toFixed(3),
    percent(r.random.validRate),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...table.map(line)].join("\n");
}
