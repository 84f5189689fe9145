import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Packing, attw and the README snippets spawn processes; on a loaded 2-core machine that takes time.
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One file at a time: each already runs its own child processes.
    fileParallelism: false,
  },
});
