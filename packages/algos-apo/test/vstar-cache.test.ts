import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PolicyOutput, PolicyPrompt, PolicySampling } from "@ragen/rollout";
import { afterAll, describe, expect, it } from "vitest";
import { canonicalJson, parseVStarEntry, type VStarEntry, vstarKeyId } from "../src/cache.js";
import { VStarFileCache } from "../src/node/vstar-cache.js";
import { estimateVStarForStates, type VStarEstimationOptions } from "../src/stage1.js";
import { ArmPolicy, banditTokenizer } from "./fixtures.js";

const root = mkdtempSync(join(tmpdir(), "vstar-cache-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const tokenizer = banditTokenizer();
const policy = () => new ArmPolicy(tokenizer, (p) => (p % 2 === 0 ? "Dragon" : "Phoenix"));

const options = (
  cache: VStarFileCache,
  p: ArmPolicy,
  extra: Partial<VStarEstimationOptions> = {},
): VStarEstimationOptions => ({
  policy: p,
  tokenizer,
  envs: { envGroups: 2, tags: [{ tag: "Bandit", nGroups: 2 }] },
  resets: 3,
  referenceModel: "reference-a",
  samples: 4,
  rollout: { maxTurns: 1, maxNewTokens: 32 },
  cache,
  ...extra,
});

const entry = (seed: number): VStarEntry => ({
  tag: "Bandit",
  envConfig: "{}",
  rollout: "{}",
  seed,
  referenceModel: "m",
  samples: 2,
  beta1: 0.5,
  rewards: [1, 0],
  vstar: 0.5,
  pass: true,
  allZero: false,
});

describe("VStarFileCache", () => {
  it("keeps entries across runs: a second stage 1 samples nothing, a new reference model everything", async () => {
    const path = join(root, "reuse", "vstar.jsonl");
    const first = VStarFileCache.open(path);
    const firstRun = await estimateVStarForStates(options(first, policy()));
    first.close();
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(6);

    const reopened = VStarFileCache.open(path);
    const again = policy();
    const secondRun = await estimateVStarForStates(options(reopened, again));
    expect(again.prompts).toBe(0);
    expect([...secondRun.entries.values()]).toEqual([...firstRun.entries.values()]);

    const other = policy();
    await estimateVStarForStates(options(reopened, other, { referenceModel: "reference-b" }));
    expect(other.prompts).toBe(3 * 2 * 4);
    // Both models' entries live in the file; neither is served for the other.
    expect(reopened.size).toBe(12);
    reopened.close();
  });

  it("resumes a killed stage 1 after the last whole line, ignoring a torn one", async () => {
    const path = join(root, "resume.jsonl");
    const cache = VStarFileCache.open(path);
    // The policy dies on the second reset's rollout, as a killed process would.
    const dying = policy();
    const generate = dying.generate.bind(dying);
    dying.generate = async (
      prompts: readonly PolicyPrompt[],
      sampling: PolicySampling,
    ): Promise<PolicyOutput[]> => {
      if (dying.calls >= 1) throw new Error("killed");
      return generate(prompts, sampling);
    };
    await expect(estimateVStarForStates(options(cache, dying))).rejects.toThrow("killed");
    cache.close();
    appendFileSync(path, '{"tag":"Bandit","envConfig":"{\\"env\\"');

    const resumed = VStarFileCache.open(path);
    expect(resumed.size).toBe(2);
    const rest = policy();
    const result = await estimateVStarForStates(options(resumed, rest));
    resumed.close();
    expect(rest.prompts).toBe(2 * 2 * 4);
    expect(result.metrics["vstar/sampled_states"]).toBe(4);
    expect(result.entries.size).toBe(6);
    const lines = readFileSync(path, "utf8").split("\n");
    expect(lines.at(-1)).toBe("");
    expect(lines.slice(0, -1).map((line) => JSON.parse(line).seed)).toEqual([
      10000, 10001, 10002, 10003, 10004, 10005,
    ]);
  });

  it("skips lines that are not entries and lets a later line for the same key win", () => {
    const path = join(root, "mixed.jsonl");
    const cache = VStarFileCache.open(path);
    cache.put(entry(1));
    cache.close();
    appendFileSync(path, `not json\n${JSON.stringify({ ...entry(2), rewards: [1] })}\n`);
    appendFileSync(path, `${JSON.stringify({ ...entry(1), vstar: 0.75 })}\n`);
    const reopened = VStarFileCache.open(path);
    expect(reopened.size).toBe(1);
    expect(reopened.get(entry(1))?.vstar).toBe(0.75);
    expect(reopened.get(entry(2))).toBeUndefined();
    reopened.close();
  });
});

describe("cache keys", () => {
  it("do not depend on the order of config keys, and differ in every field", () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: [3, { f: 4, e: 5 }] } })).toBe(
      '{"a":{"c":[3,{"e":5,"f":4}],"d":2},"b":1}',
    );
    const base = entry(1);
    const variants: Partial<VStarEntry>[] = [
      { tag: "BanditTest" },
      { envConfig: '{"x":1}' },
      { rollout: '{"maxTurns":2}' },
      { seed: 2 },
      { referenceModel: "n" },
      { samples: 3 },
      { beta1: 0 },
    ];
    for (const v of variants)
      expect(vstarKeyId({ ...base, ...v }), JSON.stringify(v)).not.toBe(vstarKeyId(base));
    expect(parseVStarEntry(JSON.parse(JSON.stringify(base)))).toEqual(base);
    expect(parseVStarEntry({ ...base, pass: "yes" })).toBeUndefined();
  });

  it("keep what an estimate cost, and still serve entries written before the count was kept", async () => {
    const counted = { ...entry(1), generatedTokens: 40 };
    expect(parseVStarEntry(JSON.parse(JSON.stringify(counted)))).toEqual(counted);
    for (const bad of [-1, 2.5, "40", null])
      expect(parseVStarEntry({ ...counted, generatedTokens: bad }), String(bad)).toBeUndefined();

    // A file written before the count: its estimates are reused and reported as uncounted.
    const path = join(root, "uncounted.jsonl");
    const first = VStarFileCache.open(path);
    await estimateVStarForStates(options(first, policy(), { resets: 1 }));
    first.close();
    const lines = readFileSync(path, "utf8").trim().split("\n");
    const withoutCounts = lines.map((line) => {
      const { generatedTokens, ...old } = JSON.parse(line);
      expect(generatedTokens).toBeGreaterThan(0);
      return JSON.stringify(old);
    });
    writeFileSync(path, `${withoutCounts.join("\n")}\n`);
    const reopened = VStarFileCache.open(path);
    const again = policy();
    const result = await estimateVStarForStates(options(reopened, again, { resets: 1 }));
    reopened.close();
    expect(again.prompts).toBe(0);
    expect(result.metrics["vstar/generated_tokens"]).toBe(0);
    expect(result.metrics["vstar/uncounted_states"]).toBe(2);
  });
});
