import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BindGroupCache } from "../src/gpu/bind-group-cache.js";
import { GpuContext } from "../src/gpu/context.js";

const COPY = /* wgsl */ `
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) { y[id.x] = x[id.x]; }`;

const fakeGroup = () => ({}) as GPUBindGroup;

describe("BindGroupCache", () => {
  it("reuses a group under the same key and creates one under a new key", () => {
    const cache = new BindGroupCache();
    const a = cache.get("a", [], fakeGroup);
    expect(cache.get("a", [], fakeGroup)).toBe(a);
    expect(cache.get("b", [], fakeGroup)).not.toBe(a);
    expect({ created: cache.created, reused: cache.reused }).toEqual({ created: 2, reused: 1 });
  });

  it("asks for a collection once enough groups were dropped, counting drops across clears", () => {
    let collections = 0;
    const cache = new BindGroupCache(() => collections++, 5);
    for (const key of ["a", "b", "c"]) cache.get(key, [], fakeGroup);
    cache.clear(); // 3 dropped
    expect(collections).toBe(0);
    for (const key of ["a", "b"]) cache.get(key, [], fakeGroup);
    cache.clear(); // 5 dropped
    expect(collections).toBe(1);
    expect(cache.collections).toBe(1);
    cache.clear(); // nothing to drop
    expect(collections).toBe(1);
  });

  it("drops only the groups that bind a forgotten resource", () => {
    const [x, y, z, w] = [{}, {}, {}, {}];
    const cache = new BindGroupCache();
    const xy = cache.get("xy", [x, y], fakeGroup);
    const yz = cache.get("yz", [y, z], fakeGroup);
    const zw = cache.get("zw", [z, w], fakeGroup);
    cache.forget([x]);
    expect(cache.size).toBe(2);
    expect(cache.dropped).toBe(1);
    expect(cache.get("yz", [y, z], fakeGroup)).toBe(yz);
    expect(cache.get("zw", [z, w], fakeGroup)).toBe(zw);
    expect(cache.get("xy", [x, y], fakeGroup)).not.toBe(xy);
    // A group dropped through one resource is not dropped again through another.
    cache.forget([y, z]);
    expect(cache.size).toBe(0);
    expect(cache.dropped).toBe(4);
    cache.forget([w, {}]);
    expect(cache.dropped).toBe(4);
  });

  it("counts groups dropped by forgetting toward the next collection", () => {
    let collections = 0;
    const cache = new BindGroupCache(() => collections++, 3);
    const resources = [{}, {}, {}];
    for (const [i, r] of resources.entries()) cache.get(`g${i}`, [r], fakeGroup);
    cache.forget(resources.slice(0, 2));
    expect(collections).toBe(0);
    cache.forget(resources.slice(2));
    expect(collections).toBe(1);
  });
});

describe("bind groups of a pool that retires buffers every step", () => {
  it("re-creates only the groups that bound a destroyed buffer", async () => {
    // The budget keeps the small buffers; the large one is over it, so every release destroys it (after
    // the submit) and its next step gets a new one, as a step with one over-budget activation does.
    const ctx = await GpuContext.create({ maxPooledBytes: 64 * 1024 });
    try {
      const copy = ctx.pipeline("copy", COPY);
      const step = async () => {
        const small = Array.from({ length: 8 }, () => ctx.pool.acquire(1024));
        const large = ctx.pool.acquire(256 * 1024);
        for (let i = 0; i + 1 < small.length; i++)
          ctx.dispatch(copy, [small[i]!, small[i + 1]!], undefined, [4]);
        ctx.dispatch(copy, [small[7]!, large], undefined, [4]);
        ctx.dispatch(copy, [large, small[0]!], undefined, [4]);
        for (const b of [...small, large]) ctx.pool.release(b);
        await ctx.sync();
      };
      await step();
      const first = ctx.stats;
      const destroyedBefore = ctx.pool.stats.destroyed;
      await step();
      await step();
      const after = ctx.stats;
      expect(ctx.pool.stats.destroyed - destroyedBefore).toBe(2);
      // 9 dispatches a step; only the 2 binding the large buffer need a new group.
      expect(after.dispatches - first.dispatches).toBe(18);
      expect(after.bindGroups - first.bindGroups).toBe(4);
      expect(after.bindGroupsDropped - first.bindGroupsDropped).toBe(4);
    } finally {
      ctx.destroy();
    }
  });
});

describe("bind groups dropped by a long-running context", () => {
  const mappings = () => readFileSync("/proc/self/maps", "utf8").split("\n").length;

  /** `count` dispatches, each binding a pair of buffers no earlier dispatch bound together. */
  async function distinctBindGroups(ctx: GpuContext, count: number): Promise<number> {
    const buffers = Array.from({ length: 250 }, () => ctx.pool.acquire(256));
    const copy = ctx.pipeline("copy", COPY);
    const before = mappings();
    let peak = before;
    for (let i = 0; i < count; i++) {
      const a = i % buffers.length;
      const b = (a + 1 + Math.floor(i / buffers.length)) % buffers.length;
      ctx.dispatch(copy, [buffers[a]!, buffers[b]!], undefined, [1]);
      if (i % 2000 === 1999) {
        await ctx.sync();
        peak = Math.max(peak, mappings());
      }
    }
    await ctx.sync();
    for (const buffer of buffers) ctx.pool.release(buffer);
    return Math.max(peak, mappings()) - before;
  }

  it.runIf(existsSync("/proc/self/maps"))(
    "collects them, so that their native side does not pile up until the process runs out",
    async () => {
      const ctx = await GpuContext.create();
      const grown = await distinctBindGroups(ctx, 60_000);
      expect(ctx.stats.bindGroups).toBe(60_000);
      expect(ctx.stats.garbageCollections).toBeGreaterThanOrEqual(6);
      // The cache's 8,192 groups, the 8,192 dropped before a collection, and slack. Lavapipe takes one
      // mapping per group: left to V8, the 60,000 groups kept up to 60,000 (alone in a process).
      expect(grown).toBeLessThan(20_000);
      ctx.destroy();
    },
    60_000,
  );
});
