/**
 * `ragen envs [--budgets] [--seeds N]`: the registered envs and RAGEN's presets with one line each; with
 * --budgets, the oracle's and a random policy's success within each preset's action budget.
 */
import { parseArgs } from "node:util";
import { evaluatePolicy, getEnvSpec, hasOracle, listEnvs, listPresets } from "@ragen/envs";
import { formatPercent, textTable } from "@ragen/logging";
import { UsageError } from "./usage.js";

export const ENVS_USAGE = "usage: ragen envs [--budgets] [--seeds N]";

export interface EnvListing {
  envs: { name: string; description: string }[];
  presets: {
    tag: string;
    env: string;
    budget: number;
    description: string;
    oracle?: number;
    random?: number;
  }[];
}

/** The envs and presets; `seeds` > 0 adds oracle and random success over seeds 0..seeds-1. */
export function listEnvironments(seeds = 0): EnvListing {
  const envs = listEnvs().map((name) => ({ name, description: getEnvSpec(name).description }));
  const presets = Object.entries(listPresets()).map(([tag, preset]) => {
    const row: EnvListing["presets"][number] = {
      tag,
      env: preset.env,
      budget: preset.maxActionsPerTraj,
      description: preset.description,
    };
    if (seeds > 0 && hasOracle(tag)) {
      const all = Array.from({ length: seeds }, (_, i) => i);
      row.oracle = evaluatePolicy(tag, "oracle", { seeds: all }).successRate;
      row.random = evaluatePolicy(tag, "random", { seeds: all }).successRate;
    }
    return row;
  });
  return { envs, presets };
}

export function formatEnvListing(listing: EnvListing): string {
  const rate = (x: number | undefined) => (x === undefined ? "" : formatPercent(x));
  const withBudgets = listing.presets.some((p) => p.oracle !== undefined);
  const envs = textTable(
    ["env", "description"],
    listing.envs.map((e) => [e.name, e.description]),
    { indent: "  ", rule: false },
  );
  const header = ["tag", "env", "budget", ...(withBudgets ? ["oracle", "random"] : []), "description"];
  const rows = listing.presets.map((p) => [
    p.tag,
    p.env,
    String(p.budget),
    ...(withBudgets ? [rate(p.oracle), rate(p.random)] : []),
    p.description,
  ]);
  return ["envs:", envs, "", "presets:", textTable(header, rows, { indent: "  ", rule: false })].join("\n");
}

export async function envsCommand(args: readonly string[]): Promise<void> {
  let values: { budgets?: boolean; seeds?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        budgets: { type: "boolean", default: false },
        seeds: { type: "string", default: "200" },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${ENVS_USAGE}`);
  }
  if (values.help) {
    console.log(
      `${ENVS_USAGE}\n\n--budgets adds the oracle's and a random policy's success within each preset's action budget, over seeds 0..N-1 (--seeds, default 200).`,
    );
    return;
  }
  const seeds = Number(values.seeds);
  if (!Number.isInteger(seeds) || seeds < 1)
    throw new UsageError(`--seeds must be a positive integer, got "${values.seeds}"`);
  console.log(formatEnvListing(listEnvironments(values.budgets ? seeds : 0)));
}
