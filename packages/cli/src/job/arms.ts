/**
 * Experiments that compare arms (StarPO-S against PPO, A*-PO against StarPO): each arm is the Quest job
 * with the experiment's common settings, then the arm's own, then the user's. The user's `outDir` names
 * the experiment's folder and every arm runs in a subfolder of it, so each arm resumes on its own.
 */
import { join } from "node:path";
import { type QuestConfig, resolveQuestConfig, resolveQuestPaths } from "./config.js";
import { formatQuestSummary, type QuestSummary, runQuest } from "./train.js";

export interface ArmExperiment {
  /** Settings every arm shares, e.g. the env and the model. */
  common: readonly string[];
  /** Each arm's own settings, by arm name (the name is also its subfolder). */
  arms: Readonly<Record<string, readonly string[]>>;
  /** The experiment's folder unless the user passes outDir=... */
  outDir: string;
}

export interface ArmRun {
  arm: string;
  config: QuestConfig;
}

/**
 * The configs of the arms to run. `arms=a,b` among the user's args picks some arms (default: all); the
 * returned list follows the experiment's order. Throws naming the problem on a bad arm or setting.
 */
export function resolveArmConfigs(args: readonly string[], experiment: ArmExperiment): ArmRun[] {
  const known = Object.keys(experiment.arms);
  let picked = known;
  let outDir = experiment.outDir;
  const rest: string[] = [];
  for (const arg of args) {
    const [key, ...value] = arg.split("=");
    if (key === "arms") {
      picked = value
        .join("=")
        .split(",")
        .map((name) => name.trim());
      const unknown = picked.filter((name) => !known.includes(name));
      if (unknown.length > 0 || picked.length === 0)
        throw new Error(`arms: unknown arm "${unknown.join(", ")}"; the arms are ${known.join(", ")}`);
    } else if (key === "outDir") outDir = value.join("=");
    else rest.push(arg);
  }
  return known
    .filter((arm) => picked.includes(arm))
    .map((arm) => ({
      arm,
      config: resolveQuestConfig([
        ...experiment.common,
        ...experiment.arms[arm]!,
        ...rest,
        `outDir=${join(outDir, arm)}`,
      ]),
    }));
}

export interface ArmResult {
  arm: string;
  /** The arm's config as run (paths resolved). */
  config: QuestConfig;
  summary: QuestSummary;
}

/**
 * Runs the arms one after another, each printing its summary table. Relative paths mean `cwd` (where
 * the command was typed).
 */
export async function runArms(runs: readonly ArmRun[], title: string, cwd: string): Promise<ArmResult[]> {
  const results: ArmResult[] = [];
  for (const run of runs) {
    const config = resolveQuestPaths(run.config, cwd);
    console.log(`\nRAGEN.ts ${title}, arm ${run.arm}: ${config.envs.join(" + ")} on ${config.model}\n`);
    const summary = await runQuest(config);
    console.log(`\n${formatQuestSummary(summary)}`);
    results.push({ arm: run.arm, config, summary });
  }
  return results;
}
