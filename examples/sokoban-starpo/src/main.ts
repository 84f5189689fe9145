/**
 * `npm run sokoban-starpo`: StarPO-S against plain PPO on SimpleSokoban, with RAGEN's collapse signals.
 *
 *   npm run sokoban-starpo                                # the tiny Sokoban model built for this example
 *   npm run sokoban-starpo -- arms=ppo steps=50
 *   npm run sokoban-starpo -- model=Qwen/Qwen2.5-0.5B-Instruct starpo.actorLr=1e-6 starpo.criticLr=1e-5
 *
 * Exit code 2 for a bad setting or arm name (as the Quest command line), 1 when a run fails.
 */
import { fileURLToPath } from "node:url";
import { ConfigError } from "@ragen/envs";
import { compareArms } from "./comparison.js";
import { armSettings } from "./experiment.js";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // npm and pnpm run scripts inside the package; paths on the command line mean where the user typed it.
  armSettings(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd())
    .then(compareArms)
    .catch((error: Error) => {
      console.error(`sokoban-starpo: ${error.message}`);
      process.exit(error instanceof ConfigError ? 2 : 1);
    });
}
