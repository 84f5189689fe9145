/**
 * The page's WebGPU backend: @ragen/tensor-webgpu's device call (navigator.gpu in a browser), once per
 * page. When the browser has no WebGPU the error says so and what to do about it.
 */
import { NoAdapterError, type WebGpuBackend, webGpuBackend } from "@ragen/tensor-webgpu";

export class WebGpuUnavailableError extends Error {
  override readonly name = "WebGpuUnavailableError";
}

export const WEBGPU_HELP =
  "Watching the agent needs WebGPU: a recent Chrome, Edge or Safari, or a Firefox with WebGPU on " +
  "(on Linux, Chrome may need chrome://flags/#enable-unsafe-webgpu). Playing the envs yourself works without it.";

/** Whether the browser exposes WebGPU at all (an adapter may still be refused). */
export function hasWebGpu(): boolean {
  return typeof navigator !== "undefined" && "gpu" in navigator && navigator.gpu !== undefined;
}

/** Why navigator.gpu is missing, as far as the page can tell. */
export function missingWebGpuMessage(): string {
  // Browsers expose WebGPU only to secure contexts: https, or http on localhost.
  if (typeof window !== "undefined" && !window.isSecureContext)
    return `WebGPU is only offered to pages served over https or from localhost; this one is not (${location.origin}). ${WEBGPU_HELP}`;
  return `This browser has no WebGPU (navigator.gpu is missing). ${WEBGPU_HELP}`;
}

let backend: Promise<WebGpuBackend> | undefined;

export function pageBackend(): Promise<WebGpuBackend> {
  backend ??= (async () => {
    if (!hasWebGpu()) throw new WebGpuUnavailableError(missingWebGpuMessage());
    try {
      return await webGpuBackend();
    } catch (error) {
      if (error instanceof NoAdapterError)
        throw new WebGpuUnavailableError(
          `WebGPU gave no adapter (requestAdapter() returned none). ${WEBGPU_HELP}`,
        );
      throw error;
    }
  })();
  // A failed attempt is not cached: the user may change a browser setting and try again.
  backend.catch(() => {
    backend = undefined;
  });
  return backend;
}
