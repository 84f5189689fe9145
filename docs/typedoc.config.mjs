// @ts-check
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The source entry of every public package's export subpath ("./dist/node.js" -> "src/node.ts"). */
function publicEntryPoints() {
  const packagesDir = new URL("../packages/", import.meta.url).pathname;
  const entries = [];
  for (const dir of readdirSync(packagesDir).sort()) {
    const manifestPath = join(packagesDir, dir, "package.json");
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (manifest.private) continue;
    for (const target of Object.values(manifest.exports ?? {})) {
      const file = typeof target === "object" && target ? target.import : undefined;
      if (typeof file !== "string" || !file.startsWith("./dist/")) continue;
      // tsup builds dist/<name>.js from src/<name>.ts or src/<name>/index.ts.
      const name = file.slice("./dist/".length, -".js".length);
      const candidates = [`src/${name}.ts`, `src/${name}/index.ts`].map((path) =>
        join(packagesDir, dir, path),
      );
      const source = candidates.find((path) => existsSync(path));
      if (!source)
        throw new Error(`${manifest.name}: export ${file} has no source at ${candidates.join(" or ")}`);
      entries.push(source);
    }
  }
  return entries;
}

/** @type {Partial<import("typedoc").TypeDocOptions & import("typedoc-plugin-markdown").PluginOptions>} */
const config = {
  entryPoints: publicEntryPoints(),
  tsconfig: "./tsconfig.api.json",
  skipErrorChecking: true,
  // The repository has no public remote yet, so there is nothing to link sources to.
  disableSources: true,
  excludePrivate: true,
  excludeInternal: true,
  name: "API reference",
  plugin: ["typedoc-plugin-markdown", "typedoc-vitepress-theme", "./typedoc-module-names.mjs"],
  out: "api",
  readme: "none",
  entryFileName: "index",
  outputFileStrategy: "modules",
  hidePageHeader: true,
  // Doc comments quote tags such as <think> as plain text; VitePress would read them as Vue elements.
  sanitizeComments: true,
  // Explicit anchors, so the links TypeDoc writes to them hold whatever slugs VitePress gives headings.
  useHTMLAnchors: true,
  treatWarningsAsErrors: true,
  validation: { invalidLink: true, notExported: false, notDocumented: false },
};
export default config;
