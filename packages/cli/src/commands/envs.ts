/**
 * `ragen envs [--budgets] [--seeds N]`: the registered envs and RAGEN's presets with one line each; with
 * --budgets, the oracle's and a random policy's success within each preset's action budget.
 */
import { parseArgs } from "node:util";
import { evaluatePolicy, getEnvSpec, hasOracle, listEnvs, listPresets } from "@ragen/envs";
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
  const percent = (x: number | undefined) => (x === undefined ? "" : `${(100 * x).toFixed(1)}%`);
  const withBudgets = listing.presets.some((p) => p.oracle !== undefined);
  const envWidth = Math.max(...listing.envs.map((e) => e.name.length));
  const lines = [
    "envs:",
    ...listing.envs.map((e) => `  ${e.name.padEnd(envWidth)}  ${e.description}`),
    "",
    "presets:",
  ];
  const header = ["tag", "env", "budget", ...(withBudgets ? ["oracle", "random"] : []), "description"];
  const rows = listing.presets.map((p) => [
    p.tag,
    p.env,
    String(p.budget),
    ...(withBudgets ? [percent(p.oracle), percent(p.random)] : []),
    p.description,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")}`;
  lines.push(line(header), ...rows.map(line));
  return lines.join("\n");
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
