/**
 * A full garbage collection on demand, where the runtime offers one. WebGPU cannot destroy a bind group:
 * its native descriptor set lives until the garbage collector finalises the JS object, and V8 does not
 * count that native memory, so a loop that creates bind groups faster than its JS heap grows keeps all of
 * them. On lavapipe each one holds a memory mapping: 50,000 bind groups made 51,200 mappings, and a
 * process dies at Linux's limit (vm.max_map_count, 65,530). In Node, V8's `gc` is reachable at run time
 * through --expose-gc; a browser gives none (undefined) and accounts for its GPU objects itself.
 */
import { isNode } from "./device.js";

let collector: Promise<(() => void) | undefined> | undefined;

/** V8's full collection (looked up once per process), or undefined where the runtime offers none. */
export function fullGarbageCollector(): Promise<(() => void) | undefined> {
  collector ??= findCollector();
  return collector;
}

async function findCollector(): Promise<(() => void) | undefined> {
  if (!isNode()) return undefined;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === "function") return exposed;
  try {
    // Variables, so that browser bundlers leave these Node-only imports alone.
    const v8Name = "node:v8";
    const vmName = "node:vm";
    const v8 = (await import(/* @vite-ignore */ v8Name)) as { setFlagsFromString(flags: string): void };
    const vm = (await import(/* @vite-ignore */ vmName)) as { runInNewContext(code: string): unknown };
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    return typeof gc === "function" ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}
