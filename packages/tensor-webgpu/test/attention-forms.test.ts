import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import { timeAttentionForms, tuneAttentionForms } from "../src/kernels/attention/form-tuning.js";
import {
  attentionFormKey,
  attentionForms,
  disableAttentionFormTuning,
  enableAttentionFormTuning,
} from "../src/kernels/attention/forms.js";
import { attentionTuning } from "../src/kernels/attention/index.js";
import {
  limitMatmulFormBytesForTesting,
  MIN_BLOCK_ROWS,
  matmulFormPlan,
} from "../src/kernels/attention/matmul-form.js";
import {
  disableKernelTuning,
  enableKernelTuning,
  loadKernelTuning,
  pendingKernelProblems,
  saveKernelTuning,
  tuneKernels,
} from "../src/kernels/kernel-tuning.js";
import { matmulChoices } from "../src/kernels/matmul-choices.js";
import { REPLACE_MARGIN } from "../src/kernels/tuning-timer.js";
import { type Case, checkAgainstReference, inputs, qwen, runGpu, small } from "./attention-cases.js";
import { testContext } from "./helpers.js";

// The matmul forms' own correctness over the attention cases is in attention.test.ts; here: their chunks
// and blocks, when they step aside, and how they are chosen.

const SCORE_KERNEL = "attention backward score gradients";
const SOFTMAX_KERNEL = "attention forward row softmax";

/** Run the forward and the backward in the matmul form, wherever it takes the problem. */
function forceMatmulForms(): void {
  attentionTuning.forward = "matmul";
  attentionTuning.backward = "matmul";
}

/** The pipeline label of each dispatch `work` records, in order. */
async function dispatchesOf(ctx: GpuContext, work: () => Promise<unknown>): Promise<string[]> {
  const dispatch = vi.spyOn(ctx, "dispatch");
  try {
    await work();
    return dispatch.mock.calls.map(([pipeline]) => pipeline.label);
  } finally {
    dispatch.mockRestore();
  }
}

afterEach(async () => {
  attentionTuning.forward = "auto";
  attentionTuning.backward = "auto";
  limitMatmulFormBytesForTesting(undefined);
  disableKernelTuning(await testContext());
});

describe("the matmul forms of attention", () => {
  // 3 sequences with left padding, so that each chunk must read its own sequences' kvStart and statistics.
  const c: Case = { ...small, batch: 3, seqLen: 21, kvLen: 21, kvStart: [0, 4, 17] };
  const perRow = (dims: Case) => dims.numHeads * dims.kvLen * 4; // bytes of one query row's scores
  const perSequence = perRow(c) * c.seqLen;

  for (const sequences of [1, 2]) {
    it(`takes the batch in chunks of ${sequences} sequence(s) whose score matrices fit its budget`, async () => {
      const ctx = await testContext();
      forceMatmulForms();
      limitMatmulFormBytesForTesting(sequences * perSequence + 4);
      expect(matmulFormPlan(ctx, c)).toEqual({ sequences, rows: c.seqLen });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 3));
      for (const kernel of [SOFTMAX_KERNEL, SCORE_KERNEL])
        expect(labels.filter((l) => l === kernel)).toHaveLength(Math.ceil(c.batch / sequences));
    });
  }

  // A sequence longer than the budget: blocks of query rows, the causal ones over the keys they see.
  const blockCases: [string, Case, number][] = [
    [
      "causal, 70 rows in blocks of 30, kvStart",
      { ...small, batch: 2, seqLen: 70, kvLen: 70, kvStart: [0, 9] },
      30,
    ],
    [
      "non-causal, 40 rows over 47 keys in blocks of 16",
      { ...small, seqLen: 40, kvLen: 47, causal: false },
      16,
    ],
    [
      "prefill continuation: 37 rows after 13 cached, kvCapacity 64, in blocks of 20",
      { ...small, seqLen: 37, kvLen: 50, kvCapacity: 64 },
      20,
    ],
    [
      "Qwen heads 14/2 x 64, 37 rows in blocks of 16, kvStart",
      { ...qwen, batch: 2, seqLen: 37, kvLen: 37, kvStart: [5, 0] },
      16,
    ],
  ];
  for (const [name, dims, rows] of blockCases)
    it(`takes a long sequence in blocks of query rows: ${name}`, async () => {
      const ctx = await testContext();
      forceMatmulForms();
      limitMatmulFormBytesForTesting(rows * perRow(dims) + 4);
      expect(matmulFormPlan(ctx, dims)).toEqual({ sequences: 1, rows });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(dims, name.length));
      const blocks = Math.ceil(dims.seqLen / rows);
      for (const kernel of [SOFTMAX_KERNEL, SCORE_KERNEL])
        expect(labels.filter((l) => l === kernel)).toHaveLength(dims.batch * blocks);
    });

  it("leaves to the tiled kernels a problem whose blocks would be too small", async () => {
    const ctx = await testContext();
    forceMatmulForms();
    limitMatmulFormBytesForTesting((MIN_BLOCK_ROWS - 1) * perRow(c) + 4);
    expect(matmulFormPlan(ctx, c)).toBeUndefined();
    const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 4));
    expect(labels).not.toContain(SCORE_KERNEL);
    expect(labels).not.toContain(SOFTMAX_KERNEL);
    expect(labels.some((l) => l.startsWith("attention backward dK/dV"))).toBe(true);
  });

  it("does not run unless forced or measured faster", async () => {
    const ctx = await testContext();
    const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 5));
    expect(labels).not.toContain(SCORE_KERNEL);
    expect(labels).not.toContain(SOFTMAX_KERNEL);
  });
});

describe("the attention forms measured per adapter", () => {
  const c: Case = { ...small, seqLen: 24, kvLen: 24 };

  it("runs the form measured for the problem's group, and notes a group not yet measured", async () => {
    const ctx = await testContext();
    const table = enableAttentionFormTuning(ctx);
    await runGpu(ctx, c, inputs(c, 1));
    expect(table.pendingProblems()).toEqual(
      (["forward", "backward"] as const).map((pass) => ({
        pass,
        dims: expect.objectContaining(c),
        hasKvStart: false,
      })),
    );
    // Each pass runs its own measured form.
    for (const [forward, backward] of [
      ["matmul", "tiled"],
      ["tiled", "matmul"],
    ] as const) {
      table.set({ key: attentionFormKey("forward", c), form: forward, candidates: [], rejected: [] });
      table.set({ key: attentionFormKey("backward", c), form: backward, candidates: [], rejected: [] });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 2));
      expect(labels.includes(SOFTMAX_KERNEL)).toBe(forward === "matmul");
      expect(labels.includes(SCORE_KERNEL)).toBe(backward === "matmul");
    }
    expect(table.pendingProblems()).toEqual([]);
  });

  it("times both forms on buffers of its own, keeps the fastest (the tiled kernels within the margin)", async () => {
    const ctx = await testContext();
    const dims: Case = { ...c, kvStart: [3] };
    enableAttentionFormTuning(ctx);
    await runGpu(ctx, dims, inputs(dims, 6));
    const { forms } = await tuneAttentionForms(ctx, undefined, { repeats: 1, rounds: 1 });
    expect(forms.map((entry) => entry.key)).toEqual([
      attentionFormKey("forward", dims),
      attentionFormKey("backward", dims),
    ]);
    for (const entry of forms) {
      expect(entry.candidates.map((t) => t.form).sort()).toEqual(["matmul", "tiled"]);
      const [fastest, slowest] = entry.candidates;
      expect(fastest!.ms).toBeLessThanOrEqual(slowest!.ms);
      const chosen = entry.candidates.find((t) => t.form === entry.form)!;
      expect(chosen.ms).toBeLessThanOrEqual(fastest!.ms * (1 + REPLACE_MARGIN));
      if (chosen !== fastest) expect(entry.form).toBe("tiled");
      expect(entry.rejected).toEqual([]); // both forms compute what the tiled kernels compute
    }
    expect(attentionForms(ctx)!.pendingProblems()).toEqual([]);
  });

  it("notes no problem whose dimensions are wrong: the pass stops at them first", async () => {
    const ctx = await testContext();
    const table = enableAttentionFormTuning(ctx);
    const bad = { ...c, seqLen: 0 };
    await expect(runGpu(ctx, bad, inputs(c, 1))).rejects.toThrow(/seqLen must be a positive integer, got 0/);
    expect(table.pendingProblems()).toEqual([]);
  });

  it("offers only the tiled kernels for a problem the matmul form cannot take", async () => {
    const ctx = await testContext();
    limitMatmulFormBytesForTesting(16);
    for (const pass of ["forward", "backward"] as const) {
      const problem = { pass, dims: c, hasKvStart: false };
      const { timed } = await timeAttentionForms(ctx, problem, { repeats: 1, rounds: 1 });
      expect(timed.map((t) => t.candidate)).toEqual(["tiled"]);
    }
  });

  it("is measured by a tuning pass, on the matmul form's own products measured first", async () => {
    const ctx = await testContext();
    attentionTuning.textures = false; // the tiled kernels' tiles are noted for tuning on any adapter
    onTestFinished(() => {
      attentionTuning.textures = true;
    });
    enableKernelTuning(ctx);
    await runGpu(ctx, c, inputs(c, 7));
    const pass = await tuneKernels(ctx, { repeats: 1, rounds: 1 });
    expect(pass.attentionForms.map((t) => t.key).sort()).toEqual(
      [attentionFormKey("backward", c), attentionFormKey("forward", c)].sort(),
    );
    // No step met a matmul here: every product measured is one of the matmul forms' (the scores, P·V,
    // the score gradients and dQ per KV head, dK and dV per query head; some share a group), all in the
    // same pass.
    expect(pass.matmul.length).toBeGreaterThanOrEqual(3);
    expect(matmulChoices(ctx)!.size).toBe(pass.matmul.length);
    expect(pendingKernelProblems(ctx)).toBe(0);
  });

  it("is saved and loaded with the other measurements, checked entry by entry", async () => {
    const ctx = await testContext();
    const table = enableAttentionFormTuning(ctx);
    const entry = {
      key: attentionFormKey("backward", c),
      form: "matmul" as const,
      candidates: [{ form: "matmul" as const, ms: 1 }],
      rejected: [],
    };
    table.set(entry);
    const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
    expect(saved.attentionForms).toEqual([entry]);
    disableAttentionFormTuning(ctx);
    expect(loadKernelTuning(ctx, saved, "tuning.json")).toBe(true);
    expect(attentionForms(ctx)!.entries()).toEqual([entry]);

    // A file written before attention had forms has none, and loads.
    disableKernelTuning(ctx);
    const { attentionForms: _, ...older } = saved;
    expect(loadKernelTuning(ctx, older, "old.json")).toBe(true);
    expect(attentionForms(ctx)!.entries()).toEqual([]);

    const damaged = (change: object) => ({ ...saved, attentionForms: [{ ...entry, ...change }] });
    expect(() => loadKernelTuning(ctx, damaged({ form: "flash" }), "tuning.json")).toThrow(
      /tuning\.json, attentionForms entry 0: form is "flash", not one of tiled, matmul/,
    );
    expect(() => loadKernelTuning(ctx, damaged({ candidates: [{ form: "tiled" }] }), "tuning.json")).toThrow(
      /candidates is not a list of \{form, ms\}/,
    );
    expect(() => loadKernelTuning(ctx, { ...saved, attentionForms: {} }, "tuning.json")).toThrow(
      /attentionForms is not an array/,
    );
  });
});
