import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { CheckpointParts } from "../src/index.js";

// A disk that fills up while the actor's weights are written.
vi.mock("@ragen/models/node", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@ragen/models/node")>()),
  saveQwen2: async (_model: unknown, _config: unknown, dir: string) => {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, "model.safetensors");
    writeFileSync(path, "half");
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", path });
  },
}));

const { findCheckpoint, saveCheckpoint } = await import("../src/node/checkpoint-files.js");

const root = mkdtempSync(join(tmpdir(), "checkpoint-full-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a checkpoint save that fails", () => {
  it("removes checkpoint.partial, keeps the old checkpoint and names the file and the cause", async () => {
    const outDir = join(root, "run");
    const old = join(outDir, "checkpoint");
    mkdirSync(join(old, "actor"), { recursive: true });
    writeFileSync(join(old, "actor", "config.json"), "{}");
    writeFileSync(join(old, "optimizers.safetensors"), Buffer.from([2, 0, 0, 0, 0, 0, 0, 0, 123, 125]));
    writeFileSync(join(old, "state.json"), JSON.stringify({ step: 1, trainResets: 1, model: "m" }));
    // A full fine-tune's actor (no LoRA adapters): its weights are the first file written.
    const parts = {
      actor: {},
      tokenizerFiles: { tokenizer: "{}" },
      optimizers: {},
    } as unknown as CheckpointParts;
    await expect(saveCheckpoint(outDir, parts, { step: 2, trainResets: 2, model: "m" })).rejects.toThrow(
      /saving the checkpoint failed: ENOSPC on .*checkpoint\.partial[/\\]actor[/\\]model\.safetensors/,
    );
    expect(existsSync(join(outDir, "checkpoint.partial"))).toBe(false);
    expect(readdirSync(outDir)).toEqual(["checkpoint"]);
    expect(findCheckpoint(outDir)?.state.step).toBe(1);
  });
});
