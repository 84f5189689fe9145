import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One file at a time: the browser's software GPU and the CPU-backend model test each want both cores.
    fileParallelism: false,
    // Safety nets for a machine shared with other test runs: alone, each browser test takes 10-35 s.
    testTimeout: 240_000,
    hookTimeout: 180_000,
  },
});
