import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";

const packageRoot = join(import.meta.dirname, "..");
const root = mkdtempSync(join(tmpdir(), "checkpoint-memory-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface SaveMeasurement {
  residentBefore: number;
  residentPeak: number;
  parameterBytes: number;
  seconds: number;
}

/**
 * Saves a large checkpoint in a fresh Node process with a small JavaScript heap, so nothing else this
 * test runner holds blurs the measurement; the child's workspace imports resolve from this package.
 */
async function saveInChild(outDir: string): Promise<SaveMeasurement> {
  const bundle = await build({
    entryPoints: [join(import.meta.dirname, "helpers", "save-large-checkpoint.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    write: false,
    logLevel: "silent",
  });
  const child = spawnSync(
    process.execPath,
    ["--max-old-space-size=256", "--expose-gc", "--input-type=module", "-", outDir],
    { cwd: packageRoot, input: bundle.outputFiles[0]!.text, encoding: "utf8", timeout: 120_000 },
  );
  if (child.status !== 0) throw new Error(`the saving process failed (${child.status}): ${child.stderr}`);
  const line = child.stdout.trim().split("\n").at(-1)!;
  return JSON.parse(line) as SaveMeasurement;
}

// The high-water mark of resident memory that this test reads is Linux's (/proc/self/status).
describe.skipIf(process.platform !== "linux")("saving a checkpoint", () => {
  it("keeps memory to about a tensor at a time, far below the checkpoint's size", async () => {
    const outDir = join(root, "run");
    const measured = await saveInChild(outDir);
    const risen = measured.residentPeak - measured.residentBefore;
    const checkpoint = join(outDir, "checkpoint");
    const checkpointBytes = ["actor/model.safetensors", "critic.safetensors", "optimizers.safetensors"]
      .map((file) => statSync(join(checkpoint, file)).size)
      .reduce((a, b) => a + b, 0);
    console.log(
      `checkpoint ${(checkpointBytes / 2 ** 20).toFixed(0)} MiB saved in ${measured.seconds.toFixed(1)} s; ` +
        `resident memory rose ${(risen / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(existsSync(join(checkpoint, "state.json"))).toBe(true);
    // Actor, critic and two moments of each: six times one model's weights.
    expect(checkpointBytes).toBeGreaterThan(6 * measured.parameterBytes);
    // Reading all moments, then building the whole file, holds the moments twice (eight models' worth,
    // 543 MiB measured); streaming holds a tensor or two of at most 3 MiB (11 MiB measured). Less than one
    // model's weights leaves room for the runtime's noise.
    expect(risen).toBeLessThan(measured.parameterBytes);
  });
});
