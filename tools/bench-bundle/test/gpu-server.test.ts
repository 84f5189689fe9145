// The folder for GPU servers without Node or a Vulkan loader: packed with the kernel tests, then run.sh
// runs the benchmark, a test file and a suite of parts on this machine's adapter, with its own Node
// binary, and with the carried loader and glvnd libraries when the server has none (played here by
// hiding ldconfig, by which run.sh looks).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const here = import.meta.dirname;
const work = mkdtempSync(join(tmpdir(), "ragen-gpu-server-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const packed = join(work, "packed");
/** PATH without the folders that hold ldconfig: run.sh then takes the server for one without a loader. */
const noLoaderPath = "/usr/bin:/bin";

function runSh(args: string[], env: Record<string, string> = {}) {
  return spawnSync(join(packed, "run.sh"), args, {
    cwd: work,
    encoding: "utf8",
    env: { ...process.env, RAGEN_GPU_SERVER_WORK: join(work, "server"), ...env },
  });
}

describe("bench:gpu-server", () => {
  it("packs Node, the benchmark, the loader and the kernel tests, and runs them from run.sh", () => {
    execFileSync("bash", [join(here, "..", "src", "pack-gpu-server.sh"), "--with-tests", packed], {
      stdio: "pipe",
      env: { ...process.env, XZ_OPT: "-0" },
    });
    for (const file of ["run.sh", "node.xz", "bench.tar.xz", "tensor-tests.tar.xz"])
      expect(existsSync(join(packed, file)), file).toBe(true);
    const debs = readdirSync(join(packed, "vulkan")).filter((f) => f.endsWith(".deb"));

    const bench = runSh([
      "bench",
      "--quick",
      "--only",
      "matmul",
      "--match",
      "256^3",
      "--torch",
      "off",
      "--out",
      "r1",
    ]);
    expect(bench.status, bench.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(work, "r1", "results.json"), "utf8"));
    expect(existsSync(join(work, "server", "node"))).toBe(true); // its own Node binary, unpacked
    expect(
      report.kernels.some(
        (k: { name: string; gflops?: number }) => k.name === "256^3 [auto]" && k.gflops! > 0,
      ),
    ).toBe(true);

    // Without a loader on the server: the carried one (where this machine could download it).
    if (debs.length > 0) {
      const carried = runSh(
        ["bench", "--quick", "--only", "matmul", "--match", "256^3", "--torch", "off", "--out", "r2"],
        { PATH: noLoaderPath },
      );
      expect(carried.status, carried.stderr).toBe(0);
      // The loader and glvnd's dispatch library, which NVIDIA's Vulkan driver needs.
      for (const library of ["libvulkan.so.1", "libGLdispatch.so.0"])
        expect(
          existsSync(join(work, "server", "vulkan", "usr", "lib", "x86_64-linux-gnu", library)),
          library,
        ).toBe(true);
      expect(existsSync(join(work, "r2", "results.json"))).toBe(true);
    }

    const tests = runSh(["tests", "test/half-float.test.ts"], { NO_COLOR: "1" });
    expect(tests.status, tests.stdout + tests.stderr).toBe(0);
    expect(tests.stdout).toMatch(/Tests\s+\d+ passed/);

    const wrong = runSh(["nope"]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('unknown mode "nope" (bench, tests or suite)');
  }, 600_000);

  it("runs a suite's parts in order, each under its limit, none past the suite's time", () => {
    expect(existsSync(join(packed, "suite.plan"))).toBe(true);
    const plan = join(work, "small.plan");
    writeFileSync(
      plan,
      [
        "# name  seconds  command",
        "kernels  60  bench --quick --only matmul --match 256^3 --torch off",
        "",
        // 100,000 training steps of the tiny model: stopped at its 8 s limit.
        "slow     8   bench --only model --model tiny --steps 100000 --torch off",
        "late     60  bench --quick --only matmul --match 256^3 --torch off",
      ].join("\n"),
    );
    const suite = runSh(["suite", "--within", "25", "--out", "suite", "--plan", plan]);
    // A part that did not finish fails the suite.
    expect(suite.status, suite.stderr).toBe(1);
    const kernels = JSON.parse(readFileSync(join(work, "suite", "kernels", "results.json"), "utf8"));
    expect(kernels.kernels.length).toBeGreaterThan(0);
    expect(readFileSync(join(work, "suite", "kernels", "output.log"), "utf8")).toContain("results.json");
    const table = readFileSync(join(work, "suite", "suite.md"), "utf8");
    expect(table).toMatch(/\| kernels \| done \| \d+ \| 25 \|/);
    expect(table).toMatch(/\| slow \| stopped at its time limit \(what it finished is kept\) \| \d+ \| 8 \|/);
    expect(table).toMatch(/\| late \| not started: the suite's time was spent \|/);
    // Bench parts share one tuning file, in the suite's folder.
    expect(suite.stderr).toContain(`--tuning-file ${join(work, "suite", "kernel-tuning.json")}`);

    writeFileSync(plan, "kernels sixty bench --quick\n");
    const bad = runSh(["suite", "--plan", plan]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("line 1: expected a name, a number of seconds and a bench or tests command");
    const badWithin = runSh(["suite", "--within", "soon"]);
    expect(badWithin.status).toBe(2);
    expect(badWithin.stderr).toContain('--within must be a whole number of seconds (got "soon")');
  }, 300_000);
});
