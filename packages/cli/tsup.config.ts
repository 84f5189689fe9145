import { cpSync, existsSync, renameSync, rmSync } from "node:fs";
import { defineConfig } from "tsup";

// The embedded default model is made (and kept in git) by examples/quest-frozenlake; the package ships a copy.
const EMBEDDED_SOURCE = "../../examples/quest-frozenlake/model";
const EMBEDDED_TARGET = "embedded-model";

function copyEmbeddedModel(): void {
  // Without it `model=embedded` could not load, so a build that cannot copy it fails here, by name.
  if (!existsSync(EMBEDDED_SOURCE))
    throw new Error(
      `@ragen/cli build: the embedded model is missing at ${EMBEDDED_SOURCE} (made by examples/quest-frozenlake)`,
    );
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
