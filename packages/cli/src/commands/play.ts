/**
 * Play any env in the terminal, to get a feel for its rules.
 *
 *   pnpm play <env|preset> [--seed N] [key=value ...]
 *
 * Type an action (for envs with a fixed action set, its number works too), or:
 *   ?  the oracle's suggestion    r  restart with the next seed    s  print the SVG    q  quit
 */
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { createEnv, type Env, listEnvs, listPresets, oracleAction, parseOverrides } from "../src/index.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { seed: { type: "string", default: "0" }, help: { type: "boolean", short: "h", default: false } },
});

const names = [...listEnvs(), ...Object.keys(listPresets())];
if (values.help || positionals.length === 0) {
  console.log(
    `usage: pnpm play <env|preset> [--seed N] [key=value ...]\n\nenvs and presets: ${names.join(", ")}`,
  );
  process.exit(positionals.length === 0 && !values.help ? 2 : 0);
}

const [name, ...overrides] = positionals as [string, ...string[]];
let env: Env;
try {
  env = createEnv(name, parseOverrides(overrides));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
let seed = Number(values.seed);
if (!Number.isInteger(seed)) {
  console.error(`--seed must be an integer, got "${values.seed}"`);
  process.exit(2);
}

const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
const bold = (t: string) => (process.stdout.isTTY ? `\x1b[1m${t}\x1b[0m` : t);

function showActions(): void {
  const actions = env.actions ? env.actions.map((a, i) => `${i + 1}:${a}`) : env.availableActions();
  if (actions.length > 0) console.log(`actions: ${actions.join("  ")}`);
}

function start(): void {
  console.log(`\n${bold(`${name} — seed ${seed}`)}\n${env.instructions}\n`);
  console.log(env.reset(seed));
  showActions();
}

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
      console.log(`oracle suggests: ${oracleAction(env)}`);
    } catch (error) {
      console.log((error as Error).message);
    }
  } else if (input === "s") {
    console.log(env.renderSvg());
  } else {
    const index = Number(input);
    const isNumber = input !== "" && Number.isInteger(index) && index >= 1;
    const action = env.actions && isNumber && index <= env.actions.length ? env.actions[index - 1]! : line;
    const result = env.step(action);
    steps++;
    total += result.reward;
    console.log(`\n${result.observation}`);
    const flags = [
      result.info.actionIsValid ? "valid" : "INVALID",
      result.info.actionIsEffective ? "effective" : "no effect",
    ];
    console.log(
      `reward ${result.reward}  (total ${Number(total.toFixed(4))} in ${steps} steps)  ${flags.join(", ")}`,
    );
    if (result.done) {
      console.log(
        `${bold(result.info.success ? "Solved! " : "Episode over. ")}Type r for the next seed or q to quit.`,
      );
    } else {
      showActions();
    }
  }
  rl.prompt();
}
rl.close();
