/**
 * `ragen play <env|preset> [--seed N] [key=value ...]`: play any env in the terminal, to get a feel for
 * its rules. Type an action (for envs with a fixed action set, its number works too), or:
 *   ?  the oracle's suggestion    r  restart with the next seed    s  print the SVG    q  quit
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import { createEnv, type Env, listEnvs, listPresets, oracleAction, parseOverrides } from "@ragen/envs";
import { UsageError } from "./usage.js";

export const PLAY_USAGE = "usage: ragen play <env|preset> [--seed N] [key=value ...]";

export interface PlayStreams {
  input: Readable & { isTTY?: boolean };
  output: Writable & { isTTY?: boolean };
}

export async function playCommand(
  args: readonly string[],
  streams: PlayStreams = { input: process.stdin, output: process.stdout },
): Promise<void> {
  let parsed: ReturnType<typeof parsePlayArgs>;
  try {
    parsed = parsePlayArgs(args);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${PLAY_USAGE}`);
  }
  const { values, positionals } = parsed;
  const print = (text = "") => streams.output.write(`${text}\n`);
  const names = [...listEnvs(), ...Object.keys(listPresets())];
  if (values.help) {
    print(`${PLAY_USAGE}\n\nenvs and presets: ${names.join(", ")}`);
    return;
  }
  if (positionals.length === 0)
    throw new UsageError(`which env?\n${PLAY_USAGE}\n\nenvs and presets: ${names.join(", ")}`);

  const [name, ...overrides] = positionals as [string, ...string[]];
  let env: Env;
  try {
    env = createEnv(name, parseOverrides(overrides));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  let seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer, got "${values.seed}"`);

  const rl = createInterface({
    input: streams.input,
    output: streams.output,
    terminal: streams.input.isTTY === true,
  });
  const bold = (t: string) => (streams.output.isTTY ? `\x1b[1m${t}\x1b[0m` : t);

  const showActions = () => {
    const actions = env.actions ? env.actions.map((a, i) => `${i + 1}:${a}`) : env.availableActions();
    if (actions.length > 0) print(`actions: ${actions.join("  ")}`);
  };
  const start = () => {
    print(`\n${bold(`${name} — seed ${seed}`)}\n${env.instructions}\n`);
    print(env.reset(seed));
    showActions();
  };

  start();
  let total = 0;
  let steps = 0;
  rl.setPrompt("> ");
  rl.prompt();
  // Iterating the lines (rather than question()) also works when the input is piped in.
  for await (const line of rl) {
    const input = line.trim();
    if (input === "q") break;
    if (input === "r") {
      seed++;
      total = 0;
      steps = 0;
      start();
    } else if (input === "?") {
      try {
        print(`oracle suggests: ${oracleAction(env)}`);
      } catch (error) {
        print((error as Error).message);
      }
    } else if (input === "s") {
      print(env.renderSvg());
    } else {
      const index = Number(input);
      const isNumber = input !== "" && Number.isInteger(index) && index >= 1;
      const action = env.actions && isNumber && index <= env.actions.length ? env.actions[index - 1]! : line;
      const result = env.step(action);
      steps++;
      total += result.reward;
      print(`\n${result.observation}`);
      const flags = [
        result.info.actionIsValid ? "valid" : "INVALID",
        result.info.actionIsEffective ? "effective" : "no effect",
      ];
      print(
        `reward ${result.reward}  (total ${Number(total.toFixed(4))} in ${steps} steps)  ${flags.join(", ")}`,
      );
      if (result.done) {
        print(
          `${bold(result.info.success ? "Solved! " : "Episode over. ")}Type r for the next seed or q to quit.`,
        );
      } else {
        showActions();
      }
    }
    rl.prompt();
  }
  rl.close();
}

function parsePlayArgs(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      seed: { type: "string", default: "0" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
}
