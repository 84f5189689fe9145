import { readFileSync } from "node:fs";
import { PassThrough, Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { listEnvironments } from "../src/commands/envs.js";
import { runRagen } from "../src/commands/main.js";
import { playCommand } from "../src/commands/play.js";

let logs: MockInstance;
let errors: MockInstance;
beforeEach(() => {
  logs = vi.spyOn(console, "log").mockImplementation(() => {});
  errors = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => {
  logs.mockRestore();
  errors.mockRestore();
});
const printed = (spy: MockInstance) => spy.mock.calls.map((call) => String(call[0])).join("\n");

describe("ragen", () => {
  it("prints its version, and usage with every command", async () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    expect(await runRagen(["--version"])).toBe(0);
    expect(printed(logs)).toBe(manifest.version);
    expect(await runRagen(["--help"])).toBe(0);
    for (const command of ["train", "eval", "sft", "play", "envs"])
      expect(printed(logs)).toContain(`  ${command} `);
  });

  it("exits with 2 and says why on an unknown command, no command, or bad arguments", async () => {
    expect(await runRagen(["trian"])).toBe(2);
    expect(printed(errors)).toMatch(/unknown command "trian"/);
    expect(await runRagen([])).toBe(2);
    expect(await runRagen(["train", "--steps", "3"])).toBe(2);
    expect(printed(errors)).toMatch(/unknown option --steps/);
    expect(await runRagen(["train", "no-such-file.yaml"])).toBe(2);
    expect(printed(errors)).toMatch(/no-such-file\.yaml: no such config file/);
    expect(await runRagen(["train", "rollout.maxTurns=0"])).toBe(2);
    expect(printed(errors)).toMatch(/rollout\.maxTurns: must be >= 1/);
    expect(await runRagen(["eval"])).toBe(2);
    expect(await runRagen(["sft", "distil"])).toBe(2);
    expect(printed(errors)).toMatch(/unknown action "distil"/);
    expect(await runRagen(["play"])).toBe(2);
    expect(await runRagen(["play", "Chess"])).toBe(2);
    expect(await runRagen(["envs", "--seeds", "0", "--budgets"])).toBe(2);
  });

  it("lists every config field with its default in train --help", async () => {
    expect(await runRagen(["train", "--help"])).toBe(0);
    expect(printed(logs)).toMatch(
      /starpo\.actorLr\s+0\.000001\s+Actor learning rate .*; models under 50M parameters: 0\.00025\]/,
    );
    expect(printed(logs)).toMatch(/^ {2}ragen +RAGEN's base config/m);
    expect(printed(logs)).toMatch(/^ {2}auto +embedded for models under 50M parameters/m);
    expect(printed(logs)).toMatch(/train\.envGroups\s+8\s/);
    const out = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      expect(await runRagen(["train", "--print-config", "steps=3", "profile=ragen"])).toBe(0);
      const text = out.mock.calls.map((call) => String(call[0])).join("");
      expect(text).toMatch(/^steps: 3 # command line$/m);
      expect(text).toMatch(/^ {2}groupSize: 16 # profile ragen$/m);
    } finally {
      out.mockRestore();
    }
    expect(await runRagen(["sft", "train", "--help"])).toBe(0);
    expect(printed(logs)).toMatch(/lora\.rank\s+8\s/);
  });
});

describe("ragen envs", () => {
  it("lists envs and presets, with oracle and random success when asked", async () => {
    const plain = listEnvironments();
    expect(plain.envs.map((e) => e.name)).toEqual(
      expect.arrayContaining(["frozenlake", "bandit", "sokoban"]),
    );
    expect(plain.presets.find((p) => p.tag === "FrozenLake")).toMatchObject({
      env: "frozenlake",
      budget: 10,
    });
    expect(plain.presets[0]!.oracle).toBeUndefined();
    const bandit = listEnvironments(20).presets.find((p) => p.tag === "Bandit")!;
    expect(bandit.oracle).toBe(1);
    expect(bandit.random).toBeGreaterThan(0);
    expect(bandit.random).toBeLessThan(1);
    expect(await runRagen(["envs"])).toBe(0);
    expect(printed(logs)).toMatch(/SimpleSokoban\s+sokoban\s+10\s/);
  });
});

describe("ragen play", () => {
  it("plays an env from typed lines: an action by number, the oracle's hint, quit", async () => {
    const output = new PassThrough();
    let text = "";
    output.on("data", (chunk) => {
      text += String(chunk);
    });
    await playCommand(["Bandit", "--seed", "3"], { input: Readable.from(["?\n", "1\n", "q\n"]), output });
    expect(text).toContain("Bandit — seed 3");
    expect(text).toMatch(/oracle suggests: \w+/);
    expect(text).toMatch(/reward [\d.]+ {2}\(total [\d.]+ in 1 steps\)/);
    expect(text).toMatch(/Solved! |Episode over\. /);
  });
});
