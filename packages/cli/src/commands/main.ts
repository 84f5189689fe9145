/**
 * `ragen <subcommand> ...`: dispatch to the subcommands, `--version` and `--help`. Exit codes: 0 done,
 * 1 the work failed, 2 the command line or a config was wrong (the message says which part).
 */

import { ConfigError } from "@ragen/envs";
import { packageVersion } from "../version.js";

// Each command is imported when it runs: `ragen envs` and `ragen play` need no GPU code loaded.

const SUBCOMMANDS: Record<string, { summary: string; run: (args: string[]) => Promise<void> }> = {
  train: {
    summary: "train an agent with StarPO or A*-PO from a config file and key=value overrides",
    run: async (args) => (await import("./train.js")).trainCommand(args),
  },
  eval: {
    summary: "evaluate a checkpoint or model on the validation seeds, beside oracle and random",
    run: async (args) => (await import("./eval.js")).evalCommand(args),
  },
  sft: {
    summary: "supervised fine-tuning: data from env oracles, full or LoRA training, adapter merging",
    run: async (args) => (await import("./sft.js")).sftCommand(args),
  },
  play: {
    summary: "play an env or preset in the terminal (? asks the oracle)",
    run: async (args) => (await import("./play.js")).playCommand(args),
  },
  envs: {
    summary: "list the envs and presets (--budgets: oracle and random success)",
    run: async (args) => (await import("./envs.js")).envsCommand(args),
  },
  "serve-policy": {
    summary: "serve a model through vLLM's token-in/token-out HTTP API (completions, LoRA adapters)",
    run: async (args) => (await import("./serve-policy.js")).servePolicyCommand(args),
  },
  "serve-env": {
    summary: "serve an env or preset over HTTP (OpenEnv shape) for runs on other machines",
    run: async (args) => (await import("./serve-env.js")).serveEnvCommand(args),
  },
};

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
    // A bad command line or setting (ConfigError, UsageError included) is the user's to fix: code 2.
    if (error instanceof ConfigError) {
      console.error(`ragen ${command}: ${error.message}`);
      return 2;
    }
    console.error(`ragen ${command}: ${(error as Error).message}`);
    return 1;
  }
}
