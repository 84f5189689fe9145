import type { PackageManifest } from "./workspace.js";

/**
 * What every published package.json must say, beyond what publint checks: an exports map whose every
 * entry carries a `types` condition (first, so TypeScript picks it), `sideEffects` (so bundlers can
 * drop unused modules), ESM, a licence, public access for the scope, and LICENSE among the files.
 */
export function manifestProblems(manifest: PackageManifest): string[] {
  const problems: string[] = [];
  if (!manifest.description) problems.push("no description");
  if (manifest.type !== "module") problems.push(`"type" is ${JSON.stringify(manifest.type)}, not "module"`);
  if (!manifest.license) problems.push("no license");
  if (manifest.sideEffects === undefined) problems.push('"sideEffects" is not set');
  if (manifest.name.startsWith("@") && manifest.publishConfig?.access !== "public") {
    problems.push(
      'scoped package without publishConfig.access "public" (npm would publish it as restricted)',
    );
  }
  for (const required of ["dist", "LICENSE"]) {
    if (!manifest.files?.includes(required)) problems.push(`"files" does not list ${required}`);
  }

  const exportsMap = manifest.exports;
  if (!exportsMap || typeof exportsMap !== "object") {
    problems.push('"exports" is not a map of subpaths');
    return problems;
  }
  if (!("." in exportsMap)) problems.push('"exports" has no "." entry');
  for (const [subpath, target] of Object.entries(exportsMap)) {
    if (subpath === "./package.json") continue;
    if (!target || typeof target !== "object") {
      problems.push(`exports["${subpath}"] is a bare path: give it "types" and "import" conditions`);
      continue;
    }
    const conditions = Object.keys(target);
    const types = (target as Record<string, unknown>).types;
    if (typeof types !== "string" || !types.endsWith(".d.ts")) {
      problems.push(`exports["${subpath}"] has no "types" condition pointing at a .d.ts file`);
    } else if (conditions[0] !== "types") {
      problems.push(`exports["${subpath}"]: "types" must be the first condition (it is "${conditions[0]}")`);
    }
    if (!("import" in target) && !("default" in target)) {
      problems.push(`exports["${subpath}"] has neither an "import" nor a "default" condition`);
    }
  }
  return problems;
}
