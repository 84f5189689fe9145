/**
 * Experiments that compare arms (StarPO-S against PPO, A*-PO against StarPO): each arm is the Quest job
 * with the experiment's common settings, then the arm's own, then the user's. The user's `outDir` names
 * the experiment's folder and every arm runs in a subfolder of it, so each arm resumes on its own.
 */
import { join } from "node:path";
import { ConfigError } from "@ragen/envs";
import { formatTrainingSummary, type TrainingSummary } from "../run/summary.js";
import type { TrainingSettings } from "../settings/fields.js";
import type { ResolvedSettings } from "../settings/resolve.js";
import { trainInFolder } from "./job.js";
import { resolveRunSettings } from "./run-settings.js";

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
  resolved: ResolvedSettings;
}

/**
 * The configs of the arms to run. `arms=a,b` among the user's args picks some arms (default: all); the
 * returned list follows the experiment's order. Throws naming the problem on a bad arm or setting.
 */
export async function resolveArmSettings(
  args: readonly string[],
  experiment: ArmExperiment,
  cwd: string,
): Promise<ArmRun[]> {
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
        throw new ConfigError("command line", [
          {
            field: "arms",
            message: `unknown arm "${unknown.join(", ")}"`,
            allowed: known,
            source: "command line",
          },
        ]);
    } else if (key === "outDir") outDir = value.join("=");
    else rest.push(arg);
  }
  const runs: ArmRun[] = [];
  for (const arm of known.filter((name) => picked.includes(name))) {
    const resolved = await resolveRunSettings({
      experiment: [
        { source: "experiment", overrides: experiment.common },
        { source: `arm ${arm}`, overrides: [...experiment.arms[arm]!, `outDir=${join(outDir, arm)}`] },
      ],
      overrides: rest,
      cwd,
    });
    // The comparison tables hold one run per arm; a sweep of one arm is `ragen train` with its settings.
    if (resolved.settings.seeds !== null)
      throw new ConfigError("command line", [
        {
          field: "seeds",
          message:
            "an experiment runs each arm on one seed; pass seed=<N> (a run per seed, each into its own outDir)",
          source: "command line",
        },
      ]);
    runs.push({ arm, resolved });
  }
  return runs;
}

export interface ArmResult {
  arm: string;
  /** The arm's settings as run (paths resolved). */
  settings: TrainingSettings;
  summary: TrainingSummary;
}

/** Runs the arms one after another, each printing its summary table. */
export async function runArms(runs: readonly ArmRun[], title: string): Promise<ArmResult[]> {
  const results: ArmResult[] = [];
  for (const run of runs) {
    const { settings } = run.resolved;
    console.log(`\nRAGEN.ts ${title}, arm ${run.arm}: ${settings.envs.join(" + ")} on ${settings.model}\n`);
    const summary = await trainInFolder(run.resolved);
    console.log(`\n${formatTrainingSummary(summary)}`);
    results.push({ arm: run.arm, settings, summary });
  }
  return results;
}
