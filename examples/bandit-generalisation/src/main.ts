/**
 * `npm run bandit-generalisation`: StarPO on Bandit, validated on the training arm names, unseen names
 * and reversed payoffs. Any Quest setting can be overridden, e.g. `model=Qwen/Qwen2.5-0.5B-Instruct`.
 */
import { fileURLToPath } from "node:url";
import { runQuestCli } from "@ragen/cli";
import { BANDIT_GENERALISATION_DEFAULTS } from "./experiment.js";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runQuestCli(process.argv.slice(2), {
    title: "Bandit generalisation",
    defaults: BANDIT_GENERALISATION_DEFAULTS,
  }).catch((error: Error) => {
    console.error(`bandit-generalisation: ${error.message}`);
    process.exit(1);
  });
}
