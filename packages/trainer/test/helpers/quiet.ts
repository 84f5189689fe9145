import { vi } from "vitest";

/** Runs `fn` with console.log and both output streams silenced (runs print progress and tables). */
export async function quiet<T>(fn: () => Promise<T>): Promise<T> {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  const errors = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  try {
    return await fn();
  } finally {
    log.mockRestore();
    errors.mockRestore();
    out.mockRestore();
  }
}
