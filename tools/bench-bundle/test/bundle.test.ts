// The portable benchmark: built into a folder of its own, copied away from the workspace, and run with
// plain `node bench.mjs --quick` on this machine's adapter (lavapipe here), writing its JSON and markdown.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const here = import.meta.dirname;

interface Decoding {
  tokensPerSecond: number;
  dispatchesPerStep: number;
}
const work = mkdtempSync(join(tmpdir(), "ragen-bench-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function folderBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? folderBytes(path) : statSync(path).size;
  }
  return total;
}

describe("bench:bundle", () => {
  it("builds one small folder that runs with node alone and writes results.json and results.md", () => {
    const built = join(work, "built");
    execFileSync(process.execPath, [join(here, "..", "src", "build.mjs"), "--out", built], { stdio: "pipe" });
    for (const file of ["bench.mjs", "torch_kernels.py", "torch_models.py", "README.md"]) {
      expect(existsSync(join(built, file)), file).toBe(true);
    }
    expect(existsSync(join(built, "node_modules/webgpu/dist/linux-x64/dawn.node"))).toBe(true);
    expect(folderBytes(built)).toBeLessThan(40 * 2 ** 20);

    // Away from the workspace: nothing can resolve from the repository's node_modules.
    const moved = join(work, "elsewhere", "ragen-bench");
    cpSync(built, moved, { recursive: true });
    const out = join(work, "results");
    const log = execFileSync(
      process.execPath,
      [
        join(moved, "bench.mjs"),
        ...["--quick", "--profile", "--tune", "--tune-budget", "600", "--lora-rank", "2"],
        ...["--torch", "off", "--out", out],
      ],
      {
        cwd: work,
        encoding: "utf8",
        env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? "/tmp" },
      },
    );
    expect(log).toMatch(/adapter: /);
    const report = JSON.parse(readFileSync(join(out, "results.json"), "utf8")) as {
      adapter: { architecture: string; description: string };
      kernels: { name: string; msPerIteration: number; gflops?: number; skipped?: string }[];
      model: {
        trainTokensPerSecond: number[];
        decodeTokensPerSecond: number[];
        kernelProfile: Record<"train" | "decode", { label: string; ms: number; dispatches: number }[]>;
        tuned: {
          trainTokensPerSecond: number[];
          problems: number;
          choices: { key: string; candidates: number }[];
        };
        projections: Record<"separate", Decoding> & {
          lora: { rank: number } & Record<"merged" | "separate", Decoding>;
        };
      };
      tunedMatmuls: {
        label: string;
        dtype: string;
        candidates: { kernel: string; tflops: number }[];
        rejected: { kernel: string; reason: string }[];
      }[];
      latency: { syncMs: number };
      starpo: { seconds: Record<string, number>; trainedTrajectories: number };
      starpoTuned: { seconds: Record<string, number> };
    };
    const ran = report.kernels.filter((k) => !k.skipped);
    expect(ran.map((k) => k.name)).toEqual(
      expect.arrayContaining(["256^3 [auto]", "attention fwd qwen0.5b T=128 14/2x64 b=1"]),
    );
    for (const k of ran) expect(k.msPerIteration).toBeGreaterThan(0);
    expect(report.model.trainTokensPerSecond[0]).toBeGreaterThan(0);
    expect(report.model.decodeTokensPerSecond[0]).toBeGreaterThan(0);
    // Decoding with separate projections, and with LoRA adapters merged and not: the merged adapters
    // record fewer dispatches than separate adapter products.
    const { separate, lora } = report.model.projections;
    expect(separate.tokensPerSecond).toBeGreaterThan(0);
    expect(lora.rank).toBe(2);
    expect(lora.merged.dispatchesPerStep).toBeLessThan(lora.separate.dispatchesPerStep);
    // --profile: GPU time per kernel of a training step (matmul among them) and of one decoding step.
    const { train, decode } = report.model.kernelProfile;
    expect(train.some((k) => k.label.startsWith("matmul"))).toBe(true);
    for (const k of [...train, ...decode]) expect(k.ms).toBeGreaterThanOrEqual(0);
    expect(decode.reduce((n, k) => n + k.dispatches, 0)).toBeGreaterThan(10);
    expect(report.latency.syncMs).toBeGreaterThan(0);
    // --tune: every candidate kernel of the compared matmul shape, and the model again on tuned kernels.
    const tuned256 = report.tunedMatmuls.find((t) => t.label === "256^3" && t.dtype === "f32");
    expect(tuned256?.candidates.length).toBeGreaterThan(1);
    for (const c of tuned256!.candidates) expect(c.tflops).toBeGreaterThan(0);
    // Every kernel's product was checked against the reference kernel's; none is wrong here.
    expect(tuned256!.rejected).toEqual([]);
    expect(report.model.tuned.trainTokensPerSecond[0]).toBeGreaterThan(0);
    expect(report.model.tuned.problems).toBeGreaterThan(3);
    const keys = report.model.tuned.choices.map((c) => c.key);
    expect(new Set(keys.filter((k) => /^f(32|16) /.test(k)).map((k) => k.split(" ")[1]))).toEqual(
      new Set(["NT", "NN", "TN"]),
    );
    // Attention tiles belong to the tiled kernels (a software adapter runs the texture kernels, with none);
    // the forward's and backward's forms are measured on any adapter.
    const software = report.adapter.architecture === "software";
    const forms = ["forward-form", "backward-form"];
    expect(new Set(keys.filter((k) => !/^f(32|16) /.test(k)).map((k) => k.split(" ")[0]))).toEqual(
      new Set(software ? forms : ["forward", "dkdv", "dq", ...forms]),
    );
    if (software) expect(train.some((k) => k.label.startsWith("attention forward (texture"))).toBe(true);
    for (const phase of ["generate", "values", "update_critic", "update_actor", "step"]) {
      expect(report.starpo.seconds[phase], phase).toBeGreaterThan(0);
      expect(report.starpoTuned.seconds[phase], phase).toBeGreaterThan(0);
    }
    expect((report as { complete?: boolean }).complete).toBe(true);
    const markdown = readFileSync(join(out, "results.md"), "utf8");
    expect(markdown).not.toContain("partial");
    expect(markdown).toContain("| case | this engine | PyTorch | PyTorch mode | ratio |");
    expect(markdown).toContain("256^3 [auto]");
    expect(markdown).toMatch(/tiny forward\+backward 2x32, tuned kernels \| [0-9.]+ tokens\/s/);
    expect(markdown).toContain("## One StarPO step");
    expect(markdown).toMatch(
      /decode batch 2, 4 tokens, LoRA r=2 merged into stacked weights \(\d+ dispatches a step\) \| [0-9.]+ tokens\/s/,
    );
    expect(markdown).toContain("| phase | seconds | seconds, tuned kernels |");
  });

  it("stops at once, with one line naming it, on an unknown option, benchmark or a bad number", () => {
    const bench = join(work, "elsewhere", "ragen-bench", "bench.mjs");
    for (const [args, message] of [
      [["--frobnicate"], /Unknown option '--frobnicate'/],
      [["--only", "nope"], /--only nope: no such benchmark/],
      [["--tune-budget", "soon"], /--tune-budget must be a non-negative number, got "soon"/],
      [["--pool-gib", "lots"], /--pool-gib must be a non-negative number, got "lots"/],
      [["--dtype", "bf16"], /--dtype must be f32 or f16, got bf16/],
    ] as const) {
      const run = spawnSync(process.execPath, [bench, ...args], { cwd: work, encoding: "utf8" });
      expect(run.status, args.join(" ")).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
  });

  it("--dtype f16 measures the model and the StarPO step on f16 weights, labelled so", () => {
    const bench = join(work, "elsewhere", "ragen-bench", "bench.mjs");
    const out = join(work, "f16");
    execFileSync(
      process.execPath,
      [bench, "--quick", "--only", "model,starpo", "--dtype", "f16", "--torch", "off", "--out", out],
      { cwd: work, stdio: "pipe" },
    );
    const report = JSON.parse(readFileSync(join(out, "results.json"), "utf8"));
    expect(report.model.dtype).toBe("f16");
    expect(report.model.trainTokensPerSecond[0]).toBeGreaterThan(0);
    expect(report.starpo.trainedTrajectories).toBeGreaterThan(0);
    expect(report.starpo.dtype).toBe("f16");
    const markdown = readFileSync(join(out, "results.md"), "utf8");
    expect(markdown).toMatch(/tiny forward\+backward 2x32, f16 weights \| [0-9.]+ tokens\/s/);
    expect(markdown).toMatch(/## One StarPO step \(.*, f16 weights\)/);
  }, 300_000);

  it("--tuning-file: a second run takes the first's measurements; a damaged or foreign file is measured anew", () => {
    const bench = join(work, "elsewhere", "ragen-bench", "bench.mjs");
    const file = join(work, "tuning", "kernel-tuning.json");
    const run = () =>
      execFileSync(
        process.execPath,
        [bench, "--quick", "--only", "model", "--tune", "--torch", "off", "--tuning-file", file],
        { cwd: work, encoding: "utf8" },
      );
    const counted = (log: string, pattern: RegExp) => Number(log.match(pattern)?.[1]);

    const first = run();
    const kept = counted(first, /kept (\d+) measured kernel problems/);
    expect(kept).toBeGreaterThan(0);
    expect(first).toMatch(/tuned [1-9]\d* matmul/);
    const saved = JSON.parse(readFileSync(file, "utf8"));
    expect(saved.format).toBe("ragen-kernel-tuning/1");
    expect(saved.matmul.length + saved.attention.length + saved.attentionForms.length).toBe(kept);

    // Everything the model meets was measured: the second pass has nothing left to time.
    const second = run();
    expect(counted(second, /took the measurements of (\d+) kernel problems/)).toBe(kept);
    expect(second).toMatch(/tuned 0 matmul and 0 attention problems of the model/);

    writeFileSync(file, "{ not json");
    const damaged = run();
    expect(damaged).toContain("is not readable JSON");
    expect(damaged).toMatch(/tuned [1-9]\d* matmul/);
    expect(JSON.parse(readFileSync(file, "utf8")).format).toBe("ragen-kernel-tuning/1");

    writeFileSync(file, JSON.stringify({ ...saved, adapter: "another card" }));
    const foreign = run();
    expect(foreign).toContain("holds another adapter's measurements; measuring anew and replacing them");
    expect(foreign).toMatch(/tuned [1-9]\d* matmul/);
    expect(JSON.parse(readFileSync(file, "utf8")).adapter).toBe(saved.adapter);
  }, 300_000);

  it("keeps the finished parts of a run stopped before its end", async () => {
    const bench = join(work, "elsewhere", "ragen-bench", "bench.mjs");
    const out = join(work, "stopped");
    const run = spawn(
      process.execPath,
      [bench, "--quick", "--only", "matmul,model", "--match", "256^3", "--torch", "off", "--out", out],
      { cwd: work, stdio: "ignore" },
    );
    const exited = new Promise((resolve) => run.once("exit", resolve));
    // The kernels' report is written before the model is measured; stop the run as soon as it is there.
    const file = join(out, "results.json");
    while (!existsSync(file) && run.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    run.kill("SIGKILL");
    await exited;
    const report = JSON.parse(readFileSync(file, "utf8"));
    expect(report.complete).toBe(false);
    expect(report.kernels.some((k: { name: string }) => k.name === "256^3 [auto]")).toBe(true);
    expect(report.model).toBeUndefined();
    expect(readFileSync(join(out, "results.md"), "utf8")).toContain(
      "- partial: written before the run finished",
    );
  }, 300_000);
});
