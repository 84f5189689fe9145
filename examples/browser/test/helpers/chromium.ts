/**
 * Debian's Chromium driven by playwright-core (which downloads no browser of its own). Headless
 * Chromium offers WebGPU only with --enable-unsafe-webgpu: its adapter is then SwiftShader, a software
 * fallback (no shader-f16), which runs the same WGSL as a real GPU.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
// In CI the setup script installs Chromium, so its absence there is a failure, not a skip.
export const skipWithoutChromium = !existsSync(CHROMIUM) && !process.env.CI;

const BASE_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu-sandbox",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
];

export function launchChromium(options: { webgpu: boolean }): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: options.webgpu ? [...BASE_ARGS, "--enable-unsafe-webgpu"] : BASE_ARGS,
  });
}
