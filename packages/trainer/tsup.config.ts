import { defineConfig } from "tsup";

export default defineConfig({
  // "index" is browser-safe; "node" holds file storage, config files and model loading from disk or the Hub.
  entry: ["src/index.ts", "src/node.ts"],
  format: ["esm"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "node",
  // Keep "node:" specifiers so bundlers and readers see at once which imports are Node built-ins.
  removeNodeProtocol: false,
});
