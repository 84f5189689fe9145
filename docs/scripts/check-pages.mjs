// Every published package and every example with a README has its page on the site, and every such
// page includes a README that exists: a new package or example cannot be left out of the docs unseen.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const docsDir = fileURLToPath(new URL("..", import.meta.url));
const repoDir = join(docsDir, "..");
const problems = [];

function expectPage(folder, name) {
  const page = join(docsDir, folder, `${name}.md`);
  const include = `<!--@include: ../../${folder}/${name}/README.md-->`;
  if (!existsSync(page)) problems.push(`docs/${folder}/${name}.md is missing; it should contain ${include}`);
  else if (!readFileSync(page, "utf8").includes(include))
    problems.push(`docs/${folder}/${name}.md does not ${include}`);
}

for (const name of readdirSync(join(repoDir, "packages")).sort()) {
  const manifestPath = join(repoDir, "packages", name, "package.json");
  if (existsSync(manifestPath) && !JSON.parse(readFileSync(manifestPath, "utf8")).private)
    expectPage("packages", name);
}
for (const name of readdirSync(join(repoDir, "examples")).sort()) {
  if (existsSync(join(repoDir, "examples", name, "README.md"))) expectPage("examples", name);
}
for (const folder of ["packages", "examples"]) {
  for (const file of readdirSync(join(docsDir, folder))) {
    const readme = join(repoDir, folder, file.replace(/\.md$/, ""), "README.md");
    if (!existsSync(readme))
      problems.push(`docs/${folder}/${file} has no ${folder}/${file.replace(/\.md$/, "")}/README.md`);
  }
}

if (problems.length > 0) {
  console.error(`check-pages: ${problems.length} problem(s):\n${problems.map((p) => `  ${p}`).join("\n")}`);
  process.exit(1);
}
console.log("check-pages: every public package and example has its page");
