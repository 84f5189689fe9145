import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { PackageManifest } from "./workspace.js";

export interface TarballEntry {
  /** Path inside the package, without npm's leading "package/". */
  path: string;
  size: number;
}

export interface PackedPackage {
  tarballPath: string;
  tarball: Uint8Array;
  entries: TarballEntry[];
  /** package.json as published (workspace: and catalog: ranges replaced by pnpm). */
  manifest: PackageManifest;
}

/** `pnpm pack` the package into `destination`: the exact tarball `pnpm publish` would upload. */
export function packPackage(packageDir: string, destination: string): PackedPackage {
  const output = execFileSync("pnpm", ["pack", "--pack-destination", destination, "--json"], {
    cwd: packageDir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const { filename } = JSON.parse(output) as { filename: string };
  const tarball = new Uint8Array(readFileSync(filename));
  const files = readTarball(tarball);
  const manifestFile = files.get("package.json");
  if (!manifestFile) throw new Error(`${filename} has no package.json`);
  return {
    tarballPath: filename,
    tarball,
    entries: [...files].map(([path, content]) => ({ path, size: content.length })),
    manifest: JSON.parse(Buffer.from(manifestFile).toString("utf8")) as PackageManifest,
  };
}

function field(header: Uint8Array, start: number, length: number): string {
  const bytes = header.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end === -1 ? bytes : bytes.subarray(0, end)).toString("utf8");
}

/**
 * The regular files of a gzipped tar (ustar, as npm and pnpm write it), keyed by path with the leading
 * "package/" removed. Small enough to read here rather than shelling out to `tar`.
 */
export function readTarball(gzipped: Uint8Array): Map<string, Uint8Array> {
  const tar = gunzipSync(gzipped);
  const files = new Map<string, Uint8Array>();
  let offset = 0;
  let longName: string | undefined;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156] ?? 0);
    const prefix = field(header, 345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    const content = tar.subarray(offset + 512, offset + 512 + size);
    longName = undefined;
    if (type === "L") longName = Buffer.from(content).toString("utf8").replace(/\0+$/, "");
    else if (type === "0" || type === "\0") files.set(name.replace(/^package\//, ""), content);
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}
