import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 600_000,
    env: { XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? "/tmp" },
  },
});
