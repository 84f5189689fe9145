import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { publicPackages, REPO_ROOT } from "./workspace.js";

export interface DocSource {
  /** Path from the repository root, e.g. "packages/envs/README.md". */
  path: string;
  markdown: string;
}

/** Folders of docs/ that hold no hand-written pages: generated API pages, the site build, packages. */
const NOT_PAGES = new Set(["api", "node_modules", ".vitepress", "scripts"]);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return NOT_PAGES.has(name) ? [] : markdownFiles(path);
      return name.endsWith(".md") ? [path] : [];
    });
}

/** The READMEs of the published packages and the documentation site's own pages. */
export function documentationSources(): DocSource[] {
  const files = [
    ...publicPackages()
      .map((pkg) => join(pkg.dir, "README.md"))
      .filter((file) => existsSync(file)),
    ...markdownFiles(join(REPO_ROOT, "docs")),
  ];
  return files.map((file) => ({ path: relative(REPO_ROOT, file), markdown: readFileSync(file, "utf8") }));
}
