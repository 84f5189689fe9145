import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { webGpuBackend } from "../src/backends/webgpu.js";
import { BufferPool, sizeClass } from "../src/gpu/buffer-pool.js";
import { GpuContext, GpuValidationError, grid } from "../src/gpu/context.js";
import { DeviceLostError, matrixLoadsThroughViews } from "../src/gpu/device.js";
import { TexturePool } from "../src/gpu/texture-pool.js";
import { backward, mean, mul, matmul as product, scope, tensor } from "../src/index.js";
import { matmul } from "../src/kernels/matmul.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const AXPY = /* wgsl */ `
struct Params { n: u32, alpha: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) groups: vec3u) {
  let i = id.x + id.y * groups.x * 64u;
  if (i >= params.n) { return; }
  y[i] = y[i] + params.alpha * x[i];
}`;

function params(n: number, alpha: number): Uint32Array {
  const p = new Uint32Array(2);
  p[0] = n;
  new Float32Array(p.buffer)[1] = alpha;
  return p;
}

describe("GpuContext", () => {
  it("describes its adapter", async () => {
    const ctx = await testContext();
    expect(typeof ctx.info.adapter.isSoftware).toBe("boolean");
    expect(ctx.device.limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
  });

  it("probes whether subgroup-matrix loads take buffer views, without leaving an error behind", async () => {
    const ctx = await testContext();
    const f16Shape = [{ componentType: "f16", resultType: "f32", M: 16, N: 16, K: 16 }];
    const real =
      ctx.info.features.subgroupMatrixConfigs.length > 0 && !ctx.info.features.subgroupMatrixEmulated;
    const probed = await matrixLoadsThroughViews(
      ctx.device,
      f16Shape,
      Math.max(ctx.info.subgroupSizes.max, 1),
    );
    // Without matrix units the extension does not compile; with them, the context probed the same.
    expect(probed).toBe(real ? ctx.info.features.subgroupMatrixViews : false);
    expect(await matrixLoadsThroughViews(ctx.device, [], 32)).toBe(false);
    // The refused compile was caught in its own error scope: the next kernel runs.
    const xb = ctx.upload(new Float32Array([1]));
    const yb = ctx.upload(new Float32Array([2]));
    ctx.dispatch(ctx.pipeline("axpy", AXPY), [xb, yb], params(1, 1), [1]);
    expect(new Float32Array(await ctx.read(yb, 4))[0]).toBe(3);
    for (const b of [xb, yb]) ctx.pool.release(b);
  });

  it("runs a kernel with uniform params and reads the result", async () => {
    const ctx = await testContext();
    const n = 1000;
    const x = randomArray(n, 1);
    const y = randomArray(n, 2);
    const xb = ctx.upload(x);
    const yb = ctx.upload(y);
    ctx.dispatch(ctx.pipeline("axpy", AXPY), [xb, yb], params(n, 0.5), [Math.ceil(n / 64)]);
    const out = new Float32Array(await ctx.read(yb, n * 4));
    expectClose(
      out,
      y.map((v, i) => v + 0.5 * x[i]!),
    );
    ctx.pool.release(xb);
    ctx.pool.release(yb);
  });

  it("reuses a bind group for the same kernel, buffers and uniform slot, with each dispatch's params", async () => {
    const ctx = await GpuContext.create();
    try {
      const n = 256;
      const x = randomArray(n, 5);
      const xb = ctx.upload(x);
      const yb = ctx.upload(new Float32Array(n));
      const axpy = ctx.pipeline("axpy", AXPY);
      const step = async (alpha: number) => {
        ctx.dispatch(axpy, [xb, yb], params(n, alpha), [Math.ceil(n / 64)]);
        return new Float32Array(await ctx.read(yb, n * 4));
      };
      // As a decoding loop does: the same kernel on the same buffers, the params at the same slot.
      expectClose(await step(1), x);
      const before = ctx.stats;
      expectClose(
        await step(2),
        x.map((v) => 3 * v),
      );
      expect(ctx.stats.bindGroups).toBe(before.bindGroups);
      expect(ctx.stats.bindGroupsReused).toBe(before.bindGroupsReused + 1);
      // Another buffer, or another slot, is another bind group.
      const zb = ctx.upload(new Float32Array(n));
      ctx.dispatch(axpy, [xb, zb], params(n, 1), [Math.ceil(n / 64)]);
      ctx.dispatch(axpy, [xb, zb], params(n, 1), [Math.ceil(n / 64)]);
      expectClose(
        new Float32Array(await ctx.read(zb, n * 4)),
        x.map((v) => 2 * v),
      );
      expect(ctx.stats.bindGroups).toBe(before.bindGroups + 2);
      // Destroyed buffers drop the cached groups: a new buffer of the same size gets a new group.
      for (const b of [xb, yb, zb]) ctx.pool.release(b);
      ctx.pool.trim();
      const xb2 = ctx.upload(x);
      const yb2 = ctx.upload(new Float32Array(n));
      ctx.dispatch(axpy, [xb2, yb2], params(n, 1), [Math.ceil(n / 64)]);
      expectClose(new Float32Array(await ctx.read(yb2, n * 4)), x);
      expect(ctx.stats.bindGroups).toBe(before.bindGroups + 3);
    } finally {
      ctx.destroy();
    }
  });

  it("a buffer released beyond the pool's budget outlives the recorded commands that use it", async () => {
    // Budget 0: every release is over budget. Destroying at release would fail the pending submit.
    const ctx = await GpuContext.create({ maxPooledBytes: 0 });
    try {
      const n = 256;
      const x = randomArray(n, 3);
      const xb = ctx.upload(x);
      const yb = ctx.upload(new Float32Array(n));
      ctx.dispatch(ctx.pipeline("axpy", AXPY), [xb, yb], params(n, 2), [Math.ceil(n / 64)]);
      ctx.pool.release(xb);
      expect(ctx.pool.stats.pooledBytes).toBe(0);
      const out = new Float32Array(await ctx.read(yb, n * 4));
      expectClose(
        out,
        x.map((v) => 2 * v),
      );
      ctx.pool.release(yb);
    } finally {
      ctx.destroy();
    }
  });

  it("evicts the longest-unused pooled buffers when a release goes over the budget", async () => {
    const ctx = await GpuContext.create({ maxPooledBytes: 3 * 1024 });
    try {
      const buffers = [1024, 1024, 1024].map((bytes) => ctx.pool.acquire(bytes));
      for (const b of buffers) ctx.pool.release(b);
      expect(ctx.pool.stats.pooledBytes).toBe(3 * 1024);
      const bigger = ctx.pool.acquire(2048);
      ctx.pool.release(bigger);
      // Two of the 1 KiB buffers went to make room; the newest release stays.
      expect(ctx.pool.stats.pooledBytes).toBe(3 * 1024);
      expect(ctx.pool.acquire(2048)).toBe(bigger);
      const created = ctx.pool.stats.created;
      ctx.pool.acquire(1024);
      ctx.pool.acquire(1024);
      expect(ctx.pool.stats.created).toBe(created + 1);
    } finally {
      ctx.destroy();
    }
  });

  it("refuses a buffer beyond the device's maxBufferSize at once, naming the sizes", async () => {
    const ctx = await testContext();
    const pool = new BufferPool(ctx.device);
    const limit = ctx.device.limits.maxBufferSize;
    expect(() => pool.acquire(limit + 1, "logits")).toThrow(
      /a logits of [\d.]+ [GM]iB is larger than this device's largest buffer \(maxBufferSize [\d.]+ [GM]iB\)/,
    );
    expect(pool.stats.created).toBe(0);
  });

  it("keeps a working set larger than its default budget, so a big step does not re-create its buffers", async () => {
    const ctx = await testContext();
    const MiB = 1024 * 1024;
    // A step of 3 MiB in use at once; pools on the context's device with a 1 MiB floor or a 1 MiB cap.
    const step = (pool: BufferPool) => {
      const buffers = Array.from({ length: 6 }, () => pool.acquire(MiB / 2));
      for (const b of buffers) pool.release(b);
    };
    const adaptive = new BufferPool(ctx.device, undefined, MiB);
    const capped = new BufferPool(ctx.device, MiB);
    for (const pool of [adaptive, capped]) step(pool);
    expect(adaptive.budget).toBe(6 * MiB); // all it holds within twice the working set
    expect(adaptive.stats.pooledBytes).toBe(3 * MiB);
    expect(capped.budget).toBe(MiB);
    expect(capped.stats.pooledBytes).toBe(MiB);
    for (const pool of [adaptive, capped]) step(pool);
    expect(adaptive.stats.created).toBe(6); // the second step reused every buffer
    expect(capped.stats.created).toBe(10); // four of six re-created
    adaptive.trim();
    capped.trim();
    ctx.pool.destroyRetired();
  });

  it("keeps a step whose buffers add up to more than its peak in use", async () => {
    const ctx = await testContext();
    const MiB = 1024 * 1024;
    // 2 MiB in use at most, but 4 MiB of buffers: the first four are released before the last two are
    // asked for, in a size class they cannot serve.
    const step = (pool: BufferPool) => {
      const early = Array.from({ length: 4 }, () => pool.acquire(MiB / 2));
      for (const b of early) pool.release(b);
      const late = Array.from({ length: 2 }, () => pool.acquire(MiB));
      for (const b of late) pool.release(b);
    };
    const pool = new BufferPool(ctx.device, undefined, MiB);
    for (let i = 0; i < 3; i++) step(pool);
    expect(pool.stats.peakInUseBytes).toBe(2 * MiB);
    expect(pool.stats.created).toBe(6);
    expect(pool.stats.destroyed).toBe(0);
    pool.trim();
    expect(pool.stats.destroyed).toBe(6);
  });

  it("keeps every dispatch's params when more dispatches are recorded than the uniform ring holds", async () => {
    const ctx = await testContext();
    const x = new Float32Array([1]);
    const y = new Float32Array([0]);
    const xb = ctx.upload(x);
    const yb = ctx.upload(y);
    const pipeline = ctx.pipeline("axpy", AXPY);
    const before = ctx.stats.submits;
    for (let i = 1; i <= 5000; i++) ctx.dispatch(pipeline, [xb, yb], params(1, i), [1]);
    const out = new Float32Array(await ctx.read(yb, 4));
    expect(out[0]).toBe((5000 * 5001) / 2);
    expect(ctx.stats.submits - before).toBe(2);
  });

  it("orders a write after earlier recorded work that reads the same buffer", async () => {
    const ctx = await testContext();
    const xb = ctx.upload(new Float32Array([2]));
    const yb = ctx.upload(new Float32Array([1]));
    ctx.dispatch(ctx.pipeline("axpy", AXPY), [xb, yb], params(1, 1), [1]); // y = 1 + 2
    ctx.write(xb, new Float32Array([100])); // must not affect the dispatch above
    expect(new Float32Array(await ctx.read(yb, 4))[0]).toBe(3);
  });

  it("reuses released buffers of the same size class", async () => {
    const ctx = await testContext();
    const a = ctx.pool.acquire(1000);
    ctx.pool.release(a);
    const reusedBefore = ctx.pool.stats.reused;
    const b = ctx.pool.acquire(1010);
    expect(b).toBe(a);
    expect(ctx.pool.stats.reused).toBe(reusedBefore + 1);
    ctx.pool.release(b);
  });

  it("hands out the oldest free buffer of a size class, whatever order they were released in", async () => {
    const ctx = await testContext();
    const pool = new BufferPool(ctx.device);
    const [a, b, c] = [pool.acquire(1024), pool.acquire(1024), pool.acquire(1024)];
    for (const released of [c, a, b]) pool.release(released);
    // GPUBuffers have no own properties to compare: check identity one by one.
    for (const oldest of [a, b, c]) expect(pool.acquire(1024)).toBe(oldest);
    for (const released of [b, c, a]) pool.release(released);
    expect(pool.acquire(1000)).toBe(a);
    pool.trim();
  });

  it("hands out the oldest free texture of a class, and drops the longest unused one over budget", async () => {
    const ctx = await testContext();
    // 64 x 64 rgba32float: 64 KiB each; room for four.
    const pool = new TexturePool(ctx.device, 4 * 64 * 1024);
    const [a, b, c] = [0, 1, 2].map(() => pool.acquire("rgba32float", 64, 60));
    for (const released of [c!, a!, b!]) pool.release(released);
    for (const oldest of [a, b, c]) expect(pool.acquire("rgba32float", 60, 64)).toBe(oldest);
    for (const released of [b!, c!, a!]) pool.release(released);
    const d = pool.acquire("rgba32float", 128, 64); // another class of twice the size
    pool.release(d); // over budget: b, unused longest, goes
    expect(pool.stats.pooledTextures).toBe(3);
    expect(pool.acquire("rgba32float", 64, 64)).toBe(a);
    expect(pool.acquire("rgba32float", 64, 64)).toBe(c);
    pool.trim();
  });

  it("records a repeated training step on the same buffers, reusing every bind group", async () => {
    // A step whose tensors are released in another order than they were made (the tape's backward
    // order, then the scope's): with buffers handed out in release order, each step got other buffers
    // and every dispatch created a bind group.
    const backend = await webGpuBackend();
    const w = tensor(randomArray(24 * 16, 1), [24, 16], { backend, requiresGrad: true });
    const x = tensor(randomArray(8 * 16, 2), [8, 16], { backend });
    // Each step ends in a submit, as a training step's readback does: uniform slots count from there.
    const step = async () => {
      scope(() => {
        const h = product(x, w, { transB: true });
        backward(mean(mul(h, h)));
        w.grad?.dispose();
        w.grad = undefined;
      });
      await backend.sync();
    };
    await step();
    const first = backend.ctx.stats;
    await step();
    await step();
    const after = backend.ctx.stats;
    expect(after.dispatches).toBeGreaterThan(first.dispatches);
    expect(after.bindGroups).toBe(first.bindGroups);
    expect(after.bindGroupsReused - first.bindGroupsReused).toBe(after.dispatches - first.dispatches);
    backend.ctx.destroy();
  });

  it("turns a shader error into a clear exception", async () => {
    const ctx = await testContext();
    const broken = "@compute @workgroup_size(1) fn main() { let x: f32 = undefined_thing; }";
    let error: unknown;
    try {
      ctx.dispatch(ctx.pipeline("broken", broken), [], undefined, [1]);
      await ctx.sync();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GpuValidationError);
    expect((error as Error).message).toMatch(/undefined_thing/);
    await ctx.sync(); // the context stays usable
  });
});

describe("GpuContext.destroy", () => {
  const mappings = () => readFileSync("/proc/self/maps", "utf8").split("\n").length;
  /** `count` dispatches, each on buffers of its own: as many bind groups and device allocations. */
  async function manyDispatches(ctx: GpuContext, count: number): Promise<void> {
    const axpy = ctx.pipeline("axpy", AXPY);
    for (let i = 0; i < count; i++) {
      const x = ctx.upload(randomArray(64 + i, i));
      const y = ctx.upload(new Float32Array(64 + i));
      ctx.dispatch(axpy, [x, y], params(64, 1), [1]);
    }
    await ctx.sync();
  }

  it.runIf(existsSync("/proc/self/maps"))(
    "frees the device's memory at once, without waiting for the garbage collector",
    async () => {
      const warmUp = await GpuContext.create(); // the driver's own one-time mappings
      await manyDispatches(warmUp, 10);
      warmUp.destroy();
      const before = mappings();
      const ctx = await GpuContext.create();
      await manyDispatches(ctx, 1000);
      const grown = mappings() - before;
      // lavapipe maps each device allocation on its own (the mappings a long-lived process ran out of).
      if (ctx.info.adapter.isSoftware) expect(grown).toBeGreaterThan(500);
      ctx.destroy();
      expect(mappings() - before).toBeLessThan(Math.max(100, grown / 4));
    },
  );

  it("refuses later use with a clear error, and may be called twice", async () => {
    const ctx = await GpuContext.create();
    const x = ctx.upload(randomArray(64, 1));
    ctx.destroy();
    ctx.destroy();
    await expect(ctx.read(x, 256)).rejects.toThrow(/device was lost \(destroyed\)/);
    expect(() => ctx.dispatch(ctx.pipeline("axpy", AXPY), [x, x], params(64, 1), [1])).toThrow(
      DeviceLostError,
    );
  });

  it("is the backend's destroy", async () => {
    const backend = await webGpuBackend();
    backend.destroy();
    await expect(backend.read(backend.alloc(16), 16)).rejects.toThrow(DeviceLostError);
  });
});

describe("helpers", () => {
  it("grid splits large dispatches", () => {
    expect(grid(100)).toEqual([100, 1]);
    const [x, y] = grid(200_000);
    expect(x).toBeLessThanOrEqual(65535);
    expect(x * y).toBeGreaterThanOrEqual(200_000);
  });

  it("sizeClass wastes at most a quarter", () => {
    for (const bytes of [1, 300, 1000, 4096, 5000, 123456, 10_000_000]) {
      const size = sizeClass(bytes);
      expect(size).toBeGreaterThanOrEqual(bytes);
      expect(size).toBeLessThanOrEqual(Math.max(256, bytes * 1.25 + 16));
    }
  });
});

describe("GpuContext wait accounting", () => {
  it("counts overlapping waits once", async () => {
    const ctx = await testContext();
    const n = 256;
    const a = ctx.upload(randomArray(n * n, 1));
    const b = ctx.upload(randomArray(n * n, 2));
    const out = ctx.pool.acquire(n * n * 4);
    await ctx.sync();
    const before = ctx.stats.waitMs;
    const start = performance.now();
    // Work both reads must wait for (tens of ms on lavapipe), so each wait spans about all of it.
    for (let i = 0; i < 8; i++) matmul(ctx, { a, b, out, batch: 1, m: n, n, k: n, variant: "buffer" });
    await Promise.all([ctx.read(out, 16), ctx.read(b, 16)]);
    const elapsed = performance.now() - start;
    // Two waits in parallel: their sum could reach twice the elapsed time, the union cannot pass it.
    expect(ctx.stats.waitMs - before).toBeLessThanOrEqual(elapsed + 0.5);
    expect(ctx.stats.waitMs - before).toBeGreaterThan(0);
    for (const buffer of [a, b, out]) ctx.pool.release(buffer);
  });
});
