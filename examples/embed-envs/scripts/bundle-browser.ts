// Bundles the browser page with esbuild for platform "browser" and no Node polyfills: a `node:` import
// (or any other Node built-in) anywhere in @ragen/envs would fail the build here.
//
//   tsx scripts/bundle-browser.ts [outDir]     (default dist/browser)

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { build, type Metafile } from "esbuild";

const ROOT = resolve(import.meta.dirname, "..");
const ENTRY = join(ROOT, "src", "browser", "app.ts");
const PAGE = join(ROOT, "src", "browser", "index.html");

export interface BrowserBundle {
  /** The folder holding index.html and app.js. */
  outDir: string;
  /** The bundled JavaScript. */
  code: string;
  /** Every input file esbuild read, for checking what went in. */
  metafile: Metafile;
}

export async function bundleBrowserPage(outDir: string, entry = ENTRY): Promise<BrowserBundle> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2022",
    minify: true,
    metafile: true,
    write: false,
    outfile: join(outDir, "app.js"),
    logLevel: "silent",
  });
  const code = result.outputFiles[0]!.text;
  mkdirSync(outDir, { recursive: true });
  writeAtomically(join(outDir, "app.js"), code);
  writeAtomically(join(outDir, "index.html"), readFileSync(PAGE, "utf8"));
  return { outDir, code, metafile: result.metafile };
}

function writeAtomically(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

async function main(): Promise<void> {
  const outDir = resolve(process.argv[2] ?? join(ROOT, "dist", "browser"));
  const bundle = await bundleBrowserPage(outDir);
  const inputs = Object.keys(bundle.metafile.inputs).length;
  console.log(
    `${outDir}: app.js ${(bundle.code.length / 1024).toFixed(0)} kB from ${inputs} files, index.html`,
  );
}

if (process.argv[1] === import.meta.filename) {
  main().catch((error) => {
    console.error(`error: ${(error as Error).message}`);
    process.exit(1);
  });
}
