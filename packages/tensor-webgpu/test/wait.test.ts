import { describe, expect, it } from "vitest";
import { blockFor, waitForGpu } from "../src/gpu/wait.js";
import { testContext } from "./helpers.js";

describe("waitForGpu", () => {
  it("resolves with the promise's value and rethrows its error", async () => {
    expect(await waitForGpu(Promise.resolve(42))).toBe(42);
    const late = new Promise((resolve) => setTimeout(() => resolve("late"), 30));
    expect(await waitForGpu(late)).toBe("late");
    await expect(waitForGpu(Promise.reject(new Error("lost")))).rejects.toThrow("lost");
  });

  it("waits for real GPU work to finish", async () => {
    const ctx = await testContext();
    const buffer = ctx.upload(new Float32Array([1, 2, 3, 4]));
    await waitForGpu(ctx.device.queue.onSubmittedWorkDone());
    expect(Array.from(new Float32Array(await ctx.read(buffer, 16)))).toEqual([1, 2, 3, 4]);
    ctx.pool.release(buffer);
  });

  it("clocks the wait from when the caller yields, not from the call", async () => {
    const spans: number[] = [];
    let since = 0;
    const clock = {
      start: () => (since = performance.now()),
      stop: () => spans.push(performance.now() - since),
    };
    const after = (ms: number) => new Promise((resolve) => setTimeout(() => resolve(ms), ms));
    // Awaited at once: the whole 40 ms is a wait.
    await waitForGpu(after(40), { clock });
    // Awaited after 80 ms of the caller's own work: the promise settled meanwhile, so almost no wait.
    const pending = waitForGpu(after(40), { clock });
    const busyUntil = performance.now() + 80;
    while (performance.now() < busyUntil) {}
    await pending;
    expect(spans[0]).toBeGreaterThanOrEqual(30);
    expect(spans[1]).toBeLessThan(15);
  });

  it("counts a context's reads in stats.waitMs only while the thread waits", async () => {
    const ctx = await testContext();
    const buffer = ctx.upload(new Float32Array([1, 2, 3, 4]));
    await ctx.sync();
    const before = ctx.stats.waitMs;
    const read = ctx.read(buffer, 16); // a 16-byte copy: done long before the caller below yields
    const busyUntil = performance.now() + 100;
    while (performance.now() < busyUntil) {}
    expect(Array.from(new Float32Array(await read))).toEqual([1, 2, 3, 4]);
    expect(ctx.stats.waitMs - before).toBeLessThan(50);
    ctx.pool.release(buffer);
  });

  it("blocks the thread instead of running the event loop (what keeps Dawn from spinning)", () => {
    let ran = false;
    setImmediate(() => {
      ran = true;
    });
    const start = performance.now();
    blockFor(20);
    expect(performance.now() - start).toBeGreaterThanOrEqual(19);
    expect(ran).toBe(false); // nothing else ran on this thread while it was blocked
  });
});
