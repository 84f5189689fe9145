// The changesets flow: the config fits this workspace, pending changesets name only published
// packages, and `changeset version` applies them (run on a copy of the workspace's manifests, so the
// repository is left untouched and no git or network is needed).
import { execFileSync } from "node:child_process";
import {
  cpSync,
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
import { afterAll, describe, expect, it } from "vitest";
import { publicPackages, REPO_ROOT, readManifest, workspacePackages } from "../src/workspace.js";

const changesetDir = join(REPO_ROOT, ".changeset");
const config = JSON.parse(readFileSync(join(changesetDir, "config.json"), "utf8"));
const allNames = new Set(workspacePackages().map((pkg) => pkg.manifest.name));
const publicNames = new Set(publicPackages().map((pkg) => pkg.manifest.name));
const scratch = mkdtempSync(join(tmpdir(), "ragen-changesets-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The packages and bumps named in a changeset's front matter. */
function changesetReleases(markdown: string): Record<string, string> {
  const frontMatter = /^---\n([\s\S]*?)\n---/.exec(markdown)?.[1] ?? "";
  return Object.fromEntries(
    frontMatter
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => {
        const match = /^\s*["']?([^"':]+)["']?\s*:\s*(\w+)\s*$/.exec(line);
        if (!match) throw new Error(`unreadable changeset line: ${line}`);
        return [match[1]!, match[2]!];
      }),
  );
}

const pending = readdirSync(changesetDir).filter((file) => file.endsWith(".md") && file !== "README.md");

describe(".changeset/config.json", () => {
  it("publishes scoped packages publicly from main", () => {
    expect(config.access).toBe("public");
    expect(config.baseBranch).toBe("main");
  });

  it("never versions or tags the private packages (examples, docs, tools)", () => {
    expect(config.privatePackages).toEqual({ version: false, tag: false });
  });

  it("names only packages of this workspace in ignore, fixed and linked", () => {
    const named = [...config.ignore, ...config.fixed.flat(), ...config.linked.flat()];
    expect(named.filter((name: string) => !allNames.has(name) && !name.includes("*"))).toEqual([]);
  });
});

describe.each(pending)(".changeset/%s", (file) => {
  it("bumps only published packages, with a valid bump", () => {
    const releases = changesetReleases(readFileSync(join(changesetDir, file), "utf8"));
    expect(Object.keys(releases).length).toBeGreaterThan(0);
    for (const [name, bump] of Object.entries(releases)) {
      expect(publicNames.has(name), `${name} is not a public workspace package`).toBe(true);
      expect(["major", "minor", "patch"]).toContain(bump);
    }
  });
});

it("changeset version applies the pending changesets to every public package and to no private one", () => {
  // The copy holds what `changeset version` reads and writes: manifests, changelogs and .changeset/.
  const copy = join(scratch, "workspace");
  for (const file of ["package.json", "pnpm-workspace.yaml"]) {
    mkdirSync(copy, { recursive: true });
    cpSync(join(REPO_ROOT, file), join(copy, file));
  }
  cpSync(changesetDir, join(copy, ".changeset"), { recursive: true });
  for (const pkg of workspacePackages()) {
    mkdirSync(join(copy, pkg.path), { recursive: true });
    for (const file of ["package.json", "CHANGELOG.md"]) {
      if (existsSync(join(pkg.dir, file))) cpSync(join(pkg.dir, file), join(copy, pkg.path, file));
    }
  }
  // A probe changeset, so the flow is exercised even when nothing is pending.
  const probe = [...publicNames].map((name) => `"${name}": patch`).join("\n");
  writeFileSync(
    join(copy, ".changeset", "release-check-probe.md"),
    `---\n${probe}\n---\n\nRelease check probe.\n`,
  );

  const changeset = join(import.meta.dirname, "..", "node_modules", ".bin", "changeset");
  execFileSync(changeset, ["version"], { cwd: copy, stdio: "pipe", env: { ...process.env, CI: "true" } });

  for (const pkg of workspacePackages()) {
    const after = readManifest(join(copy, pkg.path));
    if (pkg.manifest.private) {
      expect(after.version, `${pkg.manifest.name} is private and must keep its version`).toBe(
        pkg.manifest.version,
      );
      expect(existsSync(join(copy, pkg.path, "CHANGELOG.md"))).toBe(
        existsSync(join(pkg.dir, "CHANGELOG.md")),
      );
      continue;
    }
    expect(after.version, `${pkg.manifest.name} was not versioned`).not.toBe(pkg.manifest.version);
    const changelog = readFileSync(join(copy, pkg.path, "CHANGELOG.md"), "utf8");
    expect(changelog).toContain(`## ${after.version}`);
    expect(changelog).toContain("Release check probe.");
    // Internal dependencies stay workspace ranges; pnpm turns them into versions when it packs.
    for (const [name, range] of Object.entries(after.dependencies ?? {})) {
      if (publicNames.has(name)) expect(range).toBe("workspace:*");
    }
  }
  const left = readdirSync(join(copy, ".changeset")).filter((file) => file.endsWith(".md"));
  expect(left, "changeset version consumes every changeset").toEqual(["README.md"]);
});
