import { defineConfig } from "tsup";

export default defineConfig({
  // "index" is browser-safe; "node" holds the files: SFT data, LoRA adapters, merged and tiny models.
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
