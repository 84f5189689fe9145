/** `ragen train [config.yaml] [key=value ...]`: the training job (StarPO, or A*-PO with algorithm=apo). */
import { formatResolvedSettings, settingsHelp } from "@ragen/trainer";
import { parseRunArguments, resolveRunSettings, runTrainingJob } from "@ragen/trainer/node";
import { commandCwd } from "./usage.js";

export async function trainCommand(args: readonly string[]): Promise<void> {
  const parsed = parseRunArguments(args, { positionalFile: true });
  if (parsed.help) {
    console.log(settingsHelp("ragen train [config.yaml] [key=value ...] [--print-config]"));
    return;
  }
  const resolved = await resolveRunSettings({
    ...parsed,
    cwd: commandCwd(),
    ...(parsed.printConfig ? { sizeModel: "if-available" as const } : {}),
  });
  if (parsed.printConfig) process.stdout.write(formatResolvedSettings(resolved));
  else await runTrainingJob(resolved, "train");
}
