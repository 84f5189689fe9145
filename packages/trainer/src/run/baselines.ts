import { evaluatePolicy, type PolicyEvaluation } from "@ragen/envs";
import type { ProgressStream } from "@ragen/logging";
import { progressBar } from "./progress.js";

export interface EnvBaselines {
  env: string;
  maxActions: number;
  oracle: PolicyEvaluation;
  random: PolicyEvaluation;
}

/** Oracle and random policies on one env tag over `seeds`, each episode limited to `maxActions`. */
export function measureBaselines(
  env: string,
  seeds: readonly number[],
  maxActions: number,
  progress?: ProgressStream,
): EnvBaselines {
  const bar = progressBar(progress, `${env.padEnd(12)} baselines`, 2 * seeds.length);
  const onEpisode = () => bar.tick();
  const oracle = evaluatePolicy(env, "oracle", { seeds: [...seeds], maxActions, onEpisode });
  const random = evaluatePolicy(env, "random", { seeds: [...seeds], maxActions, onEpisode });
  bar.finish();
  return { env, maxActions: oracle.maxActions, oracle, random };
}
