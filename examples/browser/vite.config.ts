import { defineConfig } from "vite";
import { checkpointAssets } from "./build/checkpoint-assets.js";
import { AGENT_CHECKPOINTS } from "./src/checkpoints.js";

export default defineConfig({
  // Relative URLs: the built page works from any folder or static host.
  base: "./",
  plugins: [checkpointAssets(import.meta.dirname, Object.values(AGENT_CHECKPOINTS))],
  build: { target: "es2022" },
});
