/**
 * Where the embedded default model lives: `embedded-model/` at the package root, copied there by the
 * build from examples/quest-frozenlake/model (where its warm-start script writes it). This module sits at
 * the top of src/ so that the path is the same from the sources and from the bundle in dist/.
 */
import { fileURLToPath } from "node:url";

export const EMBEDDED_MODEL_DIR = fileURLToPath(new URL("../embedded-model", import.meta.url));
