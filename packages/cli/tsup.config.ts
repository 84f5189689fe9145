import { cpSync, existsSync, renameSync, rmSync } from "node:fs";
import { defineConfig } from "tsup";

// The embedded default model is made (and kept in git) by examples/quest-frozenlake; the package ships a copy.
const EMBEDDED_SOURCE = "../../examples/quest-frozenlake/model";
const EMBEDDED_TARGET = "embedded-model";

function copyEmbeddedModel(): void {
  if (!existsSync(EMBEDDED_SOURCE)) return;
  const partial = `${EMBEDDED_TARGET}.partial`;
  rmSync(partial, { recursive: true, force: true });
  cpSync(EMBEDDED_SOURCE, partial, { recursive: true });
  rmSync(EMBEDDED_TARGET, { recursive: true, force: true });
  renameSync(partial, EMBEDDED_TARGET);
}

export default defineConfig({
  entry: { index: "src/index.ts", bin: "src/bin.ts" },
  format: ["esm"],
  dts: { entry: { index: "src/index.ts" } },
  sourcemap: true,
  clean: true,
  target: "es2022",
  platform: "node",
  removeNodeProtocol: false,
  onSuccess: async () => copyEmbeddedModel(),
});
