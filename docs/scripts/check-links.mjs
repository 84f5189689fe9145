// Checks every internal link of the built site (docs/.vitepress/dist): the page or file it points to
// exists and, when it has a #fragment, that page has an element with that id. VitePress's own check
// (which fails `vitepress build`) covers pages written in Markdown but not fragments, nor the links
// inside TypeDoc's pages to headings, nor assets. External links are not fetched: CI has no internet.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";

const siteDir = fileURLToPath(new URL("../.vitepress/dist/", import.meta.url));

if (!existsSync(join(siteDir, "index.html"))) {
  console.error(`check-links: no built site at ${siteDir}; run "pnpm --filter @ragen/docs build" first`);
  process.exit(1);
}

function htmlFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return htmlFiles(path);
    return name.endsWith(".html") ? [path] : [];
  });
}

/** The file a site path is served from, with cleanUrls: "/packages/envs" -> packages/envs.html. */
function fileForSitePath(sitePath) {
  const decoded = decodeURIComponent(sitePath).replace(/^\//, "");
  const candidates =
    decoded === "" || decoded.endsWith("/")
      ? [join(decoded, "index.html")]
      : [decoded, `${decoded}.html`, join(decoded, "index.html")];
  return candidates
    .map((candidate) => join(siteDir, candidate))
    .find((path) => existsSync(path) && statSync(path).isFile());
}

const idsByFile = new Map();
function idsOf(file) {
  let ids = idsByFile.get(file);
  if (!ids) {
    ids = new Set([...readFileSync(file, "utf8").matchAll(/\s(?:id|name)="([^"]*)"/g)].map((m) => m[1]));
    idsByFile.set(file, ids);
  }
  return ids;
}

const decodeEntities = (value) =>
  value
    .replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");

const problems = [];
const pages = htmlFiles(siteDir);
let checked = 0;
for (const file of pages) {
  const html = readFileSync(file, "utf8");
  const pagePath = `/${relative(siteDir, file).split("\\").join("/")}`;
  for (const match of html.matchAll(/\s(href|src)="([^"]*)"/g)) {
    const link = decodeEntities(match[2]);
    if (/^(?:[a-z][a-z0-9+.-]*:|\/\/)/i.test(link)) continue; // https:, mailto:, data:, protocol-relative
    checked++;
    const [pathPart, fragment] = link.split("#", 2);
    const target =
      pathPart === ""
        ? file
        : fileForSitePath(posix.resolve(posix.dirname(pagePath), pathPart.split("?")[0]));
    if (!target) {
      problems.push(`${pagePath}: ${link} -> no such page or file`);
      continue;
    }
    if (fragment && target.endsWith(".html") && !idsOf(target).has(decodeURIComponent(fragment))) {
      problems.push(`${pagePath}: ${link} -> no element with id "${decodeURIComponent(fragment)}"`);
    }
  }
}

if (problems.length > 0) {
  console.error(`check-links: ${problems.length} broken link(s) in the built site:`);
  for (const problem of problems) console.error(`  ${problem}`);
  process.exit(1);
}
console.log(`check-links: ${checked} internal links on ${pages.length} pages, all resolve`);
