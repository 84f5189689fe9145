import { parseResponse } from "@ragen/rollout";
import { describe, expect, it } from "vitest";
import { generateSftConversations, sftCorpus } from "../src/sft-data.js";

const seeds = Array.from({ length: 200 }, (_, i) => i);

describe("SFT warm-start data", () => {
  it("writes RAGEN-format chats whose answers parse to the actions played", () => {
    const [chat] = generateSftConversations({ envTag: "FrozenLake", seeds: [3], oracleProbability: 0.5 });
    const roles = chat!.messages.map((m) => m.role);
    expect(roles[0]).toBe("system");
    expect(roles.slice(1).every((r, i) => r === (i % 2 === 0 ? "user" : "assistant"))).toBe(true);
    expect(chat!.messages[1]!.content).toContain("Turn 1:\nState:\n");
    for (const message of chat!.messages.filter((m) => m.role === "assistant")) {
      const parsed = parseResponse(message.content, {
        actions: ["Left", "Down", "Right", "Up"],
        maxActionsPerTurn: 1,
      });
      expect(parsed.formatOk).toBe(true);
      expect(parsed.actions).toHaveLength(1);
      expect(parsed.think.toLowerCase()).toContain(parsed.actions[0]!.toLowerCase());
    }
  });

  it("mixes oracle and random actions in the asked proportion, so the warm start is mediocre", () => {
    const chats = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 0.6 });
    const flags = chats.flatMap((c) => c.fromOracle);
    const share = flags.filter(Boolean).length / flags.length;
    expect(Math.abs(share - 0.6)).toBeLessThan(5 * Math.sqrt((0.6 * 0.4) / flags.length));
    const success = chats.filter((c) => c.success).length / chats.length;
    const oracleOnly = generateSftConversations({ envTag: "FrozenLake", seeds, oracleProbability: 1 });
    const oracleSuccess = oracleOnly.filter((c) => c.success).length / oracleOnly.length;
    expect(success).toBeLessThan(oracleSuccess);
  });

  it("covers Bandit with one pull per chat", () => {
    const chats = generateSftConversations({
      envTag: "Bandit",
      seeds: seeds.slice(0, 50),
      oracleProbability: 0.5,
    });
    expect(chats.every((c) => c.fromOracle.length === 1)).toBe(true);
    const last = chats[0]!.messages.at(-1)!;
    expect(last.role).toBe("assistant");
    expect(last.content).toMatch(/<answer>(Phoenix|Dragon)<\/answer>$/);
  });

  it("is deterministic and yields a training corpus", () => {
    const a = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    const b = generateSftConversations({ envTag: "FrozenLake", seeds: [1, 2], oracleProbability: 0.5 });
    expect(a).toEqual(b);
    expect(sftCorpus(a).length).toBe(a.reduce((n, c) => n + c.messages.length, 0));
  });
});
