import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("npm run quest", () => {
  it("exits 2 on bad settings, naming the field, through the root script's pnpm call", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as Record<
      string,
      string
    >;
    // The part after the build: what runs the script (setup and build are not what sets the code).
    const run = scripts.quest!.split("&&").at(-1)!.trim();
    expect(run).toMatch(/run quest$/);
    const result = spawnSync(`${run} steps=abc`, {
      cwd: root,
      shell: true,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(result.stderr).toMatch(/steps: must be an integer/);
    // pnpm's recursive run (--filter) would turn every failure into 1.
    expect(result.status).toBe(2);
  });
});
