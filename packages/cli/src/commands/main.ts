/**
 * `ragen <subcommand> ...`: dispatch to the subcommands, `--version` and `--help`. Exit codes: 0 done,
 * 1 the work failed, 2 the command line or a config was wrong (the message says which part).
 */
import { readFileSync } from "node:fs";
import { evalCommand } from "./eval.js";
import { sftCommand } from "./sft.js";
import { trainCommand } from "./train.js";
import { UsageError } from "./usage.js";

const SUBCOMMANDS: Record<string, { summary: string; run: (args: string[]) => Promise<void> }> = {
  train: {
    summary: "train an agent with StarPO or A*-PO from a config file and key=value overrides",
    run: trainCommand,
  },
  eval: {
    summary: "evaluate a checkpoint or model on the validation seeds, beside oracle and random",
    run: evalCommand,
  },
  sft: {
    summary: "supervised fine-tuning: data from env oracles, full or LoRA training, adapter merging",
    run: sftCommand,
  },
};

export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  return String(manifest.version);
}

function usage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((name) => name.length));
  const lines = Object.entries(SUBCOMMANDS).map(
    ([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`,
  );
  return `usage: ragen <command> [arguments]\n\ncommands:\n${lines.join("\n")}\n\nragen <command> --help describes a command; ragen --version prints the version.`;
}

/** Runs one command line; returns the exit code. */
export async function runRagen(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    console.log(usage());
    return command === undefined ? 2 : 0;
  }
  if (command === "--version" || command === "-v") {
    console.log(packageVersion());
    return 0;
  }
  const subcommand = SUBCOMMANDS[command];
  if (!subcommand) {
    console.error(`ragen: unknown command "${command}"\n\n${usage()}`);
    return 2;
  }
  try {
    await subcommand.run(rest);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`ragen ${command}: ${error.message}`);
      return 2;
    }
    console.error(`ragen ${command}: ${(error as Error).message}`);
    return 1;
  }
}
