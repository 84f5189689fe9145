// The rules the package checks apply, on made-up manifests and file lists, so each is seen to fail.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { manifestProblems } from "../src/manifest-rules.js";
import { readTarball } from "../src/tarball.js";
import { MAX_FILE_BYTES, manifestTargets, tarballProblems } from "../src/tarball-rules.js";
import type { PackageManifest } from "../src/workspace.js";

const good: PackageManifest = {
  name: "@ragen/example",
  version: "1.0.0",
  description: "An example.",
  type: "module",
  license: "MIT",
  sideEffects: false,
  main: "./dist/index.js",
  types: "./dist/index.d.ts",
  exports: {
    ".": { types: "./dist/index.d.ts", import: "./dist/index.js" },
    "./node": { types: "./dist/node.d.ts", import: "./dist/node.js" },
    "./package.json": "./package.json",
  },
  files: ["dist", "README.md", "LICENSE"],
  publishConfig: { access: "public" },
  dependencies: { "@ragen/envs": "1.0.0" },
};

const goodFiles = [
  "package.json",
  "README.md",
  "LICENSE",
  "dist/index.js",
  "dist/index.d.ts",
  "dist/node.js",
  "dist/node.d.ts",
].map((path) => ({ path, size: 1000 }));

describe("manifestProblems", () => {
  it("accepts a complete manifest", () => {
    expect(manifestProblems(good)).toEqual([]);
  });

  it("names each missing piece", () => {
    const { sideEffects: _, ...noSideEffects } = good;
    expect(manifestProblems(noSideEffects as PackageManifest)).toEqual(['"sideEffects" is not set']);
    expect(manifestProblems({ ...good, files: ["dist"] })).toEqual(['"files" does not list LICENSE']);
    expect(manifestProblems({ ...good, publishConfig: {} })).toEqual([
      'scoped package without publishConfig.access "public" (npm would publish it as restricted)',
    ]);
    expect(manifestProblems({ ...good, exports: { ".": "./dist/index.js" } })).toEqual([
      'exports["."] is a bare path: give it "types" and "import" conditions',
    ]);
    expect(
      manifestProblems({
        ...good,
        exports: { ".": { import: "./dist/index.js", types: "./dist/index.d.ts" } },
      }),
    ).toEqual(['exports["."]: "types" must be the first condition (it is "import")']);
    expect(manifestProblems({ ...good, exports: { "./node": { import: "./dist/node.js" } } })).toEqual([
      '"exports" has no "." entry',
      'exports["./node"] has no "types" condition pointing at a .d.ts file',
    ]);
  });
});

describe("tarballProblems", () => {
  it("accepts a tarball with README, LICENSE, dist and types", () => {
    expect(tarballProblems(good.name, goodFiles, good)).toEqual([]);
  });

  it("refuses tests, fixtures, sources, configs, oversized files and missing files", () => {
    const files = [
      ...goodFiles.filter((file) => file.path !== "LICENSE" && file.path !== "dist/node.js"),
      { path: "test/env.test.ts", size: 10 },
      { path: "dist/env.spec.js", size: 10 },
      { path: "fixtures/model.safetensors", size: 10 },
      { path: "src/index.ts", size: 10 },
      { path: "tsconfig.json", size: 10 },
      { path: "dist/weights.bin", size: MAX_FILE_BYTES + 1 },
    ];
    expect(tarballProblems(good.name, files, good)).toEqual([
      "missing LICENSE",
      "package.json points at dist/node.js, which is not in the tarball",
      "test/env.test.ts is a test folder",
      "dist/env.spec.js is a test file",
      "fixtures/model.safetensors is a test fixture",
      "src/index.ts is TypeScript sources (dist is published)",
      "tsconfig.json is a build or tool config",
      "dist/weights.bin is 2.00 MiB, over the 2 MiB limit",
    ]);
  });

  it("refuses dependency ranges pnpm should have replaced", () => {
    const packed = { ...good, dependencies: { "@ragen/envs": "workspace:*", ajv: "catalog:" } };
    expect(tarballProblems(good.name, goodFiles, packed)).toEqual([
      'dependencies.@ragen/envs is still "workspace:*"',
      'dependencies.ajv is still "catalog:"',
    ]);
  });

  it("lists every file package.json points at", () => {
    expect(manifestTargets({ ...good, bin: { ragen: "./dist/bin.js" } }).sort()).toEqual(
      [
        "dist/bin.js",
        "dist/index.d.ts",
        "dist/index.js",
        "dist/node.d.ts",
        "dist/node.js",
        "package.json",
      ].sort(),
    );
  });
});

describe("readTarball", () => {
  function tarEntry(name: string, content: string): Buffer {
    const header = Buffer.alloc(512);
    header.write(name, 0, "utf8");
    header.write(`${Buffer.byteLength(content).toString(8).padStart(11, "0")}\0`, 124, "ascii");
    header.write("0", 156, "ascii");
    const body = Buffer.alloc(Math.ceil(Buffer.byteLength(content) / 512) * 512);
    body.write(content, 0, "utf8");
    return Buffer.concat([header, body]);
  }

  it("reads the files of a gzipped tar, without npm's package/ prefix", () => {
    const tar = Buffer.concat([
      tarEntry("package/package.json", '{"name":"x"}'),
      tarEntry("package/dist/index.js", "export {};\n"),
      Buffer.alloc(1024),
    ]);
    const files = readTarball(gzipSync(tar));
    expect([...files.keys()]).toEqual(["package.json", "dist/index.js"]);
    expect(Buffer.from(files.get("dist/index.js")!).toString()).toBe("export {};\n");
  });
});
