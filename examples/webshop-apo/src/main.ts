/**
 * `npm run webshop-apo`: A*-PO against StarPO on WebShop-lite with the same budget of generated tokens.
 *
 *   npm run webshop-apo                                   # the tiny WebShop model shipped here
 *   npm run webshop-apo -- arms=apo train.tokenBudget=50000
 *   npm run webshop-apo -- model=Qwen/Qwen2.5-0.5B-Instruct starpo.actorLr=1e-6 starpo.criticLr=1e-5 apo.lr=1e-6
 *
 * Exit code 2 for a bad setting or arm name (as the Quest command line), 1 when a run fails.
 */
import { fileURLToPath } from "node:url";
import { ConfigError } from "@ragen/envs";
import { runWebShopComparison } from "./comparison.js";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runWebShopComparison(process.argv.slice(2), process.env.INIT_CWD ?? process.cwd()).catch((error: Error) => {
    console.error(`webshop-apo: ${error.message}`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  });
}
