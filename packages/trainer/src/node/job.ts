/**
 * `ragen train` and the examples' jobs in Node: the run in its folder on the WebGPU backend (Dawn, or
 * lavapipe on a CPU), progress bars on stderr, a header before and the summary table after.
 */
import { ProgressBar } from "@ragen/logging";
import { type Backend, type WebGpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";
import type { PolicyLoader } from "../run/policy.js";
import { formatTrainingSummary, type TrainingSummary } from "../run/summary.js";
import { runTraining } from "../run/train.js";
import { validationEnvs } from "../run/validation.js";
import type { ResolvedSettings } from "../settings/resolve.js";
import { deviceMemoryBudget } from "./device-memory.js";
import { KernelChoiceFiles } from "./kernel-choice-files.js";
import { loadPolicy } from "./load-policy.js";
import { NodeRunStorage } from "./storage.js";
import { runSeedSweep } from "./sweep.js";

/** loadPolicy with a download progress bar on stderr (shown only when a Hub model is downloaded). */
export const loadPolicyWithProgress: PolicyLoader = async (name: string, backend: Backend) => {
  let download: ProgressBar | undefined;
  const loaded = await loadPolicy(name, backend, (done, total) => {
    download ??= new ProgressBar({
      label: "download (MB)",
      total: Math.ceil(total / 1e6),
      stream: process.stderr,
    });
    download.update(Math.floor(done / 1e6));
  });
  download?.finish();
  return loaded;
};

/**
 * Runs the training in `settings.outDir` (resuming it when it holds a run). A device it acquires itself is
 * destroyed at the end, so that the runs of a sweep or of experiments do not pile up devices in one process.
 */
export async function trainInFolder(
  { settings, sources }: ResolvedSettings,
  backend?: WebGpuBackend,
): Promise<TrainingSummary> {
  const device = backend ?? (await webGpuBackend());
  try {
    const deviceMemory = deviceMemoryBudget(settings, device);
    return await runTraining({
      settings,
      sources,
      backend: device,
      storage: new NodeRunStorage(settings.outDir),
      loadPolicy: loadPolicyWithProgress,
      progress: process.stderr,
      kernelChoices: new KernelChoiceFiles(),
      ...(deviceMemory ? { deviceMemory } : {}),
    });
  } finally {
    if (!backend) device.destroy();
  }
}

/**
 * Prints the header, runs the training and prints the summary table; with `seeds`, does that for each
 * seed in turn (see runSeedSweep) and returns the last seed's summary.
 */
export async function runTrainingJob(resolved: ResolvedSettings, title: string): Promise<TrainingSummary> {
  if (resolved.settings.seeds !== null) {
    let last: TrainingSummary | undefined;
    await runSeedSweep(resolved, async (seedSettings) => {
      last = await runTrainingJob(seedSettings, title);
    });
    return last!;
  }
  const { settings } = resolved;
  const algorithm = settings.algorithm === "apo" ? "A*-PO" : "StarPO";
  console.log(`RAGEN.ts ${title} — ${settings.envs.join(" + ")} with ${algorithm} on ${settings.model}\n`);
  const summary = await trainInFolder(resolved);
  console.log(
    `\nValidation success on ${settings.validation.groupsPerEnv} fixed seeds per env (${validationEnvs(settings).join(", ")}):\n`,
  );
  console.log(formatTrainingSummary(summary));
  console.log(
    `\n${summary.steps} steps in ${(summary.wallSeconds / 60).toFixed(1)} min; report: ${summary.report}`,
  );
  return summary;
}
