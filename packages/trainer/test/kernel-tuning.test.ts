import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  adapterKey,
  attentionTiles,
  attentionTuning,
  choiceName,
  KERNEL_TUNING_FORMAT,
  type KernelTuningFile,
  matmulChoices,
  webGpuBackend,
} from "@ragen/tensor-webgpu";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import {
  type KernelChoiceStore,
  KernelTuner,
  MemoryRunStorage,
  resolveSettings,
  SMOKE_RUN_SETTINGS,
} from "../src/index.js";
import { KernelChoiceFiles, ragenCacheDir } from "../src/node.js";
import { trainInMemory } from "./helpers/memory-policy.js";

const root = mkdtempSync(join(tmpdir(), "kernel-tuning-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A store in memory that records what it was given. */
class MemoryChoices implements KernelChoiceStore {
  readonly tables = new Map<string, KernelTuningFile>();
  load(adapter: string) {
    return this.tables.get(adapter);
  }
  save(adapter: string, table: KernelTuningFile) {
    this.tables.set(adapter, structuredClone(table));
  }
  describe() {
    return "memory";
  }
}

describe("kernel tuning in a run", () => {
  it("measures the problems the first steps met before the next, keeps them, and starts the next run tuned", async () => {
    // The tiled attention kernels, whose tiles are measured (software adapters run texture kernels).
    attentionTuning.textures = false;
    onTestFinished(() => {
      attentionTuning.textures = true;
    });
    const store = new MemoryChoices();
    const said: string[] = [];
    const storage = new MemoryRunStorage("tuned");
    const { settings, sources } = await resolveSettings({
      overrides: [...SMOKE_RUN_SETTINGS, "envs=Bandit", "model=tiny", "steps=2", "kernelTuning=on"],
      parameterCount: 1e5,
    });
    await trainInMemory({ settings, sources }, storage, { kernelChoices: store, say: (l) => said.push(l) });
    // The validation at step 0 met the decoding problems, timed before step 1; step 1 met the training
    // ones (forward and backward), timed before step 2.
    expect(storage.rows[1]!.metrics["timing_s/kernel_tuning"]).toBeGreaterThan(0);
    expect(storage.rows[2]!.metrics["timing_s/kernel_tuning"]).toBeGreaterThan(0);
    const [adapter, file] = [...store.tables.entries()][0]!;
    expect(file.format).toBe(KERNEL_TUNING_FORMAT);
    expect(file.adapter).toBe(adapter);
    expect(file.matmul.length).toBeGreaterThan(3);
    // Forward (x · Wᵀ), input gradient and weight gradient layouts were all met.
    expect(new Set(file.matmul.map((e) => e.key.split(" ")[1]))).toEqual(new Set(["NT", "NN", "TN"]));
    for (const entry of file.matmul) {
      expect(entry.candidates.length).toBeGreaterThan(1);
      // The fastest, or the fixed rule's kernel within the margin of it.
      const chosen = entry.candidates.find((c) => c.kernel === choiceName(entry.choice))!;
      expect(chosen.ms).toBeLessThanOrEqual(entry.candidates[0]!.ms * 1.05);
    }
    // The update's attention: forward, dK/dV and dQ.
    expect(new Set(file.attention.map((e) => e.key.split(" ")[0]))).toEqual(
      new Set(["forward", "dkdv", "dq"]),
    );
    // Each attention forward (the prefills' too) and backward, timed whole in both forms.
    expect(new Set(file.attentionForms!.map((e) => e.key.split(" ")[0]))).toEqual(
      new Set(["forward-form", "backward-form"]),
    );
    for (const entry of file.attentionForms!)
      expect(entry.candidates.map((c) => c.form).sort()).toEqual(["matmul", "tiled"]);
    expect(said.some((l) => /kernel tuning: measured \d+ matmul and \d+ attention problems/.test(l))).toBe(
      true,
    );

    // The next run takes the kept table and has nothing left to measure.
    const again: string[] = [];
    const second = new MemoryRunStorage("second");
    const oneStep = { ...settings, steps: 1 };
    await trainInMemory({ settings: oneStep, sources }, second, {
      kernelChoices: store,
      say: (l) => again.push(l),
    });
    const measured = file.matmul.length + file.attention.length + (file.attentionForms?.length ?? 0);
    expect(again.some((l) => l.includes(`${measured} measured kernel problems from memory`))).toBe(true);
    expect(second.rows.some((r) => r.metrics["timing_s/kernel_tuning"] !== undefined)).toBe(false);
  });

  it("with a budget, measures the largest problems first and leaves the rest to the next passes", async () => {
    const backend = await webGpuBackend();
    const said: string[] = [];
    // A budget that runs out during the first problem: one problem a pass.
    const tuner = KernelTuner.forRun("on", backend, undefined, (l) => said.push(l), { budgetSeconds: 1e-6 })!;
    const shape = { batch: 1, k: 8, transA: false, transB: false, dtype: "f32" } as const;
    matmulChoices(backend.ctx)!.lookup({ ...shape, m: 8, n: 8 });
    matmulChoices(backend.ctx)!.lookup({ ...shape, m: 64, n: 64 });
    expect(await tuner.tunePending()).toMatchObject({ problems: 1 });
    expect(said.at(-1)).toMatch(
      /measured 1 matmul and 0 attention problems in .* s \(1 more before the next steps\)/,
    );
    expect(
      matmulChoices(backend.ctx)!
        .entries()
        .map((e) => e.key),
    ).toEqual(["f32 NN 1x64x64x8"]);
    expect(await tuner.tunePending()).toMatchObject({ problems: 1 });
    expect(said.at(-1)).not.toMatch(/more before the next steps/);
    expect(await tuner.tunePending()).toBeUndefined(); // nothing left
  });

  it("goes on when the measurements cannot be kept, or tuning itself fails", async () => {
    const backend = await webGpuBackend();
    const said: string[] = [];
    const readOnly: KernelChoiceStore = {
      load: () => undefined,
      save: () => {
        throw new Error("EROFS: read-only file system");
      },
      describe: () => "/ro/kernel-tuning.json",
    };
    const tuner = KernelTuner.forRun("on", backend, readOnly, (l) => said.push(l))!;
    matmulChoices(backend.ctx)!.lookup({
      batch: 1,
      m: 8,
      n: 8,
      k: 8,
      transA: false,
      transB: false,
      dtype: "f32",
    });
    expect(await tuner.tunePending()).toMatchObject({ problems: 1 });
    expect(said.at(-1)).toMatch(
      /measured 1 matmul and 0 attention problems .*\(not kept: EROFS: read-only file system\)/,
    );

    // A pass that fails (a driver error, a lost candidate): the run goes on untuned, and stops tuning.
    const failing = KernelTuner.forRun(
      "on",
      backend,
      readOnly,
      (l) => said.push(l),
      {},
      async () => {
        throw new Error("no kernel could run f32 NN 1x8x8x8 on this adapter");
      },
    )!;
    matmulChoices(backend.ctx)!.lookup({
      batch: 1,
      m: 9,
      n: 300,
      k: 8,
      transA: false,
      transB: false,
      dtype: "f32",
    });
    expect(await failing.tunePending()).toBeUndefined();
    expect(said.at(-1)).toMatch(/kernel tuning failed \(.*\); the run goes on with the fixed kernel rule/);
    expect(matmulChoices(backend.ctx)).toBeUndefined();
    expect(await failing.tunePending()).toBeUndefined();
  });

  it("says which kernels tuning left out because they computed wrongly", async () => {
    const backend = await webGpuBackend();
    const said: string[] = [];
    const shape = { batch: 1, m: 8, n: 8, k: 8, transA: false, transB: true, dtype: "f32" } as const;
    const tuner = KernelTuner.forRun(
      "on",
      backend,
      undefined,
      (l) => said.push(l),
      {},
      async () => ({
        matmul: [
          {
            key: "f32 NT 1x8x8x8",
            shape,
            choice: { variant: "buffer" },
            candidates: [{ kernel: "buffer", ms: 0.1 }],
            rejected: [{ kernel: "tiled", reason: "wrong product: element 0 is 12345" }],
          },
        ],
        attention: [],
        attentionForms: [],
        pending: 0,
      }),
    )!;
    matmulChoices(backend.ctx)!.lookup(shape);
    expect(await tuner.tunePending()).toMatchObject({ problems: 1 });
    expect(said.at(-1)).toBe(
      "kernel tuning left out 1 kernel that failed or computed wrongly on this adapter, e.g. tiled on f32 NT 1x8x8x8: wrong product: element 0 is 12345",
    );
  });

  it("does not tune on a software adapter unless asked, and turns a context's tuning off again", async () => {
    const backend = await webGpuBackend();
    const store = new MemoryChoices();
    const said: string[] = [];
    expect(KernelTuner.forRun("on", backend, store, (l) => said.push(l))).toBeDefined();
    expect(matmulChoices(backend.ctx)).toBeDefined();
    const auto = KernelTuner.forRun("auto", backend, store, () => {});
    expect(auto === undefined).toBe(backend.ctx.info.adapter.isSoftware);
    expect(KernelTuner.forRun("off", backend, store, () => {})).toBeUndefined();
    expect(matmulChoices(backend.ctx)).toBeUndefined();
    expect(attentionTiles(backend.ctx)).toBeUndefined();
  });

  it("keeps one file per adapter, and measures again after a damaged one", async () => {
    const files = new KernelChoiceFiles(join(root, "cache"));
    const backend = await webGpuBackend();
    const table: KernelTuningFile = {
      format: KERNEL_TUNING_FORMAT,
      adapter: "GPU | x",
      matmul: [],
      attention: [],
    };
    files.save("GPU | x", table);
    expect(files.load("GPU | x")).toEqual(table);
    expect(files.load("GPU | y")).toBeUndefined();
    expect(files.describe("GPU | x")).not.toBe(files.describe("GPU | y"));

    const said: string[] = [];
    const damaged = new KernelChoiceFiles(join(root, "damaged"));
    const tuner = KernelTuner.forRun("on", backend, damaged, (l) => said.push(l));
    damaged.save("unused", table); // creates the folder
    const adapterFile = damaged.describe(adapterKey(backend.ctx));
    writeFileSync(adapterFile, "{ not json");
    KernelTuner.forRun("on", backend, damaged, (l) => said.push(l));
    expect(tuner).toBeDefined();
    expect(said.join("\n")).toMatch(/is not JSON .*; its problems will be measured again/);
    writeFileSync(adapterFile, JSON.stringify({ ...table, adapter: adapterKey(backend.ctx), format: "v0" }));
    KernelTuner.forRun("on", backend, damaged, (l) => said.push(l));
    expect(said.join("\n")).toMatch(/format is "v0"/);
  });

  it("finds the cache folder from the environment", () => {
    expect(ragenCacheDir({ RAGEN_CACHE_DIR: "/c" })).toBe("/c");
    expect(ragenCacheDir({ XDG_CACHE_HOME: "/x" })).toBe(join("/x", "ragen"));
    expect(ragenCacheDir({})).toMatch(/\.cache[/\\]ragen$/);
  });
});
