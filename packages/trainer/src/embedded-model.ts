/**
 * Where the embedded default model lives: `embedded-model/` at the package root, kept in git and shipped
 * in the package (examples/quest-frozenlake's warm-start script makes it). This module sits at the top of
 * src/ so that the path is the same from the sources and from the bundle in dist/.
 */
import { fileURLToPath } from "node:url";

export const EMBEDDED_MODEL_DIR = fileURLToPath(new URL("../embedded-model", import.meta.url));
