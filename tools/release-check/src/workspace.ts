import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The repository root (this package lives in tools/release-check). */
export const REPO_ROOT = join(import.meta.dirname, "..", "..", "..");

export interface PackageManifest {
  name: string;
  version: string;
  private?: boolean;
  type?: string;
  license?: string;
  main?: string;
  types?: string;
  bin?: string | Record<string, string>;
  files?: string[];
  sideEffects?: boolean | string[];
  exports?: Record<string, unknown> | string;
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

export interface WorkspacePackage {
  /** Absolute path of the package folder. */
  dir: string;
  /** Path from the repository root, e.g. "packages/envs". */
  path: string;
  manifest: PackageManifest;
}

export function readManifest(dir: string): PackageManifest {
  return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageManifest;
}

/** Every package under the workspace folders that hold packages (packages/, examples/, tools/, docs). */
export function workspacePackages(): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const parent of ["packages", "examples", "tools"]) {
    const parentDir = join(REPO_ROOT, parent);
    if (!existsSync(parentDir)) continue;
    for (const name of readdirSync(parentDir).sort()) {
      const dir = join(parentDir, name);
      if (existsSync(join(dir, "package.json")))
        found.push({ dir, path: `${parent}/${name}`, manifest: readManifest(dir) });
    }
  }
  if (existsSync(join(REPO_ROOT, "docs", "package.json"))) {
    const dir = join(REPO_ROOT, "docs");
    found.push({ dir, path: "docs", manifest: readManifest(dir) });
  }
  return found;
}

/** The packages that are published to npm: every workspace package not marked private. */
export function publicPackages(): WorkspacePackage[] {
  return workspacePackages().filter((pkg) => !pkg.manifest.private);
}
