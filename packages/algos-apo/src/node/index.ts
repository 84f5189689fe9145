// Node-only entry: the file-backed V* cache. The main entry stays browser-safe.
export { VStarFileCache } from "./vstar-cache.js";
