import { vi } from "vitest";

/** Runs `fn` with the console and the progress bars (stdout, stderr) silenced, restoring them after. */
export async function quiet<T>(fn: () => Promise<T>): Promise<T> {
  const spies = [
    vi.spyOn(console, "log").mockImplementation(() => {}),
    vi.spyOn(process.stderr, "write").mockImplementation(() => true),
    vi.spyOn(process.stdout, "write").mockImplementation(() => true),
  ];
  try {
    return await fn();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}
