/**
 * Vite plugin: the checkpoint folders that other examples ship become static files of the page, under
 * `models/<folder>/`. `vite build` emits them into the output; `vite` (dev) serves them from the
 * repository. Missing files stop the build with the path that is missing.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Plugin } from "vite";
import { type AgentCheckpoint, CHECKPOINT_FILES } from "../src/checkpoints.js";

interface CheckpointFile {
  /** Path in the page's output, e.g. models/frozenlake/config.json. */
  output: string;
  /** Absolute path in the repository. */
  path: string;
}

export function checkpointAssets(root: string, checkpoints: readonly AgentCheckpoint[]): Plugin {
  const files: CheckpointFile[] = checkpoints.flatMap((checkpoint) =>
    CHECKPOINT_FILES.map((name) => ({
      output: `models/${checkpoint.folder}/${name}`,
      path: resolve(root, checkpoint.source, name),
    })),
  );
  const byUrl = new Map(files.map((file) => [`/${file.output}`, file]));
  const checkPresent = (fail: (message: string) => never) => {
    const missing = files.filter((file) => !existsSync(file.path)).map((file) => file.path);
    if (missing.length > 0) fail(`checkpoint files missing (the examples ship them): ${missing.join(", ")}`);
  };
  return {
    name: "ragen-checkpoint-assets",
    buildStart() {
      checkPresent((message) => this.error(message));
    },
    generateBundle() {
      for (const file of files) {
        this.emitFile({ type: "asset", fileName: file.output, source: readFileSync(file.path) });
      }
    },
    configureServer(server) {
      checkPresent((message) => {
        throw new Error(message);
      });
      server.middlewares.use((request, response, next) => {
        const file = byUrl.get((request.url ?? "").split("?")[0]!);
        if (!file) return next();
        response.setHeader(
          "content-type",
          file.output.endsWith(".json") ? "application/json" : "application/octet-stream",
        );
        response.end(readFileSync(file.path));
      });
    },
  };
}
