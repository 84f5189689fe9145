// Release readiness of every public package, on the tarball `pnpm publish` would upload: the manifest,
// the files packed, publint, and "are the types wrong".
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { afterAll, describe, expect, it } from "vitest";
import { manifestProblems } from "../src/manifest-rules.js";
import { type PackedPackage, packPackage } from "../src/tarball.js";
import { tarballProblems } from "../src/tarball-rules.js";
import { publicPackages, REPO_ROOT, readManifest } from "../src/workspace.js";

const packages = publicPackages();
const scratch = mkdtempSync(join(tmpdir(), "ragen-release-check-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it("finds the public packages", () => {
  expect(packages.map((pkg) => pkg.manifest.name)).toContain("@ragen/envs");
});

// turbo builds a package's dependencies before its tests; these checks read every public package's
// dist, and the docs read their sources, so both must depend on all of them.
for (const dependent of ["tools/release-check", "docs"]) {
  it(`${dependent} depends on every public package, so turbo builds them first`, () => {
    const manifest = readManifest(join(REPO_ROOT, dependent));
    const listed = { ...manifest.dependencies, ...manifest.devDependencies };
    const missing = packages.map((pkg) => pkg.manifest.name).filter((name) => listed[name] !== "workspace:*");
    expect(missing, `add to ${dependent}/package.json devDependencies as "workspace:*"`).toEqual([]);
  });
}

describe.each(packages.map((pkg) => [pkg.manifest.name, pkg] as const))("%s", (name, pkg) => {
  let packed: PackedPackage | undefined;
  const pack = () => {
    packed ??= packPackage(pkg.dir, scratch);
    return packed;
  };

  it("has a complete package.json (exports with types, sideEffects, files, access)", () => {
    expect(manifestProblems(pkg.manifest)).toEqual([]);
  });

  it("packs README, LICENSE, dist and types, and no tests, sources or oversized files", () => {
    const { entries, manifest } = pack();
    expect(tarballProblems(name, entries, manifest)).toEqual([]);
  });

  it("passes publint (strict: warnings fail too)", async () => {
    // publint packs with pnpm itself, so it sees the same files as the tarball checked above.
    const { messages, pkg: manifest } = await publint({
      pkgDir: pkg.dir,
      pack: "pnpm",
      level: "warning",
      strict: true,
    });
    expect(messages.map((message) => formatMessage(message, manifest, { color: false }))).toEqual([]);
  });

  it("passes are-the-types-wrong (ESM-only profile)", () => {
    // The packages ship ESM only (tsup format "esm", "type": "module", no "require" condition), so
    // require() from CommonJS and the pre-exports node10 resolution are out of scope by design; the
    // esm-only profile still checks node16 ESM imports and bundler resolution.
    const attw = join(import.meta.dirname, "..", "node_modules", ".bin", "attw");
    const result = spawnSync(
      attw,
      [pack().tarballPath, "--profile", "esm-only", "--format", "table-flipped"],
      {
        encoding: "utf8",
        env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      },
    );
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  });

  it("publishes in a dry run, offline", () => {
    // A single-package publish dry run packs and reports without asking the registry anything; the
    // unreachable registry address proves it.
    const output = execFileSync(
      "pnpm",
      ["publish", "--dry-run", "--no-git-checks", "--json", "--registry", "http://127.0.0.1:9/"],
      { cwd: pkg.dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
    const report = JSON.parse(output) as { name: string; version: string; files: { path: string }[] };
    expect(report.name).toBe(name);
    expect(report.version).toBe(pkg.manifest.version);
    expect(report.files.map((file) => file.path).sort()).toEqual(
      pack()
        .entries.map((entry) => entry.path)
        .sort(),
    );
  });
});
