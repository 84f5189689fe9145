/**
 * `npm run sokoban-starpo`: StarPO-S against plain PPO on SimpleSokoban, with RAGEN's collapse signals.
 *
 *   npm run sokoban-starpo                                # the tiny Sokoban model shipped here
 *   npm run sokoban-starpo -- arms=ppo steps=50
 *   npm run sokoban-starpo -- model=Qwen/Qwen2.5-0.5B-Instruct starpo.actorLr=1e-6 starpo.criticLr=1e-5
 */
import { fileURLToPath } from "node:url";
import { runSokobanComparison } from "./comparison.js";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runSokobanComparison(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd()).catch((error: Error) => {
    console.error(`sokoban-starpo: ${error.message}`);
    process.exit(1);
  });
}
