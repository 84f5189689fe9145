import type { Tensor } from "@ragen/tensor-webgpu";

/** Named metric scalars as a loss returns them: detached tensors, read with readMetrics. */
export type Metrics<K extends string> = Record<K, Tensor>;

/** Reads scalar metric tensors into numbers (keeping their names) and disposes them. */
export async function readMetrics<M extends Partial<Record<string, Tensor>>>(
  metrics: M,
): Promise<{ [K in keyof M]: number }> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(metrics)) {
    if (!value) continue;
    out[key] = await value.item();
    value.dispose();
  }
  return out as { [K in keyof M]: number };
}
