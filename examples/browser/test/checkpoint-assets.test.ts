import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkpointAssets } from "../build/checkpoint-assets.js";
import { AGENT_CHECKPOINTS, type AgentCheckpoint, CHECKPOINT_FILES } from "../src/checkpoints.js";

const ROOT = join(import.meta.dirname, "..");

interface EmittedAsset {
  fileName: string;
  source: Uint8Array;
}

/** Runs the plugin's build hooks with a stand-in for Rollup's plugin context. */
function runBuildHooks(checkpoints: readonly AgentCheckpoint[]): EmittedAsset[] {
  const plugin = checkpointAssets(ROOT, checkpoints);
  const emitted: EmittedAsset[] = [];
  const context = {
    error: (message: string) => {
      throw new Error(message);
    },
    emitFile: (asset: EmittedAsset) => {
      emitted.push(asset);
      return asset.fileName;
    },
  };
  // The plugin defines both hooks as plain functions; only these two context methods are used.
  type Hook = (this: typeof context) => void;
  (plugin.buildStart as unknown as Hook).call(context);
  (plugin.generateBundle as unknown as Hook).call(context);
  return emitted;
}

describe("checkpointAssets (the Vite plugin)", () => {
  it("emits every file of every checkpoint under models/<folder>/, byte for byte", () => {
    const checkpoints = Object.values(AGENT_CHECKPOINTS);
    const emitted = runBuildHooks(checkpoints);
    expect(emitted.map((asset) => asset.fileName).sort()).toEqual(
      checkpoints.flatMap((c) => CHECKPOINT_FILES.map((name) => `models/${c.folder}/${name}`)).sort(),
    );
    const config = emitted.find((asset) => asset.fileName === "models/frozenlake/config.json")!;
    expect(Buffer.from(config.source)).toEqual(
      readFileSync(join(ROOT, "../../packages/trainer/embedded-model/config.json")),
    );
  });

  it("stops the build naming the missing folder's files", () => {
    const missing = { ...AGENT_CHECKPOINTS.frozenlake!, folder: "gone", source: "../no-such-example/model" };
    expect(() => runBuildHooks([missing])).toThrow(
      /checkpoint files missing.*no-such-example\/model\/config\.json/,
    );
  });
});
