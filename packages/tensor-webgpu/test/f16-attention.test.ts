import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { tuneAttentionForms } from "../src/kernels/attention/form-tuning.js";
import {
  attentionForms,
  disableAttentionFormTuning,
  enableAttentionFormTuning,
} from "../src/kernels/attention/forms.js";
import { attentionTuning } from "../src/kernels/attention/index.js";
import { limitMatmulFormBytesForTesting } from "../src/kernels/attention/matmul-form.js";
import {
  attentionTiles,
  disableAttentionTuning,
  enableAttentionTuning,
} from "../src/kernels/attention/tile-choices.js";
import { tuneAttentionTiles } from "../src/kernels/attention/tile-tuning.js";
import { type Case, inputs, qwen, runGpu, small } from "./attention-cases.js";
import { expectClose, halves, testContext } from "./helpers.js";

/**
 * Attention on f16 q, k, v (and dOut): every kernel path reads the halves itself, computes in f32 as the
 * f32 kernels do on the same values, and rounds the output and the gradients once as it stores them. The
 * forward is compared with the f32 kernel's on the same (widened) inputs: lse the same bits, the output
 * that output rounded to halves. The backward computes D = rowsum(dOut∘out) from the rounded output, so
 * its gradients may differ from the f32 kernel's by that and their own rounding.
 */
const GRADIENT_TOLERANCE = { atol: 2e-3, rtol: 2 ** -8 };

// `qwenHeads`: also at Qwen2.5-0.5B's heads, whose kernels take seconds more to compile on lavapipe: on the
// paths an f16 run takes (textures on software adapters, the GPU tiles elsewhere).
const PATHS = [
  { name: "texture kernels (software adapters)", profile: "auto", textures: true, qwenHeads: true },
  { name: "tiled kernels, software profile", profile: "software", textures: false, qwenHeads: false },
  {
    name: "tiled kernels, GPU profile (dK/dV per query head, summed)",
    profile: "hardware",
    textures: false,
    qwenHeads: true,
  },
] as const;

const CASES: [string, Case][] = [
  [
    "grouped heads, ragged length, left padding",
    { ...small, batch: 2, seqLen: 37, kvLen: 37, kvStart: [0, 5] },
  ],
  ["non-causal", { ...small, batch: 1, seqLen: 12, kvLen: 20, causal: false }],
];
const QWEN_CASE: [string, Case] = [
  "Qwen2.5-0.5B heads (14/2 x 64)",
  { ...qwen, batch: 1, seqLen: 70, kvLen: 70 },
];

afterEach(() => {
  attentionTuning.profile = "auto";
  attentionTuning.textures = true;
  attentionTuning.forward = "auto";
  attentionTuning.backward = "auto";
  limitMatmulFormBytesForTesting(undefined);
});

/** The test context, or the test skipped (and reported so) where the adapter has no shader-f16. */
async function halfContext(skip: (note?: string) => never) {
  const ctx = await testContext();
  if (!ctx.info.features.shaderF16) skip("no shader-f16 on this adapter: f16 tensors need it");
  return ctx;
}

/** inputs(c, seed) with every value a half, so that the f32 and f16 runs see the same numbers. */
function halfInputs(c: Case, seed: number) {
  const x = inputs(c, seed);
  return { ...x, q: halves(x.q), k: halves(x.k), v: halves(x.v), dOut: halves(x.dOut) };
}

describe("attention on f16 buffers", () => {
  for (const path of PATHS)
    for (const [label, c] of path.qwenHeads ? [...CASES, QWEN_CASE] : CASES)
      it(`${path.name}: ${label}`, async ({ skip }) => {
        const ctx = await halfContext(skip);
        attentionTuning.profile = path.profile;
        attentionTuning.textures = path.textures;
        const x = halfInputs(c, 11);
        const wide = await runGpu(ctx, c, x, "f32");
        const half = await runGpu(ctx, c, x, "f16");
        expect(Array.from(half.lse)).toEqual(Array.from(wide.lse));
        expect(Array.from(half.out)).toEqual(Array.from(halves(wide.out)));
        for (const grad of ["dQ", "dK", "dV"] as const) {
          expect(half[grad].every(Number.isFinite), grad).toBe(true);
          expectClose(half[grad], wide[grad], GRADIENT_TOLERANCE.atol, GRADIENT_TOLERANCE.rtol);
        }
      });

  it("tunes f16 problems apart from f32 ones, every candidate tile agreeing with the listed one", async ({
    skip,
  }) => {
    const ctx = await halfContext(skip);
    attentionTuning.profile = "hardware";
    attentionTuning.textures = false;
    enableAttentionTuning(ctx);
    try {
      const c: Case = { ...small, batch: 2, seqLen: 40, kvLen: 40 };
      const x = halfInputs(c, 12);
      const before = await runGpu(ctx, c, x, "f16");
      const pending = attentionTiles(ctx)!.pendingDispatches();
      expect(pending.length).toBe(3); // forward, dK/dV per head, dQ
      const tuned = await tuneAttentionTiles(ctx, undefined, { repeats: 1, rounds: 1 });
      for (const entry of tuned) {
        expect(entry.key).toMatch(/ f16$/);
        expect(entry.rejected, entry.key).toEqual([]);
        expect(entry.candidates.length).toBeGreaterThan(1);
      }
      // On the tuned tiles: the same forward, gradients within rounding. On lavapipe the tiles sum in the
      // same order and give the same bits; a card's compiler may contract each tile's sums its own way
      // (the H200's differed in the last bit of an f16 output).
      const after = await runGpu(ctx, c, x, "f16");
      if (ctx.info.adapter.isSoftware) expect(Array.from(after.out)).toEqual(Array.from(before.out));
      else expectClose(after.out, before.out, 1e-3, 2e-3);
      for (const grad of ["dQ", "dK", "dV"] as const)
        expectClose(after[grad], before[grad], GRADIENT_TOLERANCE.atol, GRADIENT_TOLERANCE.rtol);
      // An f32 run of the same shape is another problem, not yet measured.
      await runGpu(ctx, c, x, "f32");
      expect(
        attentionTiles(ctx)!
          .pendingDispatches()
          .map((d) => d.dims.dtype ?? "f32"),
      ).toEqual(["f32", "f32", "f32"]);
    } finally {
      disableAttentionTuning(ctx);
    }
  });
});

/**
 * The matmul form on halves materialises the scores, probabilities and their gradients as halves (as
 * attention in bf16 does on PyTorch's matmul path): its results differ from the f32 kernels' on the same
 * values by those roundings too (measured: at most 5e-4 of each result's largest magnitude).
 */
const MATMUL_FORM_TOLERANCE = { atol: 2e-3, rtol: 2 ** -8 };

describe("the matmul form of attention on f16 buffers", () => {
  const chunked: Case = { ...small, batch: 3, seqLen: 21, kvLen: 21, kvStart: [0, 4, 17] };
  const cases: [string, Case, number?][] = [
    ["whole sequences, left padding", chunked],
    // Score matrices over the budget: sequences one at a time, in blocks of 16 query rows.
    ["blocks of query rows", { ...small, batch: 1, seqLen: 40, kvLen: 40 }, 16 * small.numHeads * 40 * 2],
    ["Qwen2.5-0.5B heads (14/2 x 64)", { ...qwen, batch: 1, seqLen: 48, kvLen: 48 }],
  ];
  for (const [label, c, budget] of cases)
    it(label, async ({ skip }) => {
      const ctx = await halfContext(skip);
      const x = halfInputs(c, 13);
      const wide = await runGpu(ctx, c, x, "f32"); // the tiled (or texture) kernels, on the same values
      attentionTuning.forward = "matmul";
      attentionTuning.backward = "matmul";
      limitMatmulFormBytesForTesting(budget);
      const dispatch = vi.spyOn(ctx, "dispatch");
      onTestFinished(() => dispatch.mockRestore());
      const half = await runGpu(ctx, c, x, "f16");
      const labels = dispatch.mock.calls.map(([pipeline]) => pipeline.label);
      for (const kernel of [
        "attention forward row softmax (f16)",
        "attention backward score gradients (f16)",
      ])
        expect(labels).toContain(kernel);
      expectClose(half.lse, wide.lse, MATMUL_FORM_TOLERANCE.atol, MATMUL_FORM_TOLERANCE.rtol);
      for (const result of ["out", "dQ", "dK", "dV"] as const) {
        expect(half[result].every(Number.isFinite), result).toBe(true);
        expectClose(half[result], wide[result], MATMUL_FORM_TOLERANCE.atol, MATMUL_FORM_TOLERANCE.rtol);
      }
    });

  it("is measured against the tiled kernels on halves, apart from f32 problems", async ({ skip }) => {
    const ctx = await halfContext(skip);
    enableAttentionFormTuning(ctx);
    try {
      const c: Case = { ...small, batch: 2, seqLen: 32, kvLen: 32 };
      await runGpu(ctx, c, halfInputs(c, 14), "f16");
      const pending = attentionForms(ctx)!.pendingProblems();
      expect(pending.map((p) => `${p.pass} ${p.dims.dtype}`)).toEqual(["forward f16", "backward f16"]);
      const { forms } = await tuneAttentionForms(ctx, undefined, { repeats: 1, rounds: 1 });
      for (const entry of forms) {
        expect(entry.key).toMatch(/ f16$/);
        expect(entry.rejected, entry.key).toEqual([]); // both forms agree on halves
        expect(entry.candidates.map((t) => t.form).sort()).toEqual(["matmul", "tiled"]);
      }
    } finally {
      disableAttentionFormTuning(ctx);
    }
  });
});
