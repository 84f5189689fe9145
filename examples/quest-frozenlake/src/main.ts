/**
 * `npm run quest`: the Quest homework job — an LLM agent trained with StarPO (PPO + GAE) on FrozenLake
 * and Bandit, validated on fixed seeds against the oracle (the ceiling) and a random policy (the floor).
 *
 *   npm run quest                                         # the embedded tiny model, CPU/lavapipe friendly
 *   npm run quest -- model=Qwen/Qwen2.5-0.5B-Instruct     # a Hub model (or a local Hugging Face folder)
 *   npm run quest -- steps=50 starpo.actorLr=1e-4 outDir=runs/mine
 */
import { fileURLToPath } from "node:url";
import { runQuestCli } from "@ragen/cli";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runQuestCli(process.argv.slice(2), { title: "Quest" }).catch((error: Error) => {
    console.error(`quest: ${error.message}`);
    process.exit(1);
  });
}
