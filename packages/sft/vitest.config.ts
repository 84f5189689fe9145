import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Safety nets, not timings: kernels on a software GPU share 2 cores with the other packages' tests.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
