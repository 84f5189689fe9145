import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

const failures = vi.hoisted(() => ({ writeCode: undefined as string | undefined }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  return {
    ...fs,
    writeFileSync: (...args: Parameters<typeof fs.writeFileSync>) => {
      if (failures.writeCode && String(args[0]).includes(".tmp-")) {
        // A full disk: part of the file reaches it, then the write fails.
        fs.writeFileSync(args[0], "half");
        throw Object.assign(new Error(`${failures.writeCode}: no space left on device, write`), {
          code: failures.writeCode,
          path: String(args[0]),
        });
      }
      return fs.writeFileSync(...args);
    },
  };
});

const { writeFileAtomic } = await import("../src/node/atomic-write.js");

describe("writeFileAtomic on failure", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "ragen-atomic-"));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    failures.writeCode = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("removes its temp file, keeps the old content and names the file and the cause on a full disk", () => {
    const dir = tempDir();
    const path = join(dir, "summary.json");
    writeFileSync(path, "old");
    failures.writeCode = "ENOSPC";
    expect(() => writeFileAtomic(path, "new")).toThrow(
      /writing .*summary\.json failed: ENOSPC on .*summary\.json\.tmp-/,
    );
    expect(readdirSync(dir)).toEqual(["summary.json"]);
    expect(readFileSync(path, "utf8")).toBe("old");
  });

  it("removes its temp file when the rename fails", () => {
    const dir = tempDir();
    const path = join(dir, "taken");
    mkdirSync(join(path, "inside"), { recursive: true });
    expect(() => writeFileAtomic(path, "x")).toThrow(/writing .*taken failed: E[A-Z]+ on /);
    expect(readdirSync(dir)).toEqual(["taken"]);
    expect(existsSync(join(path, "inside"))).toBe(true);
  });
});
