/** Builds the page with Vite into a temporary folder and serves it with `vite preview` on 127.0.0.1. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build, preview } from "vite";

export const EXAMPLE_ROOT = join(import.meta.dirname, "..", "..");

export interface ServedPage {
  url: string;
  outDir: string;
  close(): Promise<void>;
}

export async function buildAndServe(): Promise<ServedPage> {
  const outDir = mkdtempSync(join(tmpdir(), "ragen-browser-page-"));
  await build({ root: EXAMPLE_ROOT, logLevel: "error", build: { outDir, emptyOutDir: true } });
  const server = await preview({
    root: EXAMPLE_ROOT,
    logLevel: "error",
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, strictPort: false, open: false },
  });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error("vite preview reported no local URL");
  return {
    url,
    outDir,
    close: async () => {
      await server.close();
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}
