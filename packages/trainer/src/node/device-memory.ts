/** How much device memory a run may use: the setting, or on a software adapter the host's memory. */
import { totalmem } from "node:os";
import type { WebGpuBackend } from "@ragen/tensor-webgpu";
import type { TrainingSettings } from "../settings/fields.js";

/**
 * The share of host memory a software adapter's tensors may take: its buffers live in host memory beside
 * the JavaScript heap, the tokenizer and the staging copies of reads and writes.
 */
export const SOFTWARE_ADAPTER_HOST_SHARE = 0.75;

/**
 * `deviceMemoryGiB` when set; otherwise, on a software adapter (lavapipe), a share of the host's memory;
 * otherwise none (WebGPU does not say how much memory a GPU has).
 */
export function deviceMemoryBudget(
  settings: Pick<TrainingSettings, "deviceMemoryGiB">,
  backend: WebGpuBackend,
  hostBytes = totalmem(),
): { bytes: number; source: string } | undefined {
  if (settings.deviceMemoryGiB !== null)
    return { bytes: settings.deviceMemoryGiB * 2 ** 30, source: "deviceMemoryGiB" };
  if (!backend.ctx.info.adapter.isSoftware) return undefined;
  return {
    bytes: hostBytes * SOFTWARE_ADAPTER_HOST_SHARE,
    source: `${SOFTWARE_ADAPTER_HOST_SHARE * 100}% of the host's memory (a software adapter keeps its buffers there; set deviceMemoryGiB to change it)`,
  };
}
