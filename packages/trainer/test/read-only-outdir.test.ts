import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";

// Permissions do not stop root (tests may run as root), so a read-only folder is simulated.
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const denied = (path: unknown) => String(path).includes("read-only");
  return {
    ...fs,
    mkdirSync: (...args: Parameters<typeof fs.mkdirSync>) => {
      if (denied(args[0]))
        throw Object.assign(new Error(`EACCES: permission denied, mkdir '${args[0]}'`), { code: "EACCES" });
      return fs.mkdirSync(...args);
    },
  };
});

const { prepareRunFolder } = await import("../src/node/storage.js");
const root = mkdtempSync(join(tmpdir(), "outdir-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("an outDir that cannot be written", () => {
  it("says it is not writable, not the mkdir error", () => {
    expect(() => prepareRunFolder(join(root, "read-only", "run"))).toThrow(
      /outDir .*read-only[/\\]run is not writable \(EACCES\)/,
    );
  });
});
