import { defineConfig } from "tsup";

export default defineConfig({
  // `index` is browser-safe; `node` (the "./node" subpath) holds the on-disk V* cache.
  entry: { index: "src/index.ts", node: "src/node/index.ts" },
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "neutral",
  external: [/^node:/],
  // Keep "node:" specifiers so readers and bundlers see at once which imports are Node built-ins.
  removeNodeProtocol: false,
});
