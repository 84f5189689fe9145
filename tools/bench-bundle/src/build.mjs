/**
 * `npm run bench:bundle [-- --out folder]`: writes the portable benchmark folder (default
 * tools/bench-bundle/dist/ragen-bench):
 *
 *   bench.mjs               the kernel and model benchmarks, bundled with their WGSL (esbuild)
 *   torch_kernels.py        the PyTorch peers (matmul and attention; the Qwen2-shaped model)
 *   torch_models.py
 *   node_modules/webgpu/    Dawn's Node module for linux-x64 (its loader and dawn.node only)
 *   README.md
 *
 * It runs with `node <folder>/bench.mjs` alone: no pnpm, no workspace, no install.
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const { values } = parseArgs({ options: { out: { type: "string" } } });
const out = resolve(values.out ?? join(here, "..", "dist", "ragen-bench"));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [join(here, "bench.ts")],
  outfile: join(out, "bench.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // One copy of the tensor and model packages: the benchmarks import their sources, StarPO the packages.
  alias: {
    "@ragen/tensor-webgpu": join(root, "packages/tensor-webgpu/src/index.ts"),
    "@ragen/models": join(root, "packages/models/src/index.ts"),
  },
  // Dawn's module is loaded at run time from the folder's node_modules.
  external: ["webgpu"],
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: "warning",
  legalComments: "none",
});

for (const [from, name] of [
  ["packages/tensor-webgpu/bench/torch_kernels.py", "torch_kernels.py"],
  ["packages/models/bench/torch_models.py", "torch_models.py"],
]) {
  copyFileSync(join(root, from), join(out, name));
}

// The webgpu package: its loader, manifest, licence and the linux-x64 native module only.
const require = createRequire(join(here, "..", "package.json"));
const webgpu = dirname(require.resolve("webgpu/package.json"));
const target = join(out, "node_modules", "webgpu");
mkdirSync(join(target, "dist", "linux-x64"), { recursive: true });
for (const file of ["package.json", "index.js", "LICENSE.md"])
  copyFileSync(join(webgpu, file), join(target, file));
copyFileSync(join(webgpu, "dist", "linux-x64", "dawn.node"), join(target, "dist", "linux-x64", "dawn.node"));

writeFileSync(join(out, "README.md"), readFileSync(join(here, "..", "README.md"), "utf8"));

let bytes = 0;
const walk = (dir) => {
  for (const entry of require("node:fs").readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else bytes += statSync(path).size;
  }
};
walk(out);
console.log(`wrote ${relative(process.cwd(), out) || "."} (${(bytes / 2 ** 20).toFixed(1)} MiB)`);
