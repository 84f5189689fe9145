import { describe, expect, it } from "vitest";
import { matmul } from "../src/kernels/matmul.js";
import { matmulRef } from "../src/reference/matmul.js";
import { expectClose, randomArray, testContext } from "./helpers.js";

const ADD_ONE = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x < arrayLength(&y)) { y[id.x] = y[id.x] + 1.0; }
}`;

describe("kernel profile", () => {
  it("times every dispatch per kernel without changing results", async () => {
    const ctx = await testContext();
    const [m, n, k] = [96, 80, 64];
    const a = randomArray(m * k, 1);
    const b = randomArray(k * n, 2);
    const ab = ctx.upload(a);
    const bb = ctx.upload(b);
    const out = ctx.pool.acquire(m * n * 4);
    const y = ctx.upload(new Float32Array(256));
    const addOne = ctx.pipeline("add one", ADD_ONE);

    ctx.startKernelProfile();
    const before = ctx.stats.dispatches;
    matmul(ctx, { a: ab, b: bb, out, batch: 1, m, n, k });
    for (let i = 0; i < 5; i++) ctx.dispatch(addOne, [y], undefined, [4]);
    const profile = await ctx.stopKernelProfile();

    expect(profile.dispatches).toBe(ctx.stats.dispatches - before);
    const add = profile.kernels.find((kernel) => kernel.label === "add one");
    expect(add?.dispatches).toBe(5);
    expect(profile.kernels.some((kernel) => kernel.label.startsWith("matmul"))).toBe(true);
    expect(profile.totalMs).toBeGreaterThan(0);
    expect(profile.totalMs).toBeCloseTo(
      profile.kernels.reduce((sum, kernel) => sum + kernel.ms, 0),
      9,
    );
    for (let i = 1; i < profile.kernels.length; i++) {
      expect(profile.kernels[i - 1]!.ms).toBeGreaterThanOrEqual(profile.kernels[i]!.ms);
    }
    expectClose(
      new Float32Array(await ctx.read(out, m * n * 4)),
      matmulRef({ a, b, batch: 1, m, n, k }),
      1e-4,
      1e-4,
    );
    expect(Array.from(new Float32Array(await ctx.read(y, 256 * 4)))).toEqual(new Array(256).fill(5));
    for (const buffer of [ab, bb, out, y]) ctx.pool.release(buffer);
  });

  it("keeps counting past one query set and across submits", async () => {
    const ctx = await testContext();
    const y = ctx.upload(new Float32Array(64));
    const addOne = ctx.pipeline("add one", ADD_ONE);
    ctx.startKernelProfile();
    for (let i = 0; i < 1500; i++) {
      ctx.dispatch(addOne, [y], undefined, [1]);
      if (i === 700) ctx.flush();
    }
    const profile = await ctx.stopKernelProfile();
    expect(profile.dispatches).toBe(1500);
    expect(profile.kernels).toHaveLength(1);
    expect(Array.from(new Float32Array(await ctx.read(y, 64 * 4)))).toEqual(new Array(64).fill(1500));
    ctx.pool.release(y);
  });

  it("refuses to start twice or stop when not started", async () => {
    const ctx = await testContext();
    await expect(ctx.stopKernelProfile()).rejects.toThrow(/no kernel profile/);
    ctx.startKernelProfile();
    expect(() => ctx.startKernelProfile()).toThrow(/already running/);
    await ctx.stopKernelProfile();
  });
});
