/**
 * `npm run quest`: the Quest homework job — an LLM agent trained with StarPO (PPO + GAE) on FrozenLake
 * and Bandit, validated on fixed seeds against the oracle (the ceiling) and a random policy (the floor).
 *
 *   npm run quest                                         # the embedded tiny model, CPU/lavapipe friendly
 *   npm run quest -- model=Qwen/Qwen2.5-0.5B-Instruct     # a Hub model (or a local Hugging Face folder)
 *   npm run quest -- steps=50 starpo.actorLr=1e-4 outDir=runs/mine
 */
import { fileURLToPath } from "node:url";
import { type QuestConfig, resolveQuestConfig, resolveQuestPaths } from "./config.js";
import { formatQuestSummary, runQuest } from "./train.js";

async function main(args: readonly string[]): Promise<void> {
  let config: QuestConfig;
  try {
    config = resolveQuestConfig(args);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  // npm and pnpm run scripts inside the package; paths on the command line mean where the user typed it.
  config = resolveQuestPaths(config, process.env.INIT_CWD ?? process.cwd());
  console.log(`RAGEN.ts Quest — ${config.envs.join(" + ")} with StarPO on ${config.model}\n`);
  const summary = await runQuest(config);
  console.log(`\nValidation success on ${config.validation.groupsPerEnv} fixed seeds per env:\n`);
  console.log(formatQuestSummary(summary));
  console.log(
    `\n${summary.steps} steps in ${(summary.wallSeconds / 60).toFixed(1)} min; report: ${summary.report}`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: Error) => {
    console.error(`quest: ${error.message}`);
    process.exit(1);
  });
}
