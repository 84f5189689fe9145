import { EnvManager, type EnvTagGroups } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { MemoryVStarCache, stateKey } from "../src/cache.js";
import { estimateVStarForStates, type VStarEstimationOptions, vstarLookup } from "../src/stage1.js";
import { estimateVStar } from "../src/vstar.js";
import { ArmPolicy, banditTokenizer, trajectory } from "./fixtures.js";

const tokenizer = banditTokenizer();
const TAGS: EnvTagGroups[] = [
  { tag: "Bandit", nGroups: 2 },
  { tag: "BanditTest", nGroups: 1 },
];
const ENVS = { envGroups: 3, tags: TAGS };

/** Sample 0 of each state pulls the high arm ("Dragon" under Bandit), the rest the low one. */
const firstPullsHigh = () => new ArmPolicy(tokenizer, (p) => (p % 4 === 0 ? "Dragon" : "Phoenix"));

const options = (policy: ArmPolicy, extra: Partial<VStarEstimationOptions> = {}): VStarEstimationOptions => ({
  policy,
  tokenizer,
  envs: ENVS,
  resets: 2,
  referenceModel: "reference-a",
  samples: 4,
  rollout: { maxTurns: 1, maxNewTokens: 32 },
  ...extra,
});

describe("estimateVStarForStates", () => {
  it("covers exactly the start states the stage-2 manager visits, in order, N samples each", async () => {
    const policy = firstPullsHigh();
    const progress: [number, number][] = [];
    const estimates = await estimateVStarForStates(
      options(policy, { onProgress: (done, total) => progress.push([done, total]) }),
    );
    const stage2 = new EnvManager({ ...ENVS, groupSize: 1 });
    const visited: string[] = [];
    for (let reset = 0; reset < 2; reset++)
      visited.push(...(await stage2.reset("train")).map((slot) => stateKey(slot.tag, slot.seed)));
    expect([...estimates.entries.keys()]).toEqual(visited);
    expect(visited[0]).toBe("Bandit:10000");
    expect(visited.at(-1)).toBe("BanditTest:10005");
    expect(policy.prompts).toBe(2 * 3 * 4);
    expect(progress).toEqual([
      [0, 6],
      [3, 6],
      [6, 6],
    ]);
    for (const entry of estimates.entries.values()) {
      expect(entry.rewards).toHaveLength(4);
      expect(entry.vstar).toBeCloseTo(estimateVStar(entry.rewards, 0.5), 12);
    }
    // Under Bandit the first sample pulls the high arm and succeeds; BanditTest has other arm names.
    const bandit = estimates.entries.get("Bandit:10000")!;
    expect(bandit.pass).toBe(true);
    expect(bandit.rewards.slice(1)).toEqual([0.1, 0.1, 0.1]);
    expect(estimates.entries.get("BanditTest:10002")!.pass).toBe(false);
    expect(estimates.metrics).toMatchObject({
      "vstar/states": 6,
      "vstar/sampled_states": 6,
      "vstar/pass@4": 4 / 6,
      "vstar/Bandit/pass@4": 1,
      "vstar/BanditTest/pass@4": 0,
      "vstar/dropped_states": 0,
    });
    const lookup = vstarLookup(estimates);
    expect(
      lookup(
        trajectory({
          tag: "Bandit",
          seed: 10000,
          tokens: new Int32Array(2),
          lossMask: new Uint8Array(2),
          reward: 0,
        }),
      ),
    ).toBe(bandit.vstar);
    expect(
      lookup(
        trajectory({
          tag: "Bandit",
          seed: 99,
          tokens: new Int32Array(2),
          lossMask: new Uint8Array(2),
          reward: 0,
        }),
      ),
    ).toBeUndefined();
  });

  it("starts at a later reset for a resumed run", async () => {
    const estimates = await estimateVStarForStates(options(firstPullsHigh(), { startReset: 5, resets: 1 }));
    expect([...estimates.entries.keys()]).toEqual(["Bandit:10015", "Bandit:10016", "BanditTest:10017"]);
  });

  it("drops states where no sample scored above 0 only when asked", async () => {
    // Answers that name no arm are format penalties: every reward is -0.1.
    const nonsense = new ArmPolicy(tokenizer, () => "Nobody" as "Dragon");
    const kept = await estimateVStarForStates(options(nonsense, { resets: 1 }));
    expect(kept.entries.size).toBe(3);
    expect(kept.metrics["vstar/all_zero_fraction"]).toBe(1);
    expect([...kept.entries.values()][0]!.vstar).toBeCloseTo(-0.1, 6);
    const dropped = await estimateVStarForStates(options(nonsense, { resets: 1, dropAllZero: true }));
    expect(dropped.entries.size).toBe(0);
    expect([...dropped.dropped]).toEqual(["Bandit:10000", "Bandit:10001", "BanditTest:10002"]);
    expect(dropped.metrics["vstar/dropped_states"]).toBe(3);
  });

  it("samples nothing for cached states and re-estimates when the key changes", async () => {
    const cache = new MemoryVStarCache();
    const first = await estimateVStarForStates(options(firstPullsHigh(), { cache }));
    expect(cache.size).toBe(6);

    const again = firstPullsHigh();
    const second = await estimateVStarForStates(options(again, { cache }));
    expect(again.prompts).toBe(0);
    expect(second.metrics["vstar/sampled_states"]).toBe(0);
    // The reused estimates still carry what they cost; nothing was generated to get them.
    expect(first.metrics["vstar/generated_tokens"]).toBeGreaterThan(0);
    expect(first.metrics["vstar/sampled_tokens"]).toBe(first.metrics["vstar/generated_tokens"]);
    expect(second.metrics["vstar/generated_tokens"]).toBe(first.metrics["vstar/generated_tokens"]);
    expect(second.metrics["vstar/sampled_tokens"]).toBe(0);
    expect([...second.entries.values()]).toEqual([...first.entries.values()]);

    const changes: Partial<VStarEstimationOptions>[] = [
      { referenceModel: "reference-b" },
      { samples: 2 },
      { beta1: 0.25 },
      { envs: { envGroups: 3, tags: TAGS.map((t) => ({ ...t, config: { loArmReward: 0.2 } })) } },
      { rollout: { maxTurns: 1, maxNewTokens: 16 } },
    ];
    for (const change of changes) {
      const policy = firstPullsHigh();
      const result = await estimateVStarForStates(options(policy, { cache, ...change }));
      expect(result.metrics["vstar/sampled_states"], JSON.stringify(change)).toBe(6);
      expect(policy.prompts, JSON.stringify(change)).toBeGreaterThan(0);
    }
  });

  it("rolls out a reset again only when one of its states is missing, storing just the missing ones", async () => {
    const cache = new MemoryVStarCache();
    await estimateVStarForStates(options(firstPullsHigh(), { cache, resets: 1 }));
    const policy = firstPullsHigh();
    const result = await estimateVStarForStates(options(policy, { cache, resets: 2 }));
    // Reset 0 is cached; reset 1 is sampled once, its 3 states x 4 samples.
    expect(policy.prompts).toBe(12);
    expect(result.metrics["vstar/sampled_states"]).toBe(3);
    expect(cache.size).toBe(6);
    const entries = [...result.entries.values()];
    for (const entry of entries) expect(entry.generatedTokens).toBeGreaterThan(0);
    const cost = entries.reduce((sum, e) => sum + e.generatedTokens!, 0);
    expect(result.metrics["vstar/generated_tokens"]).toBe(cost);
    const reset1 = entries.slice(3).reduce((sum, e) => sum + e.generatedTokens!, 0);
    expect(result.metrics["vstar/sampled_tokens"]).toBe(reset1);
  });

  it("checks its counts and beta1 before sampling anything", async () => {
    const policy = firstPullsHigh();
    await expect(estimateVStarForStates(options(policy, { samples: 0 }))).rejects.toThrow(/samples/);
    await expect(estimateVStarForStates(options(policy, { beta1: -1 }))).rejects.toThrow(/beta1/);
    expect(policy.prompts).toBe(0);
  });
});
