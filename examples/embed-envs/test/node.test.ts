import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { createEnv, oracleAction, runEpisode } from "@ragen/envs";
import { describe, expect, it } from "vitest";
import { HAND_STEPS, handSteppedEpisode, parseNodeDemoArgs } from "../src/node.js";
import { formatSuccessTable, successTable } from "../src/play.js";

const ROOT = join(import.meta.dirname, "..");

describe("playing presets from Node", () => {
  it("the oracle solves deterministic FrozenLake and Sokoban; a random policy mostly does not", () => {
    const rows = successTable(["FrozenLakeDeterministic", "SimpleSokoban", "Bandit"], 20);
    const byPreset = Object.fromEntries(rows.map((r) => [r.preset, r]));
    expect(byPreset.FrozenLakeDeterministic!.oracle.successRate).toBe(1);
    expect(byPreset.SimpleSokoban!.oracle.successRate).toBe(1);
    expect(byPreset.SimpleSokoban!.random.successRate).toBeLessThan(0.6);
    expect(byPreset.Bandit).toMatchObject({ env: "bandit", maxActions: 1, seeds: 20 });
    expect(byPreset.Bandit!.oracle.successRate).toBe(1);

    const table = formatSuccessTable(rows).split("\n");
    expect(table[0]).toMatch(
      /^preset\s+env\s+budget\s+seeds\s+oracle\s+oracle reward\s+random\s+random reward$/,
    );
    expect(table[2]).toMatch(/^FrozenLakeDeterministic\s+frozenlake\s+10\s+20\s+100\.0%\s+1\.000\s/);
    expect(table).toHaveLength(5);
  });

  it("an episode replays exactly from its seed and stops at the action budget", () => {
    const env = createEnv("FrozenLake");
    const first = runEpisode(env, 7, (e, rng) => oracleAction(e, rng), 10);
    const again = runEpisode(env, 7, (e, rng) => oracleAction(e, rng), 10);
    expect(again).toEqual(first);
    const capped = runEpisode(createEnv("SimpleSokoban"), 0, () => "Left", 3);
    expect(capped).toMatchObject({ actions: 3, success: false });
  });

  it("names the known presets when given an unknown one", () => {
    expect(() => successTable(["FrozenLak"], 1)).toThrow(/unknown preset "FrozenLak".*FrozenLake, /);
  });

  it("steps SimpleSokoban by hand to a solve, showing the invalid typo", () => {
    const text = handSteppedEpisode();
    const steps = text.split("\n> ").slice(1);
    expect(steps).toHaveLength(HAND_STEPS.length);
    expect(steps[0]).toMatch(/^Left: reward -0\.1, valid true, effective false/);
    expect(steps[1]).toMatch(/^jump: reward 0\.0, valid false/);
    expect(steps[3]).toMatch(/^Up: reward 10\.9, valid true, effective true, done true, success true/);
    expect(steps[3]).toContain("###√_#");
  });

  it("parses its flags and rejects bad ones", () => {
    expect(parseNodeDemoArgs(["--seeds", "5", "--presets", "Bandit, Countdown"])).toEqual({
      seeds: 5,
      presets: ["Bandit", "Countdown"],
    });
    expect(parseNodeDemoArgs([]).presets).toContain("WebShop");
    expect(() => parseNodeDemoArgs(["--seeds", "0"])).toThrow(/--seeds must be a positive integer/);
    expect(() => parseNodeDemoArgs(["--seed", "5"])).toThrow(/--seed/);
  });

  it("runs as a script", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "src/node.ts", "--seeds", "3", "--presets", "Countdown"],
      { cwd: ROOT },
    );
    expect(stdout).toContain("Oracle and random policy on seeds 0..2");
    expect(stdout).toMatch(/Countdown\s+countdown\s+1\s+3\s+100\.0%/);
    expect(stdout).toContain("SimpleSokoban, seed 0 (Up, Down, Left, Right):");
  });
});
