/** `ragen train [config.yaml] [key=value ...]`: the training job (StarPO, or A*-PO with algorithm=apo). */
import { jobHelp, parseJobArgs, resolveJobConfig, runJob } from "../job/job-cli.js";
import { commandCwd } from "./usage.js";

export async function trainCommand(args: readonly string[]): Promise<void> {
  const parsed = parseJobArgs(args, { positionalFile: true });
  if (parsed.help) {
    console.log(jobHelp("ragen train [config.yaml] [key=value ...]"));
    return;
  }
  await runJob(resolveJobConfig(parsed, { cwd: commandCwd() }), "train");
}
