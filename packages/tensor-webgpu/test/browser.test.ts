import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { launchChromium, skipWithoutChromium, warnIfSkipped } from "@ragen/test-chromium";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The browser half of "one call acquires a device in Node or a browser": the package is bundled for the
// browser and run in headless Chromium, whose WebGPU adapter is its own SwiftShader (a fallback adapter
// with 4-lane subgroups and no shader-f16) — a different driver from lavapipe, running the same WGSL.
warnIfSkipped("browser.test.ts");
let server: Server | undefined;
let url = "";

beforeAll(async () => {
  if (skipWithoutChromium) return;
  const bundle = await build({
    entryPoints: [join(import.meta.dirname, "browser", "page-main.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]!.text;
  const page = '<!doctype html><meta charset="utf-8"><script type="module" src="/main.js"></script>';
  server = createServer((request, response) => {
    const isScript = request.url === "/main.js";
    response.writeHead(200, { "content-type": isScript ? "text/javascript" : "text/html" });
    response.end(isScript ? script : page);
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => server?.close());

describe.skipIf(skipWithoutChromium)("in a browser (headless Chromium, navigator.gpu)", () => {
  it("acquires a device with the same call and trains through the same kernels as the CPU reference", async () => {
    const browser = await launchChromium({ webgpu: true });
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await page.waitForFunction(() => (window as { __result?: unknown }).__result !== undefined, undefined, {
        timeout: 60_000,
      });
      const result = (await page.evaluate(() => (window as { __result?: unknown }).__result)) as {
        error?: string;
        worst: number;
        lossError: number;
        scale: number;
        adapter: { isSoftware: boolean };
        features: { shaderF16: boolean };
        attention: { worst: number; scale: number; textureKernels: boolean };
        decode: { scale: number; fused: boolean; againstSeparate: number; againstCpu: number };
      };
      expect(result.error).toBeUndefined();
      expect(result.scale).toBeGreaterThan(1e-3);
      expect(result.worst).toBeLessThan(1e-4);
      expect(result.lossError).toBeLessThan(1e-5);
      expect(result.adapter.isSoftware).toBe(true);
      // Attention's gradients (the texture kernels where the browser's subgroups allow them, else tiled).
      console.info(`browser attention: ${result.attention.textureKernels ? "texture" : "tiled"} kernels`);
      expect(result.attention.scale).toBeGreaterThan(1e-3);
      expect(result.attention.worst).toBeLessThan(1e-4);
      // A decoding step through the fused RoPE + cache append + attention kernel, against the CPU's ops.
      expect(result.decode.fused).toBe(true);
      expect(result.decode.scale).toBeGreaterThan(1e-3);
      console.info(`browser decode: ${JSON.stringify(result.decode)}`);
      // The same bits as the separate kernels in this driver; against the CPU within what WGSL allows
      // sin and cos (2^-11 absolute on [-π, π]: measured 1.8e-4 of the largest value in SwiftShader).
      expect(result.decode.againstSeparate).toBe(0);
      expect(result.decode.againstCpu).toBeLessThan(1e-3);
    } finally {
      await browser.close();
    }
  });
});
