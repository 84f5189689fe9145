import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One file at a time: the browser's software GPU and the CPU-backend model test each want both cores.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 90_000,
  },
});
