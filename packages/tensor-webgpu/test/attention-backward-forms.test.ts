import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import type { GpuContext } from "../src/gpu/context.js";
import { timeBackwardForms, tuneBackwardForms } from "../src/kernels/attention/backward-form-tuning.js";
import {
  backwardFormKey,
  backwardForms,
  disableBackwardFormTuning,
  enableBackwardFormTuning,
} from "../src/kernels/attention/backward-forms.js";
import {
  limitMatmulFormBytesForTesting,
  MIN_BLOCK_ROWS,
  matmulFormPlan,
} from "../src/kernels/attention/backward-matmul.js";
import { attentionTuning } from "../src/kernels/attention/index.js";
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

// The matmul form's own correctness over the attention cases is in attention.test.ts; here: its chunks,
// when it steps aside, and how it is chosen.

const SCORE_KERNEL = "attention backward score gradients";

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
  attentionTuning.backward = "auto";
  limitMatmulFormBytesForTesting(undefined);
  disableKernelTuning(await testContext());
});

describe("the matmul form of attention backward", () => {
  // 3 sequences with left padding, so that each chunk must read its own sequences' kvStart and statistics.
  const c: Case = { ...small, batch: 3, seqLen: 21, kvLen: 21, kvStart: [0, 4, 17] };
  const perRow = (dims: Case) => dims.numHeads * dims.kvLen * 4; // bytes of one query row's scores
  const perSequence = perRow(c) * c.seqLen;

  for (const sequences of [1, 2]) {
    it(`takes the batch in chunks of ${sequences} sequence(s) whose score matrices fit its budget`, async () => {
      const ctx = await testContext();
      attentionTuning.backward = "matmul";
      limitMatmulFormBytesForTesting(sequences * perSequence + 4);
      expect(matmulFormPlan(ctx, c)).toEqual({ sequences, rows: c.seqLen });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 3));
      expect(labels.filter((l) => l === SCORE_KERNEL)).toHaveLength(Math.ceil(c.batch / sequences));
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
      attentionTuning.backward = "matmul";
      limitMatmulFormBytesForTesting(rows * perRow(dims) + 4);
      expect(matmulFormPlan(ctx, dims)).toEqual({ sequences: 1, rows });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(dims, name.length));
      const blocks = Math.ceil(dims.seqLen / rows);
      expect(labels.filter((l) => l === SCORE_KERNEL)).toHaveLength(dims.batch * blocks);
    });

  it("leaves to the tiled kernels a problem whose blocks would be too small", async () => {
    const ctx = await testContext();
    attentionTuning.backward = "matmul";
    limitMatmulFormBytesForTesting((MIN_BLOCK_ROWS - 1) * perRow(c) + 4);
    expect(matmulFormPlan(ctx, c)).toBeUndefined();
    const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 4));
    expect(labels).not.toContain(SCORE_KERNEL);
    expect(labels.some((l) => l.startsWith("attention backward dK/dV"))).toBe(true);
  });

  it("does not run unless forced or measured faster", async () => {
    const ctx = await testContext();
    const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 5));
    expect(labels).not.toContain(SCORE_KERNEL);
  });
});

describe("the backward form measured per adapter", () => {
  const c: Case = { ...small, seqLen: 24, kvLen: 24 };

  it("runs the form measured for the problem's group, and notes a group not yet measured", async () => {
    const ctx = await testContext();
    const table = enableBackwardFormTuning(ctx);
    await runGpu(ctx, c, inputs(c, 1));
    expect(table.pendingProblems()).toEqual([{ dims: expect.objectContaining(c), hasKvStart: false }]);
    for (const form of ["matmul", "tiled"] as const) {
      table.set({ key: backwardFormKey(c), form, candidates: [] });
      const labels = await dispatchesOf(ctx, () => checkAgainstReference(c, 2));
      expect(labels.includes(SCORE_KERNEL)).toBe(form === "matmul");
    }
    expect(table.pendingProblems()).toEqual([]);
  });

  it("times both forms on buffers of its own, keeps the fastest (the tiled kernels within the margin)", async () => {
    const ctx = await testContext();
    const dims: Case = { ...c, kvStart: [3] };
    enableBackwardFormTuning(ctx);
    await runGpu(ctx, dims, inputs(dims, 6));
    const {
      forms: [entry],
    } = await tuneBackwardForms(ctx, undefined, { repeats: 1, rounds: 1 });
    expect(entry!.key).toBe(backwardFormKey(dims));
    expect(entry!.candidates.map((t) => t.form).sort()).toEqual(["matmul", "tiled"]);
    const [fastest, slowest] = entry!.candidates;
    expect(fastest!.ms).toBeLessThanOrEqual(slowest!.ms);
    const chosen = entry!.candidates.find((t) => t.form === entry!.form)!;
    expect(chosen.ms).toBeLessThanOrEqual(fastest!.ms * (1 + REPLACE_MARGIN));
    if (chosen !== fastest) expect(entry!.form).toBe("tiled");
    expect(backwardForms(ctx)!.pendingProblems()).toEqual([]);
  });

  it("offers only the tiled kernels for a problem the matmul form cannot take", async () => {
    const ctx = await testContext();
    limitMatmulFormBytesForTesting(16);
    const { timed } = await timeBackwardForms(ctx, { dims: c, hasKvStart: false }, { repeats: 1, rounds: 1 });
    expect(timed.map((t) => t.candidate)).toEqual(["tiled"]);
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
    expect(pass.attentionBackward.map((t) => t.key)).toEqual([backwardFormKey(c)]);
    // No step met a matmul here: every product measured is one of the matmul form's (the scores, their
    // gradients and dQ per KV head, dK and dV per query head; some share a group), all in the same pass.
    expect(pass.matmul.length).toBeGreaterThanOrEqual(3);
    expect(matmulChoices(ctx)!.size).toBe(pass.matmul.length);
    expect(pendingKernelProblems(ctx)).toBe(0);
  });

  it("is saved and loaded with the other measurements, checked entry by entry", async () => {
    const ctx = await testContext();
    const table = enableBackwardFormTuning(ctx);
    const entry = {
      key: backwardFormKey(c),
      form: "matmul" as const,
      candidates: [{ form: "matmul" as const, ms: 1 }],
    };
    table.set(entry);
    const saved = JSON.parse(JSON.stringify(saveKernelTuning(ctx)));
    expect(saved.attentionBackward).toEqual([entry]);
    disableBackwardFormTuning(ctx);
    expect(loadKernelTuning(ctx, saved, "tuning.json")).toBe(true);
    expect(backwardForms(ctx)!.entries()).toEqual([entry]);

    // A file written before backward forms existed has none, and loads.
    disableKernelTuning(ctx);
    const { attentionBackward: _, ...older } = saved;
    expect(loadKernelTuning(ctx, older, "old.json")).toBe(true);
    expect(backwardForms(ctx)!.entries()).toEqual([]);

    const damaged = (change: object) => ({ ...saved, attentionBackward: [{ ...entry, ...change }] });
    expect(() => loadKernelTuning(ctx, damaged({ form: "flash" }), "tuning.json")).toThrow(
      /tuning\.json, attentionBackward entry 0: form is "flash", not one of tiled, matmul/,
    );
    expect(() => loadKernelTuning(ctx, damaged({ candidates: [{ form: "tiled" }] }), "tuning.json")).toThrow(
      /candidates is not a list of \{form, ms\}/,
    );
    expect(() => loadKernelTuning(ctx, { ...saved, attentionBackward: {} }, "tuning.json")).toThrow(
      /attentionBackward is not an array/,
    );
  });
});
