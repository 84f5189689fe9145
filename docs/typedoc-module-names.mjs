// @ts-check
// Names each API module after the import specifier a user writes ("@ragen/models/node"), instead of
// the source path TypeDoc derives ("models/src/node").
import { readFileSync } from "node:fs";
import { Converter, ReflectionKind } from "typedoc";

/** "envs/src" -> "@ragen/envs", "models/src/node" -> "@ragen/models/node". */
function importSpecifier(pathName) {
  const match = /^([^/]+)\/src(?:\/(.+?))?(?:\/index)?$/.exec(pathName);
  if (!match) return undefined;
  const [, dir, subpath] = match;
  const manifest = JSON.parse(
    readFileSync(new URL(`../packages/${dir}/package.json`, import.meta.url), "utf8"),
  );
  return subpath ? `${manifest.name}/${subpath}` : manifest.name;
}

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getChildrenByKind(ReflectionKind.Module)) {
      const specifier = importSpecifier(module.name);
      if (!specifier) throw new Error(`API module "${module.name}" does not map to a package export`);
      module.name = specifier;
    }
  });
}
