/**
 * Debian's Chromium driven by playwright-core (which downloads no browser of its own), as every browser
 * test launches it. Only test files import this package: it is source, run through vitest's transform.
 *
 * Headless Chromium offers WebGPU only with --enable-unsafe-webgpu: its adapter is then SwiftShader, a
 * software fallback (4-lane subgroups, no shader-f16) — a different driver from lavapipe, running the
 * same WGSL.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export type { Browser, Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** In CI the setup script installs Chromium, so its absence there is a failure, not a skip. */
export const skipWithoutChromium = !existsSync(CHROMIUM) && !process.env.CI;

/** Says why a browser test file is skipped, so a missing Chromium is never silent. */
export function warnIfSkipped(testFile: string): void {
  if (skipWithoutChromium)
    console.warn(`${testFile} skipped: ${CHROMIUM} is absent (as root: apt-get install -y chromium)`);
}

// No sandbox (tests run as root), and nothing that reaches the network.
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
