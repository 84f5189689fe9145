import type { Backend } from "./backend.js";
import { type CpuBackend, createCpuBackend } from "./backends/cpu.js";
import { type WebGpuBackend, webGpuBackend } from "./backends/webgpu.js";
import type { ContextOptions } from "./gpu/context.js";
import { setDefaultBackend } from "./runtime.js";

/** Acquire a WebGPU device and make it the default backend for new tensors. */
export async function useWebGpu(options?: ContextOptions): Promise<WebGpuBackend> {
  const backend = await webGpuBackend(options);
  setDefaultBackend(backend);
  return backend;
}

/** Make the pure-TS reference backend the default (slow; no GPU needed). */
export function useCpu(): CpuBackend {
  const backend = createCpuBackend();
  setDefaultBackend(backend as Backend);
  return backend;
}
