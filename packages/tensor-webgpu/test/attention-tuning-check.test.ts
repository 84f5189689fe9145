/**
 * Attention tuning must never pick a form or a tile that computes wrongly, however fast. None is wrong on
 * this adapter, so some are made wrong: the matmul forms run with their scale 1.5 times too large, and a
 * copy of the forward kernel does so in every tile but its list's.
 */
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { timeAttentionForms, tuneAttentionForms } from "../src/kernels/attention/form-tuning.js";
import { attentionFormKey, attentionForms } from "../src/kernels/attention/forms.js";
import { FORWARD_KERNEL } from "../src/kernels/attention/forward.js";
import { attentionTuning } from "../src/kernels/attention/index.js";
import { resolveScale } from "../src/kernels/attention/shared.js";
import { enableAttentionTuning, type TiledKernel, tileName } from "../src/kernels/attention/tile-choices.js";
import { timeAttentionTiles } from "../src/kernels/attention/tile-tuning.js";
import { listTile } from "../src/kernels/attention/tiles.js";
import {
  disableKernelTuning,
  enableKernelTuning,
  loadKernelTuning,
  saveKernelTuning,
} from "../src/kernels/kernel-tuning.js";
import { type Case, inputs, runGpu, small } from "./attention-cases.js";
import { testContext } from "./helpers.js";

vi.mock("../src/kernels/attention/forward-matmul.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../src/kernels/attention/forward-matmul.js")>();
  const attentionForwardByMatmul: typeof actual.attentionForwardByMatmul = (ctx, args, scratch) =>
    actual.attentionForwardByMatmul(ctx, { ...args, scale: resolveScale(args) * 1.5 }, scratch);
  return { ...actual, attentionForwardByMatmul };
});

vi.mock("../src/kernels/attention/backward-matmul.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../src/kernels/attention/backward-matmul.js")>();
  const attentionBackwardByMatmul: typeof actual.attentionBackwardByMatmul = (ctx, args, stats) =>
    actual.attentionBackwardByMatmul(ctx, { ...args, scale: resolveScale(args) * 1.5 }, stats);
  return { ...actual, attentionBackwardByMatmul };
});

afterEach(async () => disableKernelTuning(await testContext()));

const dims: Case = { ...small, seqLen: 24, kvLen: 24 };

describe("attention tuning checks each form against the tiled kernels", () => {
  it("leaves out a forward form whose output differs, with the reason", async () => {
    const ctx = await testContext();
    const problem = { pass: "forward" as const, dims, hasKvStart: false };
    const { timed, rejected } = await timeAttentionForms(ctx, problem, { repeats: 1, rounds: 1 });
    expect(timed.map((t) => t.candidate)).toEqual(["tiled"]);
    expect(rejected).toEqual([
      { candidate: "matmul", reason: expect.stringMatching(/^wrong out: element \d+ is .*, the reference/) },
    ]);
  });

  it("leaves out a backward form whose gradients differ, with kvStart in the problem", async () => {
    const ctx = await testContext();
    const problem = { pass: "backward" as const, dims, hasKvStart: true };
    const { timed, rejected } = await timeAttentionForms(ctx, problem, { repeats: 1, rounds: 1 });
    expect(timed.map((t) => t.candidate)).toEqual(["tiled"]);
    expect(rejected.map((r) => r.candidate)).toEqual(["matmul"]);
    expect(rejected[0]!.reason).toMatch(/^wrong dQ: element \d+ is /);
  });

  it("keeps the tiled kernels and says which form it left out, in the saved measurements too", async () => {
    const ctx = await testContext();
    enableKernelTuning(ctx);
    await runGpu(ctx, dims, inputs(dims, 3));
    const { forms } = await tuneAttentionForms(ctx, undefined, { repeats: 1, rounds: 1 });
    expect(forms.map((entry) => [entry.key, entry.form])).toEqual([
      [attentionFormKey("forward", dims), "tiled"],
      [attentionFormKey("backward", dims), "tiled"],
    ]);
    for (const entry of forms) {
      expect(entry.candidates.map((c) => c.form)).toEqual(["tiled"]);
      expect(entry.rejected).toEqual([
        { kernel: "matmul", reason: expect.stringMatching(/^wrong d?[QKVout]+:/) },
      ]);
    }
    const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
    disableKernelTuning(ctx);
    expect(loadKernelTuning(ctx, saved, "tuning.json")).toBe(true);
    expect(attentionForms(ctx)!.entries()).toEqual(forms);
    const damaged = { ...saved, attentionForms: [{ ...saved.attentionForms[0], rejected: [{ kernel: 1 }] }] };
    expect(() => loadKernelTuning(ctx, damaged, "tuning.json")).toThrow(
      /tuning\.json, attentionForms entry 0: a rejected kernel is not \{kernel, reason\}/,
    );
  });
});

describe("attention tuning checks each tile against the list's tile", () => {
  it("leaves out a tile whose output differs, with the binding and element", async () => {
    const ctx = await testContext();
    attentionTuning.textures = false; // the tiled kernels run (and are noted) on any adapter
    onTestFinished(() => {
      attentionTuning.textures = true;
    });
    const table = enableAttentionTuning(ctx);
    await runGpu(ctx, dims, inputs(dims, 4));
    const noted = table.pendingDispatches().find((d) => d.kernel === FORWARD_KERNEL)!;
    const listed = tileName(listTile(ctx, FORWARD_KERNEL, dims.headDim / 4)!);
    const broken: TiledKernel = {
      ...FORWARD_KERNEL,
      key: "forward-wrong-scale",
      code: (tile, d4, profile, dtype) => {
        const code = FORWARD_KERNEL.code(tile, d4, profile, dtype);
        return tileName(tile) === listed ? code : code.replaceAll("params.scale", "(params.scale * 1.5)");
      },
    };
    const { timed, rejected } = await timeAttentionTiles(
      ctx,
      { ...noted, kernel: broken },
      { repeats: 1, rounds: 1 },
    );
    expect(timed.map((t) => tileName(t.candidate))).toEqual([listed]);
    expect(rejected.length).toBeGreaterThan(0);
    for (const { reason } of rejected) expect(reason).toMatch(/^wrong binding 3: element \d+ is /);
    // The same dispatch with its own kernel, on bindings larger than it fills (as pooled buffers are):
    // every tile agrees, the unfilled ends not compared.
    const pooled = { ...noted, bindingSizes: noted.bindingSizes.map((size) => size + 256) };
    expect((await timeAttentionTiles(ctx, pooled, { repeats: 1, rounds: 1 })).rejected).toEqual([]);
  });
});
