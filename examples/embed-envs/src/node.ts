// Using @ragen/envs on its own from Node: a success table of the oracle and a random policy over every
// preset, then one episode stepped by hand with the text render.
//
//   tsx src/node.ts [--seeds N] [--presets FrozenLake,SimpleSokoban,...]

import { parseArgs } from "node:util";
import { createEnv, listPresets } from "@ragen/envs";
import { formatSuccessTable, successTable } from "./play.js";

/** A short, fixed episode: a move into a wall, a typo and the two pushes that solve SimpleSokoban seed 0. */
export const HAND_STEPS = ["Left", "jump", "Up", "Up"] as const;

export function handSteppedEpisode(): string {
  const env = createEnv("SimpleSokoban");
  const lines = [`SimpleSokoban, seed 0 (${env.actions?.join(", ")}):`, env.reset(0)];
  for (const action of HAND_STEPS) {
    const { observation, reward, done, info } = env.step(action);
    lines.push(
      "",
      `> ${action}: reward ${reward.toFixed(1)}, valid ${info.actionIsValid}, effective ${info.actionIsEffective}, done ${done}, success ${info.success}`,
      observation,
    );
  }
  return lines.join("\n");
}

export interface NodeDemoOptions {
  seeds: number;
  presets: string[];
}

export function parseNodeDemoArgs(argv: readonly string[]): NodeDemoOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { seeds: { type: "string", default: "100" }, presets: { type: "string" } },
    strict: true,
  });
  const seeds = Number(values.seeds);
  if (!Number.isInteger(seeds) || seeds < 1)
    throw new Error(`--seeds must be a positive integer, got "${values.seeds}"`);
  const presets = values.presets
    ? values.presets
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean)
    : Object.keys(listPresets());
  return { seeds, presets };
}

function main(): void {
  let options: NodeDemoOptions;
  try {
    options = parseNodeDemoArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`error: ${(error as Error).message}`);
    process.exit(2);
  }
  console.log(
    `Oracle and random policy on seeds 0..${options.seeds - 1}, within each preset's action budget:\n`,
  );
  console.log(formatSuccessTable(successTable(options.presets, options.seeds)));
  console.log(`\n${handSteppedEpisode()}`);
}

if (process.argv[1] === import.meta.filename) main();
