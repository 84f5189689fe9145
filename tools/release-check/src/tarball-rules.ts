import type { TarballEntry } from "./tarball.js";
import type { PackageManifest } from "./workspace.js";

/** A single shipped file larger than this is a mistake (a stray fixture, a model, a bench result). */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;

/**
 * Files that may exceed MAX_FILE_BYTES, by package and path. Each is needed at run time; the comment
 * says why, and the size is capped so growth is noticed.
 */
export const LARGE_FILE_ALLOWANCES: Record<string, { path: string; maxBytes: number; why: string }[]> = {
  "@ragen/trainer": [
    {
      path: "embedded-model/model.safetensors",
      maxBytes: 6 * 1024 * 1024,
      why: "the tiny default model the Quest job trains when no model is given",
    },
  ],
};

/** Paths that are never published: tests, their fixtures and sources, build and tool configs. */
const FORBIDDEN: { pattern: RegExp; what: string }[] = [
  { pattern: /(^|\/)(test|tests|__tests__|spec)\//, what: "a test folder" },
  { pattern: /\.(test|spec)\.[cm]?[jt]sx?$/, what: "a test file" },
  { pattern: /(^|\/)(fixtures?|__fixtures__|__snapshots__)\//, what: "a test fixture" },
  { pattern: /^src\//, what: "TypeScript sources (dist is published)" },
  { pattern: /^(bench|scripts)\//, what: "a development script" },
  {
    pattern: /(^|\/)(tsconfig[^/]*\.json|tsup\.config\.[jt]s|vitest\.config\.[jt]s|turbo\.json|biome\.json)$/,
    what: "a build or tool config",
  },
  { pattern: /(^|\/)(node_modules|\.turbo|coverage|runs|tmp)\//, what: "a local folder" },
  { pattern: /\.(tgz|log)$/, what: "a stray artifact" },
];

/** Every problem with what a package's tarball holds; empty when it is fit to publish. */
export function tarballProblems(
  name: string,
  entries: readonly TarballEntry[],
  packed: PackageManifest,
): string[] {
  const problems: string[] = [];
  const paths = new Set(entries.map((entry) => entry.path));

  for (const required of ["package.json", "README.md", "LICENSE"]) {
    if (!paths.has(required)) problems.push(`missing ${required}`);
  }
  if (![...paths].some((path) => path.startsWith("dist/") && path.endsWith(".d.ts"))) {
    problems.push("no type declarations (dist/**/*.d.ts)");
  }
  for (const target of manifestTargets(packed)) {
    if (!paths.has(target)) problems.push(`package.json points at ${target}, which is not in the tarball`);
  }

  for (const entry of entries) {
    const forbidden = FORBIDDEN.find((rule) => rule.pattern.test(entry.path));
    if (forbidden) problems.push(`${entry.path} is ${forbidden.what}`);
    const allowance = LARGE_FILE_ALLOWANCES[name]?.find((allowed) => allowed.path === entry.path);
    const limit = allowance?.maxBytes ?? MAX_FILE_BYTES;
    if (entry.size > limit) {
      problems.push(
        `${entry.path} is ${(entry.size / 1048576).toFixed(2)} MiB, over the ${(limit / 1048576).toFixed(0)} MiB limit`,
      );
    }
  }

  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"] as const) {
    for (const [dependency, range] of Object.entries(packed[field] ?? {})) {
      if (/^(workspace|catalog):/.test(range)) problems.push(`${field}.${dependency} is still "${range}"`);
    }
  }
  return problems;
}

/** The files package.json names: main, types, bin and every exports target (without "./"). */
export function manifestTargets(manifest: PackageManifest): string[] {
  const targets = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === "string") {
      if (!value.includes("*")) targets.add(value.replace(/^\.\//, ""));
    } else if (value && typeof value === "object") {
      for (const nested of Object.values(value)) add(nested);
    }
  };
  add(manifest.main);
  add(manifest.types);
  add(manifest.bin);
  add(manifest.exports);
  return [...targets];
}
